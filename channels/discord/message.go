package discord

import (
	"bytes"
	"encoding/json"

	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Gateway dispatch types MIO stores.
const (
	EventMessageCreate = "MESSAGE_CREATE"
	EventMessageUpdate = "MESSAGE_UPDATE"
	EventMessageDelete = "MESSAGE_DELETE"
)

// message is a Discord Message object as the Gateway dispatches it and
// GET /channels/{id}/messages returns it (fields MIO reads).
type message struct {
	ID               string          `json:"id"`
	ChannelID        string          `json:"channel_id"`
	GuildID          string          `json:"guild_id"`
	Author           *user           `json:"author"`
	Member           json.RawMessage `json:"member"`
	Content          *string         `json:"content"`
	Timestamp        string          `json:"timestamp"`
	EditedTimestamp  *string         `json:"edited_timestamp"`
	Attachments      []attachment    `json:"attachments"`
	MessageReference *struct {
		MessageID string `json:"message_id"`
	} `json:"message_reference"`
	Type int `json:"type"`
}

// ParseMessageEvent turns one Gateway dispatch (MESSAGE_CREATE, _UPDATE or
// _DELETE) into at most one message. selfID, when known, is the bot's own
// user id: its own messages are left out (Ignored). Dedup keys: the message
// id for a new message, "<id>:edit:<edited_timestamp>" for an edit and
// "<id>:delete" for a deletion, so a replay of the same event is a
// duplicate and each distinct edit is stored. Updates that change no
// content (embed unfurls carry no edited_timestamp) are ignored. Errors
// are *channels.BadRequestError.
func ParseMessageEvent(eventType string, data []byte, selfID string) (*channels.Parsed, error) {
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, channels.BadRequestf("discord: %s is not a message object: %v", eventType, err)
	}
	if _, ok := parseSnowflake(m.ID); !ok {
		return nil, channels.BadRequestf("discord: %s message id %q is not a snowflake", eventType, m.ID)
	}
	if m.ChannelID == "" {
		return nil, channels.BadRequestf("discord: %s has no channel_id", eventType)
	}
	conv := envelope.Conversation{ID: m.ChannelID, Type: envelope.ConversationDM}
	if m.GuildID != "" {
		conv.Type = envelope.ConversationChannel
	}
	sentAt, _ := snowflakeTime(m.ID)
	msg := envelope.Message{
		ChannelType:     envelope.ChannelDiscord,
		SourceMessageID: m.ID,
		Conversation:    conv,
		SentAt:          sentAt,
		Raw:             json.RawMessage(bytes.Clone(data)),
	}
	switch eventType {
	case EventMessageDelete:
		msg.SourceMessageID = m.ID + ":delete"
		msg.Deleted = true
		msg.EditOf = envelope.NewEditRef(m.ID)
		return &channels.Parsed{Messages: []envelope.Message{msg}}, nil
	case EventMessageUpdate:
		if m.EditedTimestamp == nil || *m.EditedTimestamp == "" || m.Content == nil {
			return &channels.Parsed{Ignored: []string{"discord: MESSAGE_UPDATE without an edit (embed or flag change)"}}, nil
		}
		msg.SourceMessageID = m.ID + ":edit:" + *m.EditedTimestamp
		msg.Edited = true
		msg.EditOf = envelope.NewEditRef(m.ID)
		if t, err := time.Parse(time.RFC3339Nano, *m.EditedTimestamp); err == nil {
			msg.SentAt = t.UTC()
		}
	case EventMessageCreate:
		// What a later MESSAGE_UPDATE or MESSAGE_DELETE names (edit_of).
		msg.PlatformMessageID = m.ID
	default:
		return nil, channels.BadRequestf("discord: dispatch %q is not a message event", eventType)
	}
	if m.Author == nil || m.Author.ID == "" {
		return nil, channels.BadRequestf("discord: %s has no author", eventType)
	}
	if selfID != "" && m.Author.ID == selfID {
		return &channels.Parsed{Ignored: []string{"discord: the bot's own message"}}, nil
	}
	display := m.Author.GlobalName
	if display == "" {
		display = m.Author.Username
	}
	msg.Sender = envelope.Sender{ID: m.Author.ID, DisplayName: display, IsBot: m.Author.Bot}
	if m.Content != nil {
		msg.Text = *m.Content
	}
	if m.MessageReference != nil {
		msg.ReplyToSourceID = m.MessageReference.MessageID
	}
	msg.Attachments = messageAttachments(m.Attachments)
	return &channels.Parsed{Messages: []envelope.Message{msg}}, nil
}

func messageAttachments(in []attachment) []envelope.Attachment {
	var out []envelope.Attachment
	for _, a := range in {
		if att, ok := a.envelope(); ok {
			out = append(out, att)
		}
	}
	return out
}

// snowflakeLess orders two snowflake ids (decimal, no leading zeros).
func snowflakeLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// Gateway dispatch types of reactions (intents GUILD_MESSAGE_REACTIONS,
// DIRECT_MESSAGE_REACTIONS).
const (
	EventReactionAdd    = "MESSAGE_REACTION_ADD"
	EventReactionRemove = "MESSAGE_REACTION_REMOVE"
)

// reactionEvent is a MESSAGE_REACTION_ADD or _REMOVE dispatch.
type reactionEvent struct {
	UserID    string `json:"user_id"`
	ChannelID string `json:"channel_id"`
	MessageID string `json:"message_id"`
	GuildID   string `json:"guild_id"`
	Member    *struct {
		User *user `json:"user"`
	} `json:"member"`
	Emoji *struct {
		ID   *string `json:"id"`
		Name *string `json:"name"`
	} `json:"emoji"`
}

// ParseReactionEvent turns a MESSAGE_REACTION_ADD or _REMOVE dispatch
// into a reaction envelope. The emoji is the Unicode emoji, or name:id
// for a custom one (what POST /v1/reactions takes back). Discord gives
// the event no id: eventKey (the Gateway session id and sequence number,
// the same when a resumed session replays the event) makes its dedup key
// with the message, user, emoji and direction. The bot's own reactions
// (selfID) are left out. Errors are *channels.BadRequestError.
func ParseReactionEvent(eventType string, data []byte, selfID, eventKey string) (*channels.Parsed, error) {
	var ev reactionEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, channels.BadRequestf("discord: %s is not a reaction object: %v", eventType, err)
	}
	switch {
	case ev.UserID == "" || ev.ChannelID == "" || ev.MessageID == "":
		return nil, channels.BadRequestf("discord: %s without user_id, channel_id or message_id", eventType)
	case ev.Emoji == nil || ev.Emoji.Name == nil && ev.Emoji.ID == nil:
		return nil, channels.BadRequestf("discord: %s without an emoji", eventType)
	case eventType != EventReactionAdd && eventType != EventReactionRemove:
		return nil, channels.BadRequestf("discord: dispatch %q is not a reaction event", eventType)
	}
	if selfID != "" && ev.UserID == selfID {
		return &channels.Parsed{Ignored: []string{"discord: the bot's own reaction"}}, nil
	}
	var name, id string
	if ev.Emoji.Name != nil {
		name = *ev.Emoji.Name
	}
	if ev.Emoji.ID != nil {
		id = *ev.Emoji.ID
	}
	emoji := name
	if id != "" {
		emoji = name + ":" + id
	}
	added := eventType == EventReactionAdd
	dir := "remove"
	if added {
		dir = "add"
	}
	conv := envelope.Conversation{ID: ev.ChannelID, Type: envelope.ConversationDM}
	if ev.GuildID != "" {
		conv.Type = envelope.ConversationChannel
	}
	sender := envelope.Sender{ID: ev.UserID}
	if ev.Member != nil && ev.Member.User != nil {
		sender.DisplayName = cmpOr(ev.Member.User.GlobalName, ev.Member.User.Username)
		sender.IsBot = ev.Member.User.Bot
	}
	msg := envelope.Message{
		Kind: envelope.KindReaction, ChannelType: envelope.ChannelDiscord,
		Reaction:        &envelope.Reaction{Emoji: emoji, Added: added, MessageID: ev.MessageID},
		SourceMessageID: ev.MessageID + ":reaction:" + ev.UserID + ":" + emoji + ":" + dir + ":" + eventKey,
		Conversation:    conv, Sender: sender, Text: emoji, ReplyToSourceID: ev.MessageID,
		Attachments: []envelope.Attachment{}, Raw: json.RawMessage(bytes.Clone(data)),
	}
	return &channels.Parsed{Messages: []envelope.Message{msg}}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
