package channels

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeObject(t *testing.T) {
	t.Parallel()
	type creds struct {
		Token string `json:"token"`
	}
	tests := []struct {
		name    string
		raw     string
		want    creds
		wantErr bool
	}{
		{name: "absent"},
		{name: "blank", raw: " \n"},
		{name: "null", raw: " null "},
		{name: "empty object", raw: "{}"},
		{name: "object", raw: ` {"token":"t","other":1}`, want: creds{Token: "t"}},
		{name: "array", raw: "[1]", wantErr: true},
		{name: "string", raw: `"x"`, wantErr: true},
		{name: "number", raw: "1", wantErr: true},
		{name: "truncated", raw: `{"token":`, wantErr: true},
		{name: "wrong field type", raw: `{"token":42}`, wantErr: true},
		{name: "trailing data", raw: `{} {}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got creds
			err := DecodeObject("test credentials", json.RawMessage(tt.raw), &got)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrInvalidConfig)
				require.ErrorContains(t, err, "test credentials")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestHasSpaceOrControl(t *testing.T) {
	t.Parallel()
	require.False(t, HasSpaceOrControl(""))
	require.False(t, HasSpaceOrControl("xoxb-1-2-abc_DEF.ghi/+="))
	for _, s := range []string{"a b", "a\nb", "\tab", "ab\x00", "ab\x7f"} {
		require.True(t, HasSpaceOrControl(s), "%q", s)
	}
}

func TestIsHTTPURL(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"https://cliq.zoho.eu", "http://127.0.0.1:8080/hooks?x=1"} {
		require.True(t, IsHTTPURL(s), s)
	}
	for _, s := range []string{"", "/relative", "cliq.zoho.eu", "ftp://h/x", "file:///etc/passwd", "https://", "https://%zz"} {
		require.False(t, IsHTTPURL(s), s)
	}
}
