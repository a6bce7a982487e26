package outbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// A reaction (POST /v1/reactions) is an outbox row like a message: it
// rides the same idempotency keys, lanes (ordering per conversation),
// rate limits, retries, dead letters and status reads. Its row has no
// text and keeps the reaction in its rich_content column as
// {"reaction": {"message_id", "emoji", "remove"}}, a shape a message's
// rich content cannot take (decodeRich refuses unknown fields), so the
// dispatcher tells the two apart by the row alone (ReactionOf) and every
// claim path carries reactions without a column of their own.

// Limits of a ReactionCommand.
const (
	maxReactionMessageID = 512
	maxEmojiBytes        = 128
)

// storedReaction is a reaction row's rich_content.
type storedReaction struct {
	Reaction *envelope.ReactionSend `json:"reaction"`
}

// ReactionOf returns the reaction a row's rich_content holds, nil for a
// message.
func ReactionOf(richContent []byte) *envelope.ReactionSend {
	if !bytes.Contains(richContent, []byte(`"reaction"`)) {
		return nil
	}
	var s storedReaction
	if json.Unmarshal(richContent, &s) != nil {
		return nil
	}
	return s.Reaction
}

// React checks cmd and writes its outbox row, event and dispatch job in
// one transaction of the tenant, as Send does (group commit included).
// Without an idempotency key each call is a new reaction. Errors are
// Send's.
func (s *Service) React(ctx context.Context, tenantID uuid.UUID, cmd *envelope.ReactionCommand) (*Sent, error) {
	c, err := newReactionCommand(cmd)
	if err == nil && s.river == nil {
		err = ErrNotConfigured
	}
	if err != nil {
		return nil, err
	}
	if s.group != nil {
		return s.group.Do(ctx, sendRequest{tenantID: tenantID, cmd: c})
	}
	var sent *Sent
	err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		sent, err = s.sendOne(ctx, tx, tenantID, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sent, nil
}

// newReactionCommand checks what needs no database and builds the
// command whose row holds the reaction.
func newReactionCommand(r *envelope.ReactionCommand) (*command, error) {
	key := r.IdempotencyKey
	switch {
	case len(key) > maxIdempotencyKey:
		return nil, invalid("idempotency_key", "idempotency_key is longer than %d bytes", maxIdempotencyKey)
	case r.AccountID == uuid.Nil:
		return nil, invalid("account_id", "account_id is required")
	case strings.TrimSpace(r.ConversationID) == "":
		return nil, invalid("conversation_id", "conversation_id is required")
	case len(r.ConversationID) > maxConversationID:
		return nil, invalid("conversation_id", "conversation_id is at most %d bytes", maxConversationID)
	case strings.TrimSpace(r.MessageID) == "":
		return nil, invalid("message_id", "message_id (the platform message to react to) is required")
	case len(r.MessageID) > maxReactionMessageID:
		return nil, invalid("message_id", "message_id is at most %d bytes", maxReactionMessageID)
	case strings.TrimSpace(r.Emoji) == "":
		return nil, invalid("emoji", "emoji is required")
	case len(r.Emoji) > maxEmojiBytes || !utf8.ValidString(r.Emoji):
		return nil, invalid("emoji", "emoji is at most %d bytes of UTF-8", maxEmojiBytes)
	}
	for _, f := range []struct{ name, value string }{
		{"idempotency_key", key}, {"conversation_id", r.ConversationID}, {"message_id", r.MessageID}, {"emoji", r.Emoji},
	} {
		if strings.ContainsFunc(f.value, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return nil, invalid(f.name, "%s may not contain control characters", f.name)
		}
	}
	if strings.TrimSpace(key) == "" {
		key = "reaction:" + uuid.NewString()
	}
	rich, _ := json.Marshal(storedReaction{Reaction: &envelope.ReactionSend{MessageID: r.MessageID, Emoji: r.Emoji, Remove: r.Remove}})
	canon := *r
	canon.IdempotencyKey = key
	b, _ := json.Marshal(canon)
	sum := sha256.Sum256(append([]byte("reaction\n"), b...))
	return &command{
		SendCommand: &envelope.SendCommand{IdempotencyKey: key, AccountID: r.AccountID, ConversationID: r.ConversationID, RichContent: rich},
		reaction:    true,
		hash:        sum[:],
	}, nil
}
