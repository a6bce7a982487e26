package admin

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestMergeSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, settings, patch, want string
		invalid                     bool
	}{
		{name: "AddKey", settings: `{"a":1}`, patch: `{"api_base_url":"https://x.example.com/api"}`,
			want: `{"a":1,"api_base_url":"https://x.example.com/api"}`},
		{name: "ReplaceAndRemove", settings: `{"a":1,"b":2}`, patch: `{"a":3,"b":null}`, want: `{"a":3}`},
		{name: "EmptyStored", settings: ``, patch: `{"a":true}`, want: `{"a":true}`},
		{name: "NotAnObject", settings: `{}`, patch: `[1]`, invalid: true},
		{name: "NullPatch", settings: `{}`, patch: `null`, invalid: true},
		{name: "RelativeBase", settings: `{}`, patch: `{"api_base_url":"/api"}`, invalid: true},
		{name: "BaseNotString", settings: `{}`, patch: `{"api_base_url":1}`, invalid: true},
		{name: "FtpBase", settings: `{}`, patch: `{"api_base_url":"ftp://x.example.com"}`, invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergeSettings(json.RawMessage(tc.settings), json.RawMessage(tc.patch))
			if tc.invalid {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("want ErrInvalid, got %v (%s)", err, got)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestOptionalJSON(t *testing.T) {
	t.Parallel()
	var u AccountUpdate
	if err := json.Unmarshal([]byte(`{"rate_limit_per_sec":null,"max_attempts":3}`), &u); err != nil {
		t.Fatal(err)
	}
	if !u.RateLimitPerSec.Set || u.RateLimitPerSec.Value != nil {
		t.Fatalf("null: set to the default, got %+v", u.RateLimitPerSec)
	}
	if !u.MaxAttempts.Set || *u.MaxAttempts.Value != 3 {
		t.Fatalf("3: got %+v", u.MaxAttempts)
	}
	if u.RateLimitBurst.Set || u.DisplayName.Set {
		t.Fatal("absent fields are not set")
	}
	if err := u.validate(); err != nil {
		t.Fatal(err)
	}
	u.MaxAttempts.Value = new(int32)
	if err := u.validate(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("max_attempts 0: want ErrInvalid, got %v", err)
	}
}
