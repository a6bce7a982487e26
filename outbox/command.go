package outbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
)

// Limits of a SendCommand.
const (
	maxIdempotencyKey = 255
	maxConversationID = 512
	maxTextBytes      = 64 << 10
	maxAttachments    = 10
	maxURLLength      = 2048
	maxRichBlocks     = 50
	maxRichButtons    = 25
	maxActionID       = 255
	maxRichSelects    = 5
	maxSelectOptions  = 25
	maxSelectText     = 100
	maxOptionLabel    = 75
)

// ValidationError is a SendCommand that cannot be sent; nothing was
// written. Its text is safe to show the caller.
type ValidationError struct {
	// Field is the offending field as the JSON names it
	// ("rich_content.blocks[2].type"); "" for the command as a whole.
	Field string
	// Reason says what is wrong, naming the field.
	Reason string
	// Err is the cause callers may branch on (ErrAccountNotFound,
	// ErrAccountDisabled), nil for a malformed command.
	Err error
}

func (e *ValidationError) Error() string { return "invalid send command: " + e.Reason }

// Unwrap returns Err.
func (e *ValidationError) Unwrap() error { return e.Err }

func invalid(field, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// command is a SendCommand that passed the checks needing no database,
// with its strictly decoded rich content (nil when absent) and its
// request hash.
type command struct {
	*envelope.SendCommand
	rich *envelope.RichContent
	// reaction: RichContent is a reaction's stored form (reaction.go).
	reaction bool
	hash     []byte
}

// newCommand checks what needs no database.
func newCommand(c *envelope.SendCommand) (*command, error) {
	switch {
	case strings.TrimSpace(c.IdempotencyKey) == "":
		return nil, invalid("idempotency_key", "idempotency_key is required")
	case len(c.IdempotencyKey) > maxIdempotencyKey:
		return nil, invalid("idempotency_key", "idempotency_key is longer than %d bytes", maxIdempotencyKey)
	case c.AccountID == uuid.Nil:
		return nil, invalid("account_id", "account_id is required")
	case strings.TrimSpace(c.ConversationID) == "":
		return nil, invalid("conversation_id", "conversation_id is required")
	case len(c.ConversationID) > maxConversationID:
		return nil, invalid("conversation_id", "conversation_id and thread_id are at most %d bytes", maxConversationID)
	case len(c.ThreadID) > maxConversationID:
		return nil, invalid("thread_id", "conversation_id and thread_id are at most %d bytes", maxConversationID)
	case len(c.Text) > maxTextBytes:
		return nil, invalid("text", "text is longer than %d bytes", maxTextBytes)
	case !utf8.ValidString(c.Text):
		return nil, invalid("text", "text is not valid UTF-8")
	case len(c.Attachments) > maxAttachments:
		return nil, invalid("attachments", "at most %d attachments", maxAttachments)
	}
	for _, f := range []struct{ name, value string }{
		{"idempotency_key", c.IdempotencyKey}, {"conversation_id", c.ConversationID}, {"thread_id", c.ThreadID},
	} {
		if strings.ContainsFunc(f.value, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return nil, invalid(f.name, "idempotency_key, conversation_id and thread_id may not contain control characters")
		}
	}
	for i, a := range c.Attachments {
		if !httpURL(a.URL) || len(a.URL) > maxURLLength {
			return nil, invalid(fmt.Sprintf("attachments[%d].url", i),
				"attachments[%d].url must be an absolute http(s) URL of at most %d bytes", i, maxURLLength)
		}
	}
	rich, err := decodeRich(c.RichContent)
	if err != nil {
		return nil, err
	}
	if c.Stream {
		switch {
		case c.EditOf != nil:
			return nil, invalid("edit_of", "a stream cannot be an edit: edit_of and stream exclude each other")
		case len(c.Attachments) > 0:
			return nil, invalid("attachments", "a stream carries text: attachments and stream exclude each other")
		case rich != nil:
			return nil, invalid("rich_content", "a stream's rich_content is given when it is finished")
		}
		return &command{SendCommand: c, hash: requestHash(c, nil)}, nil
	}
	if strings.TrimSpace(c.Text) == "" && rich == nil && len(c.Attachments) == 0 {
		return nil, invalid("", "a message needs text, rich_content or attachments")
	}
	return &command{SendCommand: c, rich: rich, hash: requestHash(c, rich)}, nil
}

// decodeRich decodes rich content strictly (unknown fields refused) and
// checks it; nil when absent.
func decodeRich(raw json.RawMessage) (*envelope.RichContent, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	rc := &envelope.RichContent{}
	if err := dec.Decode(rc); err != nil {
		return nil, invalid("rich_content", "rich_content: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if len(rc.Blocks) > maxRichBlocks || len(rc.Buttons) > maxRichButtons {
		return nil, invalid("rich_content", "rich_content has at most %d blocks and %d buttons", maxRichBlocks, maxRichButtons)
	}
	for i, b := range rc.Blocks {
		switch b.Type {
		case envelope.BlockText, envelope.BlockList, envelope.BlockTable, envelope.BlockLabel:
		case envelope.BlockImage:
			if !httpURL(b.URL) {
				return nil, invalid(fmt.Sprintf("rich_content.blocks[%d].url", i),
					"rich_content.blocks[%d]: an image needs an absolute http(s) url", i)
			}
		default:
			return nil, invalid(fmt.Sprintf("rich_content.blocks[%d].type", i),
				"rich_content.blocks[%d].type %q: want text, list, table, label or image", i, b.Type)
		}
	}
	for i, b := range rc.Buttons {
		if err := checkButton(i, b); err != nil {
			return nil, err
		}
	}
	if len(rc.Selects) > maxRichSelects {
		return nil, invalid("rich_content.selects", "rich_content has at most %d selects", maxRichSelects)
	}
	for i, s := range rc.Selects {
		if err := checkSelect(i, s); err != nil {
			return nil, err
		}
	}
	return rc, nil
}

// checkSelect checks select i: a known type, an action id as a button's
// (checkActionID), a placeholder and 1 to maxSelectOptions options with a
// label and a distinct value each, within the limits every platform's
// menu takes (Discord's 100 characters for a label or value, Slack's 75
// for an option's text).
func checkSelect(i int, s envelope.RichSelect) error {
	field := func(name string) string { return fmt.Sprintf("rich_content.selects[%d].%s", i, name) }
	switch {
	case s.Type != "" && s.Type != "select":
		return invalid(field("type"), "rich_content.selects[%d].type %q: want select", i, s.Type)
	case strings.TrimSpace(s.ActionID) == "":
		return invalid(field("action_id"), "rich_content.selects[%d].action_id is required", i)
	case utf8.RuneCountInString(s.Placeholder) > maxSelectText:
		return invalid(field("placeholder"), "rich_content.selects[%d].placeholder is longer than %d characters", i, maxSelectText)
	case len(s.Options) == 0 || len(s.Options) > maxSelectOptions:
		return invalid(field("options"), "rich_content.selects[%d] needs 1 to %d options", i, maxSelectOptions)
	}
	if err := checkActionID(field("action_id"), s.ActionID); err != nil {
		return err
	}
	seen := make(map[string]bool, len(s.Options))
	for j, o := range s.Options {
		opt := func(name string) string { return fmt.Sprintf("rich_content.selects[%d].options[%d].%s", i, j, name) }
		switch {
		case strings.TrimSpace(o.Label) == "":
			return invalid(opt("label"), "%s is required", opt("label"))
		case utf8.RuneCountInString(o.Label) > maxOptionLabel:
			return invalid(opt("label"), "%s is longer than %d characters", opt("label"), maxOptionLabel)
		case o.Value == "":
			return invalid(opt("value"), "%s is required", opt("value"))
		case utf8.RuneCountInString(o.Value) > maxSelectText:
			return invalid(opt("value"), "%s is longer than %d characters", opt("value"), maxSelectText)
		case seen[o.Value]:
			return invalid(opt("value"), "%s %q repeats an earlier option's value", opt("value"), o.Value)
		}
		seen[o.Value] = true
	}
	return nil
}

// checkActionID checks an action id that travels in a platform's
// callback string (envelope.RichButton.CallbackData).
func checkActionID(field, id string) error {
	switch {
	case len(id) > maxActionID:
		return invalid(field, "%s is longer than %d bytes", field, maxActionID)
	case strings.Contains(id, envelope.CallbackSeparator):
		return invalid(field, "%s may not contain %q: it separates the action id from the value in Telegram's and Discord's callbacks", field, envelope.CallbackSeparator)
	case strings.ContainsFunc(id, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return invalid(field, "%s may not contain control characters", field)
	}
	return nil
}

// checkButton checks button i: a label (or text), a known type and
// style, and an action id that can travel in a platform's callback
// string (envelope.RichButton.CallbackData).
func checkButton(i int, b envelope.RichButton) error {
	field := func(name string) string { return fmt.Sprintf("rich_content.buttons[%d].%s", i, name) }
	switch {
	case strings.TrimSpace(b.Label) == "":
		return invalid(field("label"), "rich_content.buttons[%d].label is required (text is accepted for it)", i)
	case b.Type != "" && b.Type != "button":
		return invalid(field("type"), "rich_content.buttons[%d].type %q: want button", i, b.Type)
	case b.Style != "" && b.Style != envelope.ButtonPrimary && b.Style != envelope.ButtonDanger:
		return invalid(field("style"), "rich_content.buttons[%d].style %q: want primary or danger", i, b.Style)
	case len(b.ActionID) > maxActionID:
		return invalid(field("action_id"), "rich_content.buttons[%d].action_id is longer than %d bytes", i, maxActionID)
	case strings.Contains(b.ActionID, envelope.CallbackSeparator):
		return invalid(field("action_id"), "rich_content.buttons[%d].action_id may not contain %q: it separates the action id from the value in Telegram's and Discord's callbacks", i, envelope.CallbackSeparator)
	case strings.ContainsFunc(b.ActionID, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return invalid(field("action_id"), "rich_content.buttons[%d].action_id may not contain control characters", i)
	case b.ActionID != "" && b.URL != "":
		return invalid(field("action_id"), "rich_content.buttons[%d]: a URL button opens its url and reports no action; drop action_id or url", i)
	}
	return nil
}

// httpURL reports whether s is an absolute http or https URL.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// requestHash is the sha-256 of the command's canonical JSON: the same
// idempotency key with a different command is a conflict. Stored with
// every row (request_sha256): changing the canonical form would make
// replays of earlier sends conflicts.
func requestHash(c *envelope.SendCommand, rich *envelope.RichContent) []byte {
	canon := *c
	canon.RichContent = nil
	if rich != nil {
		canon.RichContent, _ = json.Marshal(rich)
	}
	b, _ := json.Marshal(canon)
	sum := sha256.Sum256(b)
	return sum[:]
}
