package teams

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Activity types MIO reads.
const (
	ActivityMessage            = "message"
	ActivityMessageUpdate      = "messageUpdate"
	ActivityMessageDelete      = "messageDelete"
	ActivityConversationUpdate = "conversationUpdate"
	ActivityInvoke             = "invoke"
	ActivityMessageReaction    = "messageReaction"
)

// InvokeAdaptiveCardAction is the name of the invoke activity an Adaptive
// Card Action.Execute sends.
const InvokeAdaptiveCardAction = "adaptiveCard/action"

// invokeReply is the answer to an adaptiveCard/action invoke, written
// after the click is committed: HTTP 200 with an Adaptive Card invoke
// response of statusCode 200 and type
// application/vnd.microsoft.activity.message, a message the client shows
// under the card, which stays as it is. The Universal Action Model
// documents two successful responses, a card that replaces the clicked
// one and this message
// (https://learn.microsoft.com/en-us/adaptive-cards/authoring-cards/universal-action-model#response-format).
// The invoke carries the action, not the card, so there is no card to
// answer with unchanged; Teams answers any other type with an error
// naming these two (MicrosoftDocs/AdaptiveCards#388), and an empty
// message is shown as a failure to reach the app (vercel/chat#731). The
// message is the clicked action's title, the label the card shows on it
// (its verb, else its action id, when it has none): nothing MIO made up.
func invokeReply(label string) *channels.Reply {
	body, _ := json.Marshal(struct {
		StatusCode int    `json:"statusCode"`
		Type       string `json:"type"`
		Value      string `json:"value"`
	}{StatusCode: 200, Type: InvokeResponseMessage, Value: label})
	return &channels.Reply{Status: 200, ContentType: channels.MediaTypeJSON, Body: body}
}

// InvokeResponseMessage is the type of an Adaptive Card invoke response
// whose value is a message the client shows.
const InvokeResponseMessage = "application/vnd.microsoft.activity.message"

// Attachment content types MIO stores.
const (
	// ContentTypeFileDownload is a file shared in a chat: content.downloadUrl
	// is a pre-authenticated link.
	ContentTypeFileDownload = "application/vnd.microsoft.teams.file.download.info"
)

// ClockSkew is the leeway on a token's nbf and exp, as the Bot Framework
// allows.
const ClockSkew = 5 * time.Minute

type inbound struct {
	cfg      Config
	tenant   uuid.UUID
	account  uuid.UUID
	keys     *keyCache
	trusted  trustedHosts
	services *serviceURLs
}

var _ channels.Inbound = (*inbound)(nil)

// activity is the part of a Bot Framework activity MIO reads.
type activity struct {
	Type         string        `json:"type"`
	ID           string        `json:"id"`
	Timestamp    string        `json:"timestamp"`
	ServiceURL   string        `json:"serviceUrl"`
	ChannelID    string        `json:"channelId"`
	From         *account      `json:"from"`
	Recipient    *account      `json:"recipient"`
	Conversation *conversation `json:"conversation"`
	Text         string        `json:"text"`
	ReplyToID    string        `json:"replyToId"`
	Attachments  []attachment  `json:"attachments"`
	Entities     []entity      `json:"entities"`
	ChannelData  *channelData  `json:"channelData"`
	MembersAdded []account     `json:"membersAdded"`
	MembersGone  []account     `json:"membersRemoved"`
	// Value is an Adaptive Card Action.Submit's data (with the card's
	// inputs) on the message activity the click sends, and an invoke's
	// value ({"action": {"type", "verb", "data"}, "trigger"} for
	// adaptiveCard/action).
	Value json.RawMessage `json:"value"`
	// Name names an invoke activity.
	Name string `json:"name"`
	// ReactionsAdded and ReactionsRemoved are a messageReaction's
	// reactions, on the message replyToId names.
	ReactionsAdded   []reaction `json:"reactionsAdded"`
	ReactionsRemoved []reaction `json:"reactionsRemoved"`
}

// reaction is a messageReaction's reaction: its type is Teams' name
// ("like", "heart", "laugh", "surprised", "sad", "angry", or a newer
// reaction id such as "1f440_eyes").
type reaction struct {
	Type string `json:"type"`
}

type account struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

type conversation struct {
	ID               string `json:"id"`
	Name             string `json:"name"`
	ConversationType string `json:"conversationType"`
	IsGroup          bool   `json:"isGroup"`
}

type attachment struct {
	ContentType string          `json:"contentType"`
	ContentURL  string          `json:"contentUrl"`
	Name        string          `json:"name"`
	Content     json.RawMessage `json:"content"`
}

type entity struct {
	Type      string   `json:"type"`
	Mentioned *account `json:"mentioned"`
	Text      string   `json:"text"`
}

type channelData struct {
	EventType string `json:"eventType"`
	Channel   *struct {
		Name string `json:"name"`
	} `json:"channel"`
}

// claims are the Bot Framework token's claims MIO checks beyond the
// registered ones.
type claims struct {
	jwt.RegisteredClaims
	ServiceURL string `json:"serviceurl"`
}

// Verify checks the Bot Framework JWT: RS256 with a key of the account's
// metadata URL endorsed for the activity's channelId, issuer Issuer,
// audience the app id, nbf and exp within ClockSkew of req.Now, and the
// serviceurl claim equal to the activity's serviceUrl, which must be a
// trusted service URL (ServiceHosts or the account's api_base_url host).
// Every failure, an unreachable key discovery included, wraps
// channels.ErrUnauthorized.
func (in *inbound) Verify(ctx context.Context, req *channels.Request) error {
	if req == nil {
		return channels.Unauthorizedf("teams: no request")
	}
	raw, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(raw) == "" {
		return channels.Unauthorizedf("teams: missing Authorization: Bearer token")
	}
	var act struct {
		ServiceURL string `json:"serviceUrl"`
		ChannelID  string `json:"channelId"`
	}
	if json.Unmarshal(req.Body, &act) != nil || act.ServiceURL == "" || act.ChannelID == "" {
		return channels.Unauthorizedf("teams: the token cannot be checked against the activity (no serviceUrl or channelId)")
	}
	if !in.trusted.trusts(act.ServiceURL) {
		return channels.Unauthorizedf("teams: serviceUrl host is not a Bot Connector host")
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	var key signingKey
	var c claims
	_, err := jwt.ParseWithClaims(strings.TrimSpace(raw), &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("no kid")
		}
		k, err := in.keys.key(ctx, in.cfg.OpenIDMetadataURL, kid)
		if err != nil {
			return nil, err
		}
		key = k
		return k.pub, nil
	},
		jwt.WithValidMethods([]string{"RS256"}),
		jwt.WithIssuer(Issuer),
		jwt.WithAudience(in.cfg.AppID),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(ClockSkew),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	var transient *channels.TransientError
	switch {
	case errors.As(err, &transient):
		// The keys could not be read: not a verdict on the token. Answered
		// 503 so that the activity is delivered again.
		return transient
	case err != nil:
		return channels.Unauthorizedf("teams: token refused: %v", err)
	case !key.endorses(act.ChannelID):
		return channels.Unauthorizedf("teams: the signing key is not endorsed for channel %q", act.ChannelID)
	case c.ServiceURL == "" || !sameServiceURL(c.ServiceURL, act.ServiceURL):
		return channels.Unauthorizedf("teams: the token's serviceurl differs from the activity's serviceUrl")
	}
	return nil
}

// sameServiceURL compares service URLs as the Bot Framework does: equal
// but for a trailing slash and the case of scheme and host.
func sameServiceURL(a, b string) bool {
	return strings.EqualFold(strings.TrimRight(a, "/"), strings.TrimRight(b, "/"))
}

// Parse maps one activity: a message to a message, messageUpdate to an
// edit and messageDelete to a delete of the message it names (Edited or
// Deleted with EditOf, as Slack's message_changed and Discord's
// MESSAGE_UPDATE). conversationUpdate and other activity types carry no
// message and are answered 200 with an Ignored line.
func (in *inbound) Parse(ctx context.Context, req *channels.Request) (*channels.Parsed, error) {
	if req == nil {
		return nil, channels.BadRequestf("teams: no request")
	}
	if err := channels.CheckContentType(req.Header, channels.MediaTypeJSON); err != nil {
		return nil, fmt.Errorf("teams: %w", err)
	}
	var act activity
	if err := channels.UnmarshalJSON(req.Body, &act); err != nil {
		return nil, channels.BadRequestf("teams: malformed activity: %v", err)
	}
	switch act.Type {
	case ActivityMessage, ActivityMessageUpdate, ActivityMessageDelete, ActivityMessageReaction:
	case ActivityInvoke:
		if act.Name != InvokeAdaptiveCardAction {
			return &channels.Parsed{Ignored: []string{"teams: invoke " + boundText(act.Name)}}, nil
		}
	case "":
		return nil, channels.BadRequestf("teams: activity without type")
	case ActivityConversationUpdate:
		return &channels.Parsed{Ignored: []string{"teams: conversationUpdate (" + membersLine(&act) + ")"}}, nil
	default:
		return &channels.Parsed{Ignored: []string{"teams: " + boundText(act.Type) + " activity"}}, nil
	}
	if act.ChannelID != ChannelIDTeams {
		return &channels.Parsed{Ignored: []string{"teams: an activity of channel " + boundText(act.ChannelID)}}, nil
	}
	msg, err := in.message(&act)
	if err != nil {
		return nil, err
	}
	msg.Raw = json.RawMessage(bytes.Clone(req.Body))
	if in.trusted.trusts(act.ServiceURL) {
		in.services.remember(ctx, in.tenant, in.account, msg.Conversation.ID, act.ServiceURL)
	}
	switch act.Type {
	case ActivityInvoke:
		label, err := executed(&msg, act.Value)
		if err != nil {
			return nil, err
		}
		return &channels.Parsed{Messages: []envelope.Message{msg}, Reply: invokeReply(label)}, nil
	case ActivityMessageReaction:
		if act.ReplyToID == "" {
			return nil, channels.BadRequestf("teams: messageReaction activity without replyToId")
		}
		msgs := reactions(msg, &act)
		if len(msgs) == 0 {
			return &channels.Parsed{Ignored: []string{"teams: messageReaction without reactions"}}, nil
		}
		return &channels.Parsed{Messages: msgs}, nil
	}
	return &channels.Parsed{Messages: []envelope.Message{msg}}, nil
}

// message maps a message, messageUpdate or messageDelete activity.
func (in *inbound) message(act *activity) (envelope.Message, error) {
	if act.ID == "" && act.Type != ActivityMessageReaction {
		return envelope.Message{}, channels.BadRequestf("teams: %s activity without id", act.Type)
	}
	if act.Conversation == nil || act.Conversation.ID == "" {
		return envelope.Message{}, channels.BadRequestf("teams: %s activity without conversation id", act.Type)
	}
	convID, root, _ := strings.Cut(act.Conversation.ID, ";messageid=")
	if convID == "" {
		return envelope.Message{}, channels.BadRequestf("teams: %s activity without conversation id", act.Type)
	}
	msg := envelope.Message{
		ChannelType:     envelope.ChannelTeams,
		SourceMessageID: act.ID,
		Conversation: envelope.Conversation{
			ID:    convID,
			Type:  conversationType(act.Conversation),
			Title: act.Conversation.Name,
		},
		ReplyToSourceID: act.ReplyToID,
		Attachments:     []envelope.Attachment{},
	}
	if msg.Conversation.Title == "" && act.ChannelData != nil && act.ChannelData.Channel != nil {
		msg.Conversation.Title = act.ChannelData.Channel.Name
	}
	// A channel thread: the conversation id names its root message.
	if root == "" && msg.Conversation.Type == envelope.ConversationChannel {
		root = act.ReplyToID
	}
	if root != "" && root != act.ID {
		msg.ThreadID = root
	}
	if t, err := time.Parse(time.RFC3339Nano, act.Timestamp); err == nil {
		msg.SentAt = t.UTC()
	}
	switch act.Type {
	case ActivityMessageDelete:
		msg.SourceMessageID = act.ID + ":delete"
		msg.Deleted = true
		msg.EditOf = envelope.NewEditRef(act.ID)
	case ActivityMessageUpdate:
		msg.SourceMessageID = act.ID + ":edit:" + act.Timestamp
		msg.Edited = true
		msg.EditOf = envelope.NewEditRef(act.ID)
	default:
		msg.PlatformMessageID = act.ID
	}
	if act.From != nil {
		msg.Sender = envelope.Sender{ID: act.From.ID, DisplayName: act.From.Name, IsBot: act.From.Role == "bot"}
	}
	if msg.Sender.ID == "" && !msg.Deleted {
		return envelope.Message{}, channels.BadRequestf("teams: %s activity without from.id", act.Type)
	}
	if !msg.Deleted && act.Type != ActivityInvoke && act.Type != ActivityMessageReaction {
		botID := ""
		if act.Recipient != nil {
			botID = act.Recipient.ID
		}
		msg.Text = messageText(act.Text, act.Entities, botID)
		msg.Attachments = attachments(act.Attachments)
	}
	if act.Type == ActivityMessage {
		submitted(&msg, act.Value)
	}
	return msg, nil
}

// submitted makes msg an interaction when its activity is the click on
// an Action.Submit button MIO rendered: value carries the button's
// "action_id" (and "value"), and replyToId names the card's message.
func submitted(msg *envelope.Message, value json.RawMessage) {
	if len(value) == 0 || value[0] != '{' {
		return
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(value, &data) != nil {
		return
	}
	str := func(k string) string {
		var v string
		_ = json.Unmarshal(data[k], &v)
		return v
	}
	action := str("action_id")
	if action == "" {
		return
	}
	msg.Kind = envelope.KindInteraction
	msg.Interaction = &envelope.Interaction{ActionID: action, Value: str("value"), MessageID: msg.ReplyToSourceID}
	if strings.TrimSpace(msg.Text) == "" {
		msg.Text = msg.Interaction.Value
	}
}

// executed makes msg the interaction of an adaptiveCard/action invoke: an
// Action.Execute MIO rendered carries {"action_id", "value"} in its data
// (its verb is the action id too); a select's Action.Execute names in
// "input" the Input.ChoiceSet whose chosen value Teams adds to the data.
// The click's card is the message replyToId names. An Action.Execute of
// another card, without an action id or verb, is refused. label is the
// action's title (its verb, else its action id, when it has none).
func executed(msg *envelope.Message, value json.RawMessage) (label string, err error) {
	var v struct {
		Action struct {
			Type  string                     `json:"type"`
			Title string                     `json:"title"`
			Verb  string                     `json:"verb"`
			Data  map[string]json.RawMessage `json:"data"`
		} `json:"action"`
	}
	if len(value) == 0 || json.Unmarshal(value, &v) != nil {
		return "", channels.BadRequestf("teams: adaptiveCard/action invoke without an action")
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(v.Action.Data[k], &s)
		return s
	}
	action := str("action_id")
	if action == "" {
		action = v.Action.Verb
	}
	if action == "" {
		return "", channels.BadRequestf("teams: adaptiveCard/action invoke without a verb or action_id")
	}
	in := &envelope.Interaction{ActionID: action, Value: str("value"), MessageID: msg.ReplyToSourceID}
	if input := str("input"); input != "" {
		in.Value = str(input)
		in.Values = []string{in.Value}
	}
	msg.Kind = envelope.KindInteraction
	msg.Interaction = in
	msg.Text = in.Value
	msg.PlatformMessageID = ""
	return cmp.Or(strings.TrimSpace(v.Action.Title), v.Action.Verb, action), nil
}

// reactions maps a messageReaction activity to one reaction envelope per
// reaction added or removed, on the message replyToId names. The dedup
// key is the activity's id (else its timestamp and sender), the
// reaction's type and its direction.
func reactions(base envelope.Message, act *activity) []envelope.Message {
	key := act.ID
	if key == "" {
		key = act.ReplyToID + ":" + base.Sender.ID + ":" + act.Timestamp
	}
	var out []envelope.Message
	add := func(rs []reaction, added bool) {
		dir := ":removed"
		if added {
			dir = ":added"
		}
		for _, r := range rs {
			if r.Type == "" {
				continue
			}
			m := base
			m.SourceMessageID = key + ":reaction:" + r.Type + dir
			m.PlatformMessageID = ""
			m.Kind = envelope.KindReaction
			m.Reaction = &envelope.Reaction{Emoji: r.Type, Added: added, MessageID: act.ReplyToID}
			out = append(out, m)
		}
	}
	add(act.ReactionsAdded, true)
	add(act.ReactionsRemoved, false)
	return out
}

// conversationType maps conversationType: personal is a DM, groupChat a
// group, channel a channel; without one, isGroup says group.
func conversationType(c *conversation) string {
	switch c.ConversationType {
	case "personal":
		return envelope.ConversationDM
	case "groupChat":
		return envelope.ConversationGroup
	case "channel":
		return envelope.ConversationChannel
	}
	if c.IsGroup {
		return envelope.ConversationGroup
	}
	return envelope.ConversationDM
}

// messageText removes the mentions of the bot (recipient botID) from
// text, writes other mentions' "<at>Name</at>" as "@Name", and trims it.
// The mention entities stay in the raw activity.
func messageText(text string, entities []entity, botID string) string {
	for _, e := range entities {
		if e.Type != "mention" || e.Text == "" || e.Mentioned == nil {
			continue
		}
		if botID != "" && e.Mentioned.ID == botID {
			text = strings.ReplaceAll(text, e.Text, "")
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(e.Text, "<at>"), "</at>")
		text = strings.ReplaceAll(text, e.Text, "@"+name)
	}
	return strings.Join(strings.Fields(text), " ")
}

// attachments maps shared files (ContentTypeFileDownload: the
// pre-authenticated downloadUrl) and inline images (image/*: contentUrl,
// fetched with the bot's token). The text/html copy of the message,
// cards and other types are left out.
func attachments(in []attachment) []envelope.Attachment {
	out := []envelope.Attachment{}
	for _, a := range in {
		ct := strings.ToLower(strings.TrimSpace(a.ContentType))
		switch {
		case ct == ContentTypeFileDownload:
			var c struct {
				DownloadURL string `json:"downloadUrl"`
				FileType    string `json:"fileType"`
			}
			if json.Unmarshal(a.Content, &c) != nil || !channels.IsHTTPURL(c.DownloadURL) {
				continue
			}
			out = append(out, envelope.Attachment{Kind: fileKind(c.FileType), Name: a.Name, Status: envelope.AttachmentPending,
				Source: &envelope.AttachmentSource{URL: c.DownloadURL}})
		case strings.HasPrefix(ct, "image/") && channels.IsHTTPURL(a.ContentURL):
			out = append(out, envelope.Attachment{Kind: envelope.KindImage, Name: a.Name, MimeType: ct, Status: envelope.AttachmentPending,
				Source: &envelope.AttachmentSource{URL: a.ContentURL}})
		}
	}
	return out
}

// fileKind guesses the kind of a shared file from its extension.
func fileKind(ext string) string {
	switch strings.ToLower(ext) {
	case "png", "jpg", "jpeg", "gif", "webp", "bmp", "heic":
		return envelope.KindImage
	case "mp4", "mov", "webm", "mkv":
		return envelope.KindVideo
	case "mp3", "wav", "m4a", "ogg", "aac":
		return envelope.KindAudio
	}
	return envelope.KindFile
}

// membersLine says who joined or left, by count.
func membersLine(act *activity) string {
	switch {
	case len(act.MembersAdded) > 0 && len(act.MembersGone) > 0:
		return "members added and removed"
	case len(act.MembersAdded) > 0:
		return "members added"
	case len(act.MembersGone) > 0:
		return "members removed"
	}
	return "conversation changed"
}

// boundText keeps a platform string short and printable for logs.
func boundText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.ToValidUTF8(s, "")
}
