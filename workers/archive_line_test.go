package workers

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// archiveLineV1 is archiveLine as encoding/json renders it: the reference
// the faster engine must match byte for byte.
func archiveLineV1(r *db.ArchiveRow) ([]byte, error) {
	var m envelope.Message
	if err := json.Unmarshal(r.Envelope, &m); err != nil {
		return nil, err
	}
	if len(r.Raw) > 0 && json.Valid(r.Raw) {
		m.Raw = json.RawMessage(r.Raw)
	}
	m.SentAt = m.SentAt.UTC().Truncate(time.Microsecond)
	m.ReceivedAt = m.ReceivedAt.UTC().Truncate(time.Microsecond)
	if m.Attachments == nil {
		m.Attachments = []envelope.Attachment{}
	}
	return json.Marshal(&m)
}

// FuzzArchiveLineLikeEncodingJSON: for any stored envelope and raw body,
// archiveLine refuses what encoding/json refuses and otherwise writes the
// same bytes.
func FuzzArchiveLineLikeEncodingJSON(f *testing.F) {
	stored := `{"id": "01a218fc-39d9-71c1-96c9-1a5e5f8c52d3", "text": "lorem <b>ipsum</b> & \u2028 é 😀", "edited": false, ` +
		`"sender": {"id": "U26", "is_bot": false, "display_name": "Ann \"A\""}, "deleted": false, "sent_at": "2026-11-26T17:51:52.000026Z", ` +
		`"tenant_id": "58db39dd-dc09-4fa0-b585-5522b2809b75", "account_id": "428f3027-55af-46d5-aa18-0d1f3bdad88b", "attachments": [], ` +
		`"received_at": "2026-11-26T19:51:52.784895565+02:00", "channel_type": "slack", "conversation": {"id": "C26", "type": "channel"}, ` +
		`"source_message_id": "Ev26", "edit_of": {"id": "01a218fc-39d9-71c1-96c9-1a5e5f8c52d4", "source_message_id": "1.2", "platform_message_id": "1.2"}}`
	withFiles := `{"id": "01a218fc-39d9-71c1-96c9-1a5e5f8c52d3", "text": "", "sender": {"id": "u"}, "conversation": {"id": "c", "type": "dm", "title": "t"},` +
		`"attachments": [{"id": "a1", "kind": "image", "name": "x.png", "status": "stored", "size": 12, "meta": {"w": "1"}}], "thread_id": "th", "trace_id": "tr"}`
	for _, seed := range []struct{ env, raw string }{
		{stored, `{"token":"t","event":{"text":"<a & b>"} , "n": 1.50, "dup": 1, "dup": 2}`},
		{stored, "{\n  \"update_id\": 1\n}"},
		{stored, `not json`},
		{stored, ""},
		{stored, "\"\xff\xfe\""},
		{withFiles, `[1, 2, {"a": null}]`},
		{`{"attachments": null, "text": "\ud800"}`, `null`},
		{`{}`, `{}`},
		{`null`, `1e400`},
		{`{"ID": "01a218fc-39d9-71c1-96c9-1a5e5f8c52d3", "Text": "case", "SENT_AT": "2026-01-02T03:04:05Z"}`, ``},
		{`{"sent_at": "2026-01-02T03:04:05.123456789-07:00", "received_at": "0001-01-01T00:00:00Z"}`, `"\u2029"`},
		{`[]`, ``},
		{`{"id": "not a uuid"}`, ``},
	} {
		f.Add([]byte(seed.env), []byte(seed.raw))
	}
	f.Fuzz(func(t *testing.T, env, raw []byte) {
		r := &db.ArchiveRow{Envelope: env, Raw: raw}
		want, wantErr := archiveLineV1(r)
		got, gotErr := archiveLine(r)
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("encoding/json error %v, archiveLine error %v\nenvelope %q\nraw %q", wantErr, gotErr, env, raw)
		}
		if wantErr == nil && string(got) != string(want) {
			t.Fatalf("lines differ\nencoding/json %s\narchiveLine   %s\nenvelope %q\nraw %q", want, got, env, raw)
		}
	})
}
