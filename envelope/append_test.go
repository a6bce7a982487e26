package envelope

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// fill sets every field reachable from v (a settable value) to a non-zero
// value derived from s: strings, bools, integers, times, UUIDs, pointers
// and slices (two elements). json.RawMessage is left alone (Raw has its
// own case). A field of a kind fill does not know fails the test, so a new
// field of a new kind is noticed.
func fill(t *testing.T, v reflect.Value, s string) {
	t.Helper()
	switch {
	case v.Type() == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(time.Date(2026, 11, 28, 1, 2, 3, 456789000, time.UTC)))
		return
	case v.Type() == reflect.TypeOf(uuid.UUID{}):
		v.Set(reflect.ValueOf(uuid.MustParse("0190f5c4-7d3a-7b1e-9f00-aabbccddeeff")))
		return
	case v.Type() == reflect.TypeOf(json.RawMessage{}):
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(1234567)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), s)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(t, v.Index(i), s)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), s+v.Type().Field(i).Name)
			}
		}
	default:
		t.Fatalf("fill: a field of kind %s (%s): teach fill and AppendJSON about it", v.Kind(), v.Type())
	}
}

func requireSameAsMarshal(t *testing.T, m *Message) {
	t.Helper()
	want, wantErr := json.Marshal(m)
	got, gotErr := m.AppendJSON([]byte("prefix"))
	if wantErr != nil {
		require.Error(t, gotErr, "Marshal failed (%v), AppendJSON did not", wantErr)
		return
	}
	require.NoError(t, gotErr)
	require.Equal(t, "prefix"+string(want), string(got))
}

// TestAppendJSONMatchesMarshal: AppendJSON's output is encoding/json's,
// byte for byte: with every field set (by reflection), with each
// omitempty field empty in turn, for the zero message, with Raw, and on
// the errors (times beyond RFC 3339).
func TestAppendJSONMatchesMarshal(t *testing.T) {
	full := &Message{}
	fill(t, reflect.ValueOf(full).Elem(), `x<>&"\é`+"\u2028\x01\n")
	requireSameAsMarshal(t, full)
	requireSameAsMarshal(t, &Message{})

	// Each field emptied in turn, recursively: every omitempty decision.
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !v.Type().Field(i).IsExported() {
				continue
			}
			saved := reflect.New(f.Type()).Elem()
			saved.Set(f)
			f.Set(reflect.Zero(f.Type()))
			t.Run(path+v.Type().Field(i).Name, func(t *testing.T) { requireSameAsMarshal(t, full) })
			f.Set(saved)
			switch {
			case f.Kind() == reflect.Struct && f.Type() != reflect.TypeOf(time.Time{}):
				walk(f, path+v.Type().Field(i).Name+".")
			case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.Struct:
				walk(f.Elem(), path+v.Type().Field(i).Name+".")
			case f.Kind() == reflect.Slice && f.Len() > 0 && f.Index(0).Kind() == reflect.Struct:
				walk(f.Index(0), path+v.Type().Field(i).Name+"[0].")
			}
		}
	}
	walk(reflect.ValueOf(full).Elem(), "")

	withEmptyAttachments := *full
	withEmptyAttachments.Attachments = []Attachment{}
	requireSameAsMarshal(t, &withEmptyAttachments)

	withRaw := *full
	withRaw.Raw = json.RawMessage(` {"a": "<b>", "n": [1, 2]} `)
	requireSameAsMarshal(t, &withRaw)

	for _, year := range []int{-1, 10000} {
		bad := *full
		bad.SentAt = time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
		requireSameAsMarshal(t, &bad)
		bad = *full
		bad.ReceivedAt = time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
		requireSameAsMarshal(t, &bad)
	}
	zoned := *full
	zoned.SentAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", 5*3600+1800))
	requireSameAsMarshal(t, &zoned)
}

// FuzzAppendJSON: for any strings (invalid UTF-8, control characters,
// HTML, U+2028) and flags, AppendJSON writes what Marshal writes.
func FuzzAppendJSON(f *testing.F) {
	f.Add("hello", "C1", "U1", "a.png", int64(0), true, false)
	f.Add("<script>&\"\\\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "", int64(-5), false, true)
	f.Add("é漢字🙂\b\f\t\r\n", "", "bot\xc3", "n\xe2\x80", int64(1<<40), true, true)
	f.Fuzz(func(t *testing.T, text, conv, sender, name string, size int64, edited, withAtt bool) {
		m := &Message{
			ID: uuid.New(), ChannelType: "slack", SourceMessageID: conv + text[:min(len(text), 3)],
			Conversation: Conversation{ID: conv, Type: "channel", Title: name},
			Sender:       Sender{ID: sender, DisplayName: name, IsBot: edited},
			Text:         text, Edited: edited, ThreadID: name, TraceID: sender,
			SentAt:     time.Unix(size%(1<<33), size%1e9).UTC(),
			ReceivedAt: time.Unix(0, size).UTC(),
		}
		if withAtt {
			m.Attachments = []Attachment{{ID: name, Kind: text, Name: name, Size: size, Status: conv,
				Source: &AttachmentSource{URL: text, Ref: name}}}
			m.EditOf = NewEditRef(conv)
		}
		requireSameAsMarshal(t, m)
	})
}

func benchMessage() *Message {
	text := "lorem ipsum dolor sit amet, consectetur adipiscing elit " // ~700 bytes, as mio-bench ingest
	for len(text) < 700 {
		text += text
	}
	return &Message{ID: uuid.New(), TenantID: uuid.New(), AccountID: uuid.New(), ChannelType: "slack",
		SourceMessageID: "Ev123456", Conversation: Conversation{ID: "C42", Type: "channel"},
		Sender: Sender{ID: "U17"}, Text: text[:700], Attachments: []Attachment{},
		SentAt: time.Now().UTC(), ReceivedAt: time.Now().UTC()}
}

func BenchmarkAppendJSON(b *testing.B) {
	m := benchMessage()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.AppendJSON(make([]byte, 0, 1024+len(m.Text))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshal(b *testing.B) {
	m := benchMessage()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}
