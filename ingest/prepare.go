package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// maxSourceIDLen bounds ids stored in indexed columns.
const maxSourceIDLen = 512

// Prepare turns an adapter's parsed result into the rows of one Request:
// it assigns MIO ids, sets tenant, account and receive time, decides each
// message's state (received while attachments are pending), and makes
// every string storable (PostgreSQL text and jsonb refuse NUL and invalid
// UTF-8, which a signed body can carry).
func Prepare(acct *accounts.Account, parsed *channels.Parsed, raw []byte, now time.Time) *Request {
	req := &Request{TenantID: acct.TenantID}
	for i := range parsed.Messages {
		m := parsed.Messages[i]
		m.ID = uuid.Must(uuid.NewV7())
		m.TenantID, m.AccountID, m.ChannelType = acct.TenantID, acct.ID, acct.ChannelType
		m.ReceivedAt = now.UTC()
		m.Raw = nil
		state := db.InboxReady
		for j := range m.Attachments {
			m.Attachments[j].ID = uuid.NewString()
			if m.Attachments[j].Status == "" {
				m.Attachments[j].Status = envelope.AttachmentPending
			}
			if m.Attachments[j].Status == envelope.AttachmentPending {
				state = db.InboxReceived
			}
		}
		if m.Attachments == nil {
			m.Attachments = []envelope.Attachment{}
		}
		sanitize(&m)
		m.SourceMessageID = boundID(m.SourceMessageID)
		m.Conversation.ID = boundID(m.Conversation.ID)
		// Edits name their original by platform id; originals are
		// recorded under theirs. Over-long ids are never linked.
		platformID, editOf := "", ""
		if !m.Edited && !m.Deleted && len(m.PlatformMessageID) <= maxSourceIDLen {
			platformID = clean(m.PlatformMessageID)
		}
		if m.EditOf != nil {
			m.EditOf.SourceMessageID, m.EditOf.PlatformMessageID = clean(m.EditOf.SourceMessageID), clean(m.EditOf.PlatformMessageID)
			if len(m.EditOf.PlatformMessageID) <= maxSourceIDLen {
				editOf = m.EditOf.PlatformMessageID
			}
		}
		buf := make([]byte, 0, 512+len(m.Text)+len(m.Text)/8)
		env, err := m.AppendJSON(buf)
		if err != nil {
			// Only unrepresentable times can fail; drop them rather than the
			// message.
			m.SentAt = time.Time{}
			env, _ = m.AppendJSON(buf[:0])
		}
		req.Messages = append(req.Messages, db.InboxRow{
			ID: m.ID, AccountID: acct.ID, ChannelType: acct.ChannelType,
			SourceMessageID: m.SourceMessageID, ConversationID: m.Conversation.ID,
			State: state, Envelope: env, Raw: raw, ReceivedAt: m.ReceivedAt,
			PlatformMessageID: platformID, EditOfPlatformID: editOf,
		})
	}
	for _, st := range parsed.Statuses {
		ev := db.ProviderEvent{
			AccountID: acct.ID, ProviderMessageID: clean(st.ProviderMessageID), Status: clean(st.Status),
			RecipientID: clean(st.RecipientID), Error: clean(st.Error),
		}
		if !st.Timestamp.IsZero() {
			ts := st.Timestamp
			ev.OccurredAt = &ts
		}
		if len(st.Raw) > 0 && json.Valid(st.Raw) && !strings.Contains(string(st.Raw), `\u0000`) {
			ev.Raw = st.Raw
		}
		req.Statuses = append(req.Statuses, ev)
	}
	return req
}

// boundID keeps an id indexable (btree rows are limited to ~2.7 kB): a
// long one is replaced by its digest.
func boundID(id string) string {
	if len(id) <= maxSourceIDLen {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// clean makes s storable in a text column.
func clean(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}

func sanitize(m *envelope.Message) {
	for _, p := range []*string{&m.SourceMessageID, &m.Conversation.ID, &m.Conversation.Type, &m.Conversation.Title,
		&m.ThreadID, &m.ReplyToSourceID, &m.Sender.ID, &m.Sender.DisplayName, &m.Text, &m.TraceID} {
		*p = clean(*p)
	}
	for i := range m.Attachments {
		a := &m.Attachments[i]
		for _, p := range []*string{&a.Kind, &a.Name, &a.MimeType, &a.Error} {
			*p = clean(*p)
		}
		if a.Source != nil {
			a.Source.URL, a.Source.Ref = clean(a.Source.URL), clean(a.Source.Ref)
		}
	}
}
