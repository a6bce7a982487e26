package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// SecretTokenHeader carries the setWebhook secret_token on every update.
const SecretTokenHeader = "X-Telegram-Bot-Api-Secret-Token"

// inbound handles the webhooks of one Telegram bot.
type inbound struct {
	cfg Config
	// ack answers callback queries after the commit; nil without a bot
	// token (the client then stops its spinner on its own).
	ack *outbound
}

var _ channels.Inbound = (*inbound)(nil)

// Verify compares the secret token header with the account's webhook secret
// in constant time. Telegram sends no timestamp, so there is no staleness
// check; redeliveries are caught by update_id deduplication.
func (in *inbound) Verify(_ context.Context, req *channels.Request) error {
	if req == nil {
		return channels.Unauthorizedf("telegram: no request")
	}
	got := req.Header.Get(SecretTokenHeader)
	if got == "" {
		return channels.Unauthorizedf("telegram: missing %s header", SecretTokenHeader)
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(in.cfg.WebhookSecret)) != 1 {
		return channels.Unauthorizedf("telegram: %s does not match", SecretTokenHeader)
	}
	return nil
}

// Parse turns one Update into at most one message. Update kinds MIO does not
// store (chat member changes, polls, inline queries, ...) yield no messages.
func (in *inbound) Parse(_ context.Context, req *channels.Request) (*channels.Parsed, error) {
	if req == nil {
		return nil, channels.BadRequestf("telegram: no request")
	}
	if req.Method != "" && req.Method != http.MethodPost {
		return nil, channels.BadRequestf("telegram: method %s not supported, updates are POSTed", req.Method)
	}
	if err := channels.CheckContentType(req.Header, channels.MediaTypeJSON); err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	if len(strings.TrimSpace(string(req.Body))) == 0 {
		return nil, channels.BadRequestf("telegram: empty body")
	}
	parsed, callbackID, err := parseUpdate(req.Body)
	if err != nil {
		return nil, err
	}
	if callbackID != "" && in.ack != nil {
		parsed.AfterCommit = in.ack.answerCallbacks([]string{callbackID})
	}
	return parsed, nil
}

// parseUpdate maps one Update's JSON (a webhook body, or one element of a
// getUpdates answer) to its messages: at most one, except a
// message_reaction, which gives one per emoji added or removed. A
// callback query's id is returned to be answered after the commit.
func parseUpdate(body []byte) (*channels.Parsed, string, error) {
	var u update
	if err := channels.UnmarshalJSON(body, &u); err != nil {
		return nil, "", channels.BadRequestf("telegram: malformed update: %v", err)
	}
	if u.UpdateID == nil {
		return nil, "", channels.BadRequestf("telegram: update_id is missing")
	}
	raw := append(json.RawMessage(nil), body...)
	sourceID := strconv.FormatInt(*u.UpdateID, 10)
	if u.MessageReaction != nil {
		msgs, err := fromReaction(u.MessageReaction, sourceID)
		if err != nil {
			return nil, "", err
		}
		for i := range msgs {
			msgs[i].Raw = raw
		}
		return &channels.Parsed{Messages: msgs}, "", nil
	}

	var (
		msg        envelope.Message
		err        error
		callbackID string
	)
	switch {
	case u.Message != nil:
		msg, err = fromMessage(u.Message, "message", false)
	case u.EditedMessage != nil:
		msg, err = fromMessage(u.EditedMessage, "edited_message", true)
	case u.ChannelPost != nil:
		msg, err = fromMessage(u.ChannelPost, "channel_post", false)
	case u.EditedChannelPost != nil:
		msg, err = fromMessage(u.EditedChannelPost, "edited_channel_post", true)
	case u.CallbackQuery != nil && u.CallbackQuery.Data == "" && u.CallbackQuery.GameShortName == "":
		return &channels.Parsed{Ignored: []string{"telegram: callback_query without data"}}, "", nil
	case u.CallbackQuery != nil:
		msg, err = fromCallbackQuery(u.CallbackQuery)
		callbackID = u.CallbackQuery.ID
	default:
		return &channels.Parsed{}, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	msg.ChannelType = envelope.ChannelTelegram
	msg.SourceMessageID = sourceID
	msg.Raw = raw
	return &channels.Parsed{Messages: []envelope.Message{msg}}, callbackID, nil
}

// update is a Bot API Update; only the kinds MIO stores are decoded.
type update struct {
	UpdateID          *int64         `json:"update_id"`
	Message           *message       `json:"message"`
	EditedMessage     *message       `json:"edited_message"`
	ChannelPost       *message       `json:"channel_post"`
	EditedChannelPost *message       `json:"edited_channel_post"`
	CallbackQuery     *callbackQuery `json:"callback_query"`
	// MessageReaction is sent only when the webhook's (or getUpdates')
	// allowed_updates names it, and in groups only to admin bots.
	MessageReaction *messageReaction `json:"message_reaction"`
}

// messageReaction is a MessageReactionUpdated: a user's (or an anonymous
// chat's) reactions on one message, before and after.
type messageReaction struct {
	Chat        *chat          `json:"chat"`
	MessageID   int64          `json:"message_id"`
	User        *user          `json:"user"`
	ActorChat   *chat          `json:"actor_chat"`
	Date        int64          `json:"date"`
	OldReaction []reactionType `json:"old_reaction"`
	NewReaction []reactionType `json:"new_reaction"`
}

// reactionType is a ReactionType: an emoji, a custom emoji (by id) or a
// paid reaction.
type reactionType struct {
	Type          string `json:"type"`
	Emoji         string `json:"emoji,omitempty"`
	CustomEmojiID string `json:"custom_emoji_id,omitempty"`
}

// key names a reaction: the emoji, a custom emoji's id, or the type.
func (r reactionType) key() string {
	switch {
	case r.Emoji != "":
		return r.Emoji
	case r.CustomEmojiID != "":
		return r.CustomEmojiID
	}
	return r.Type
}

type message struct {
	MessageID       int64       `json:"message_id"`
	MessageThreadID *int64      `json:"message_thread_id"`
	From            *user       `json:"from"`
	SenderChat      *chat       `json:"sender_chat"`
	Date            int64       `json:"date"`
	Chat            *chat       `json:"chat"`
	Text            string      `json:"text"`
	Caption         string      `json:"caption"`
	ReplyToMessage  *replyTo    `json:"reply_to_message"`
	Photo           []photoSize `json:"photo"`
	Document        *file       `json:"document"`
	Voice           *file       `json:"voice"`
	Audio           *file       `json:"audio"`
	Video           *file       `json:"video"`
	VideoNote       *file       `json:"video_note"`
	Sticker         *file       `json:"sticker"`
}

type replyTo struct {
	MessageID int64 `json:"message_id"`
}

type user struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Username  string `json:"username"`
}

type chat struct {
	ID        *int64 `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title"`
	Username  string `json:"username"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
}

type photoSize struct {
	FileID   string `json:"file_id"`
	Width    int64  `json:"width"`
	Height   int64  `json:"height"`
	FileSize int64  `json:"file_size"`
}

// file covers Document, Voice, Audio, Video, VideoNote and Sticker: the
// fields MIO reads have the same names in each.
type file struct {
	FileID   string `json:"file_id"`
	FileName string `json:"file_name"`
	MimeType string `json:"mime_type"`
	FileSize int64  `json:"file_size"`
}

type callbackQuery struct {
	ID              string   `json:"id"`
	From            *user    `json:"from"`
	Message         *message `json:"message"`
	InlineMessageID string   `json:"inline_message_id"`
	Data            string   `json:"data"`
	GameShortName   string   `json:"game_short_name"`
}

// fromMessage maps a Message (or channel post, or an edit of either). kind
// names the update field for error reasons.
func fromMessage(m *message, kind string, edited bool) (envelope.Message, error) {
	if m.Chat == nil || m.Chat.ID == nil {
		return envelope.Message{}, channels.BadRequestf("telegram: %s.chat.id is missing", kind)
	}
	out := envelope.Message{
		Conversation: conversation(m.Chat),
		Sender:       sender(m),
		Text:         m.Text,
		Attachments:  attachments(m),
		Edited:       edited,
		SentAt:       unixTime(m.Date),
	}
	// message_id is the message's id in its chat; an edit carries the
	// original's.
	switch id := strconv.FormatInt(m.MessageID, 10); {
	case m.MessageID == 0:
	case edited:
		out.EditOf = envelope.NewEditRef(id)
	default:
		out.PlatformMessageID = id
	}
	if out.Text == "" {
		out.Text = m.Caption
	}
	if m.MessageThreadID != nil {
		out.ThreadID = strconv.FormatInt(*m.MessageThreadID, 10)
	}
	if m.ReplyToMessage != nil {
		out.ReplyToSourceID = strconv.FormatInt(m.ReplyToMessage.MessageID, 10)
	}
	return out, nil
}

// fromCallbackQuery maps a button press to an interaction: its action id
// and value are the button's callback data split at the first ":"
// (envelope.SplitCallbackData), the text is the data as sent, the
// conversation is the chat of the message carrying the button and the
// interaction names (and replies to) that message. A callback from an
// inline-mode message has no chat; it is filed under the user's private
// chat with the bot, whose id equals the user id.
func fromCallbackQuery(q *callbackQuery) (envelope.Message, error) {
	if q.From == nil {
		return envelope.Message{}, channels.BadRequestf("telegram: callback_query.from is missing")
	}
	out := envelope.Message{
		Kind:   envelope.KindInteraction,
		Sender: userSender(q.From),
		Text:   q.Data,
	}
	if out.Text == "" {
		out.Text = q.GameShortName
	}
	action, value := envelope.SplitCallbackData(out.Text)
	out.Interaction = &envelope.Interaction{ActionID: action, Value: value, MessageID: q.InlineMessageID}
	if m := q.Message; m != nil && m.Chat != nil && m.Chat.ID != nil {
		out.Conversation = conversation(m.Chat)
		out.ReplyToSourceID = strconv.FormatInt(m.MessageID, 10)
		out.Interaction.MessageID = out.ReplyToSourceID
		if m.MessageThreadID != nil {
			out.ThreadID = strconv.FormatInt(*m.MessageThreadID, 10)
		}
	} else {
		out.Conversation = envelope.Conversation{
			ID:   strconv.FormatInt(q.From.ID, 10),
			Type: envelope.ConversationDM,
		}
	}
	return out, nil
}

// fromReaction maps a message_reaction update to one reaction envelope
// per emoji added or removed (new_reaction against old_reaction). The
// first has the update's id as its dedup key, the next ones that id and
// ":1", ":2", ...
func fromReaction(r *messageReaction, sourceID string) ([]envelope.Message, error) {
	if r.Chat == nil || r.Chat.ID == nil {
		return nil, channels.BadRequestf("telegram: message_reaction.chat.id is missing")
	}
	var who envelope.Sender
	switch {
	case r.User != nil:
		who = userSender(r.User)
	case r.ActorChat != nil && r.ActorChat.ID != nil:
		who = chatSender(r.ActorChat)
	default:
		who = chatSender(r.Chat)
	}
	old := make(map[string]bool, len(r.OldReaction))
	for _, x := range r.OldReaction {
		old[x.key()] = true
	}
	now := make(map[string]bool, len(r.NewReaction))
	for _, x := range r.NewReaction {
		now[x.key()] = true
	}
	var changes []envelope.Reaction
	msgID := strconv.FormatInt(r.MessageID, 10)
	for _, x := range r.NewReaction {
		if !old[x.key()] {
			changes = append(changes, envelope.Reaction{Emoji: x.key(), Added: true, MessageID: msgID})
		}
	}
	for _, x := range r.OldReaction {
		if !now[x.key()] {
			changes = append(changes, envelope.Reaction{Emoji: x.key(), MessageID: msgID})
		}
	}
	out := make([]envelope.Message, 0, len(changes))
	for i := range changes {
		id := sourceID
		if i > 0 {
			id += ":" + strconv.Itoa(i)
		}
		out = append(out, envelope.Message{
			Kind: envelope.KindReaction, Reaction: &changes[i], ChannelType: envelope.ChannelTelegram,
			SourceMessageID: id, Conversation: conversation(r.Chat), Sender: who, Text: changes[i].Emoji,
			ReplyToSourceID: msgID, SentAt: unixTime(r.Date), Attachments: []envelope.Attachment{},
		})
	}
	return out, nil
}

// conversation maps a Chat. An unknown chat type falls back on the id's
// sign: users have positive ids, groups and channels negative ones.
func conversation(c *chat) envelope.Conversation {
	id := *c.ID
	conv := envelope.Conversation{ID: strconv.FormatInt(id, 10), Title: c.Title}
	switch c.Type {
	case "private":
		conv.Type = envelope.ConversationDM
	case "group", "supergroup":
		conv.Type = envelope.ConversationGroup
	case "channel":
		conv.Type = envelope.ConversationChannel
	default:
		if id > 0 {
			conv.Type = envelope.ConversationDM
		} else {
			conv.Type = envelope.ConversationGroup
		}
	}
	return conv
}

// sender prefers sender_chat: it is set when a message is sent on behalf of
// a chat (channel posts, anonymous group admins, linked-channel forwards),
// and then "from" is absent or a placeholder bot. Without either, the chat
// itself is the sender.
func sender(m *message) envelope.Sender {
	switch {
	case m.SenderChat != nil && m.SenderChat.ID != nil:
		return chatSender(m.SenderChat)
	case m.From != nil:
		return userSender(m.From)
	default:
		return chatSender(m.Chat)
	}
}

func userSender(u *user) envelope.Sender {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.Username
	}
	return envelope.Sender{ID: strconv.FormatInt(u.ID, 10), DisplayName: name, IsBot: u.IsBot}
}

func chatSender(c *chat) envelope.Sender {
	name := c.Title
	if name == "" {
		name = strings.TrimSpace(c.FirstName + " " + c.LastName)
	}
	if name == "" {
		name = c.Username
	}
	return envelope.Sender{ID: strconv.FormatInt(*c.ID, 10), DisplayName: name}
}

// attachments lists a message's files as pending attachments referenced by
// file_id. Of a photo's sizes only the largest is kept. Files without a
// file_id cannot be fetched and are skipped.
func attachments(m *message) []envelope.Attachment {
	var out []envelope.Attachment
	add := func(kind string, f *file) {
		if f == nil || f.FileID == "" {
			return
		}
		out = append(out, envelope.Attachment{
			Kind:     kind,
			Name:     f.FileName,
			MimeType: f.MimeType,
			Size:     max(f.FileSize, 0),
			Status:   envelope.AttachmentPending,
			Source:   &envelope.AttachmentSource{Ref: f.FileID},
		})
	}
	if p := largestPhoto(m.Photo); p != nil {
		add(envelope.KindImage, &file{FileID: p.FileID, FileSize: p.FileSize})
	}
	add(envelope.KindFile, m.Document)
	add(envelope.KindAudio, m.Voice)
	add(envelope.KindAudio, m.Audio)
	add(envelope.KindVideo, m.Video)
	add(envelope.KindVideo, m.VideoNote)
	add(envelope.KindSticker, m.Sticker)
	return out
}

// largestPhoto picks the PhotoSize with the most pixels, then the largest
// file; nil when none has a file_id.
func largestPhoto(sizes []photoSize) *photoSize {
	var best *photoSize
	for i := range sizes {
		p := &sizes[i]
		if p.FileID == "" {
			continue
		}
		if best == nil || larger(p, best) {
			best = p
		}
	}
	return best
}

func larger(a, b *photoSize) bool {
	pa, pb := pixels(a), pixels(b)
	if pa != pb {
		return pa > pb
	}
	return a.FileSize > b.FileSize
}

// pixels is width*height, saturating instead of overflowing.
func pixels(p *photoSize) uint64 {
	w, h := uint64(max(p.Width, 0)), uint64(max(p.Height, 0))
	if w != 0 && h > ^uint64(0)/w {
		return ^uint64(0)
	}
	return w * h
}

// maxUnix is 9999-12-31T23:59:59Z, the last instant time.Time marshals to
// JSON.
const maxUnix = 253402300799

// unixTime converts Bot API unix seconds. Absent (0) or impossible values
// give the zero time rather than an envelope that cannot be serialized.
func unixTime(sec int64) time.Time {
	if sec <= 0 || sec > maxUnix {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}
