package envelope

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// AppendJSON appends m encoded as encoding/json's Marshal encodes it, byte
// for byte, without reflection: every inbound message is encoded once on
// the webhook's hot path, where Marshal costs 6 % of the server's CPU in
// `mio-bench ingest`. TestAppendJSONMatchesMarshal fills every field (by
// reflection, so a field added to a type and not here fails it) and
// FuzzAppendJSON holds the string escaping to Marshal's. The error is
// Marshal's: a time outside RFC 3339 (year beyond 0–9999), or an invalid
// Raw.
func (m *Message) AppendJSON(dst []byte) ([]byte, error) {
	if len(m.Raw) > 0 {
		// Raw is compacted and re-escaped by Marshal; it is nil on the
		// hot path (stored apart from the envelope).
		b, err := json.Marshal(m)
		if err != nil {
			return dst, err
		}
		return append(dst, b...), nil
	}
	var err error
	dst = append(dst, `{"id":`...)
	dst = appendUUID(dst, m.ID)
	dst = append(dst, `,"tenant_id":`...)
	dst = appendUUID(dst, m.TenantID)
	dst = append(dst, `,"account_id":`...)
	dst = appendUUID(dst, m.AccountID)
	dst = append(dst, `,"channel_type":`...)
	dst = appendString(dst, m.ChannelType)
	if m.Kind != "" {
		dst = append(dst, `,"kind":`...)
		dst = appendString(dst, m.Kind)
	}
	// Interactions and reactions are rare and small: Marshal encodes them.
	if m.Interaction != nil {
		b, err := json.Marshal(m.Interaction)
		if err != nil {
			return dst, err
		}
		dst = append(append(dst, `,"interaction":`...), b...)
	}
	if m.Reaction != nil {
		b, err := json.Marshal(m.Reaction)
		if err != nil {
			return dst, err
		}
		dst = append(append(dst, `,"reaction":`...), b...)
	}
	dst = append(dst, `,"source_message_id":`...)
	dst = appendString(dst, m.SourceMessageID)
	dst = append(dst, `,"conversation":{"id":`...)
	dst = appendString(dst, m.Conversation.ID)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, m.Conversation.Type)
	if m.Conversation.Title != "" {
		dst = append(dst, `,"title":`...)
		dst = appendString(dst, m.Conversation.Title)
	}
	dst = append(dst, '}')
	if m.ThreadID != "" {
		dst = append(dst, `,"thread_id":`...)
		dst = appendString(dst, m.ThreadID)
	}
	if m.ReplyToSourceID != "" {
		dst = append(dst, `,"reply_to_source_id":`...)
		dst = appendString(dst, m.ReplyToSourceID)
	}
	dst = append(dst, `,"sender":{"id":`...)
	dst = appendString(dst, m.Sender.ID)
	if m.Sender.DisplayName != "" {
		dst = append(dst, `,"display_name":`...)
		dst = appendString(dst, m.Sender.DisplayName)
	}
	dst = append(dst, `,"is_bot":`...)
	dst = strconv.AppendBool(dst, m.Sender.IsBot)
	dst = append(dst, `},"text":`...)
	dst = appendString(dst, m.Text)
	dst = append(dst, `,"attachments":`...)
	if m.Attachments == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range m.Attachments {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = m.Attachments[i].appendJSON(dst)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"edited":`...)
	dst = strconv.AppendBool(dst, m.Edited)
	dst = append(dst, `,"deleted":`...)
	dst = strconv.AppendBool(dst, m.Deleted)
	if e := m.EditOf; e != nil {
		dst = append(dst, `,"edit_of":{`...)
		if e.ID != nil {
			dst = append(dst, `"id":`...)
			dst = appendUUID(dst, *e.ID)
			dst = append(dst, ',')
		}
		dst = append(dst, `"source_message_id":`...)
		dst = appendString(dst, e.SourceMessageID)
		dst = append(dst, `,"platform_message_id":`...)
		dst = appendString(dst, e.PlatformMessageID)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"sent_at":`...)
	if dst, err = appendTime(dst, m.SentAt); err != nil {
		return dst, err
	}
	dst = append(dst, `,"received_at":`...)
	if dst, err = appendTime(dst, m.ReceivedAt); err != nil {
		return dst, err
	}
	if m.TraceID != "" {
		dst = append(dst, `,"trace_id":`...)
		dst = appendString(dst, m.TraceID)
	}
	return append(dst, '}'), nil
}

func (a *Attachment) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, a.ID)
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, a.Kind)
	if a.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, a.Name)
	}
	if a.MimeType != "" {
		dst = append(dst, `,"mime_type":`...)
		dst = appendString(dst, a.MimeType)
	}
	if a.Size != 0 {
		dst = append(dst, `,"size":`...)
		dst = strconv.AppendInt(dst, a.Size, 10)
	}
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, a.Status)
	if a.StorageKey != "" {
		dst = append(dst, `,"storage_key":`...)
		dst = appendString(dst, a.StorageKey)
	}
	if a.ContentSHA256 != "" {
		dst = append(dst, `,"content_sha256":`...)
		dst = appendString(dst, a.ContentSHA256)
	}
	if a.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendString(dst, a.Error)
	}
	if s := a.Source; s != nil {
		dst = append(dst, `,"source":{`...)
		comma := false
		if s.URL != "" {
			dst = append(dst, `"url":`...)
			dst = appendString(dst, s.URL)
			comma = true
		}
		if s.Ref != "" {
			if comma {
				dst = append(dst, ',')
			}
			dst = append(dst, `"ref":`...)
			dst = appendString(dst, s.Ref)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendUUID appends id as a JSON string (its MarshalText form:
// lowercase hex, 8-4-4-4-12).
func appendUUID(dst []byte, id uuid.UUID) []byte {
	dst = append(dst, '"')
	for i, b := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0xF])
	}
	return append(dst, '"')
}

// appendTime appends t as Time.MarshalJSON does (RFC 3339 with
// sub-second precision, an error outside it).
func appendTime(dst []byte, t time.Time) ([]byte, error) {
	dst = append(dst, '"')
	out, err := t.AppendText(dst)
	if err != nil {
		return dst, err
	}
	return append(out, '"'), nil
}

const hexDigits = "0123456789abcdef"

// plainASCII[b] is '1' where the ASCII byte b stands for itself in a
// JSON string as encoding/json writes it (HTML escaping on): not a
// control character, ", \, <, > or &.
const plainASCII = "00000000000000000000000000000000110111011111111111111111111101011111111111111111111111111111011111111111111111111111111111111111"

// appendString appends s quoted as encoding/json quotes a string (with
// its default HTML escaping): ", \ and control characters escaped (\b,
// \f, \n, \r, \t short), <, > and & as \u003c, \u003e and \u0026,
// invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if plainASCII[b] == '1' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
