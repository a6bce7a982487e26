package slack

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Request headers Slack signs its webhooks with.
const (
	HeaderSignature = "X-Slack-Signature"
	HeaderTimestamp = "X-Slack-Request-Timestamp"
)

// SignatureTolerance is how far a request's timestamp may be from now.
const SignatureTolerance = 5 * time.Minute

// Signature returns Slack's v0 signature of body sent at timestamp (unix
// seconds, as in X-Slack-Request-Timestamp): "v0=" + lowercase hex of
// HMAC-SHA256(secret, "v0:" + timestamp + ":" + body).
func Signature(secret, timestamp string, body []byte) string {
	return "v0=" + hex.EncodeToString(signatureMAC(secret, timestamp, body))
}

func signatureMAC(secret, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + timestamp + ":"))
	m.Write(body)
	return m.Sum(nil)
}

// inbound handles one Slack account's Events API requests.
type inbound struct {
	ch        *Channel
	cfg       Config
	accountID string
}

// Verify checks X-Slack-Signature against the signing secret and rejects
// requests whose X-Slack-Request-Timestamp is more than
// SignatureTolerance away from req.Now (time.Now when zero).
func (in *inbound) Verify(_ context.Context, req *channels.Request) error {
	if req == nil {
		return channels.Unauthorizedf("slack: no request")
	}
	tsHeader := req.Header.Get(HeaderTimestamp)
	sigHeader := req.Header.Get(HeaderSignature)
	if tsHeader == "" || sigHeader == "" {
		return channels.Unauthorizedf("slack: missing %s or %s header", HeaderSignature, HeaderTimestamp)
	}
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return channels.Unauthorizedf("slack: malformed %s header", HeaderTimestamp)
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	if d := now.Sub(time.Unix(ts, 0)); d > SignatureTolerance || d < -SignatureTolerance {
		return channels.Unauthorizedf("slack: request timestamp outside the %s tolerance", SignatureTolerance)
	}
	hexSig, ok := strings.CutPrefix(sigHeader, "v0=")
	if !ok {
		return channels.Unauthorizedf("slack: unsupported signature version")
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return channels.Unauthorizedf("slack: malformed signature")
	}
	if !hmac.Equal(got, signatureMAC(in.cfg.SigningSecret, tsHeader, req.Body)) {
		return channels.Unauthorizedf("slack: signature mismatch")
	}
	return nil
}

// outerPayload is the Events API envelope (event_callback) or handshake
// (url_verification).
type outerPayload struct {
	Type      string          `json:"type"`
	Challenge string          `json:"challenge"`
	TeamID    string          `json:"team_id"`
	EventID   string          `json:"event_id"`
	Event     json.RawMessage `json:"event"`
}

// messageEvent is a message event, or the message nested in a
// message_changed (message) or message_deleted (previous_message) event.
type messageEvent struct {
	Type            string        `json:"type"`
	Subtype         string        `json:"subtype"`
	Channel         string        `json:"channel"`
	ChannelType     string        `json:"channel_type"`
	Team            string        `json:"team"`
	User            string        `json:"user"`
	BotID           string        `json:"bot_id"`
	Username        string        `json:"username"`
	BotProfile      *botProfile   `json:"bot_profile"`
	Text            string        `json:"text"`
	TS              string        `json:"ts"`
	ThreadTS        string        `json:"thread_ts"`
	DeletedTS       string        `json:"deleted_ts"`
	Files           []file        `json:"files"`
	Message         *messageEvent `json:"message"`
	PreviousMessage *messageEvent `json:"previous_message"`
}

type botProfile struct {
	Name string `json:"name"`
}

// file is one entry of a message's files[].
type file struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Title              string `json:"title"`
	Mimetype           string `json:"mimetype"`
	Size               int64  `json:"size"`
	URLPrivate         string `json:"url_private"`
	URLPrivateDownload string `json:"url_private_download"`
}

// storedSubtypes are the message subtypes MIO stores. Other subtypes
// (channel_join, channel_topic, pinned_item, message_replied, ...) are
// workspace notices and yield no messages.
var storedSubtypes = map[string]bool{
	"":                 true,
	"bot_message":      true,
	"file_share":       true,
	"me_message":       true,
	"thread_broadcast": true,
	"message_changed":  true,
	"message_deleted":  true,
}

// Parse answers url_verification with the challenge and turns an
// event_callback carrying a message event into one envelope. Other
// payload and event types yield no messages.
func (in *inbound) Parse(ctx context.Context, req *channels.Request) (*channels.Parsed, error) {
	if req == nil {
		return nil, channels.BadRequestf("slack: no request")
	}
	if isForm(req.Header) {
		return parseInteraction(req.Body)
	}
	if err := channels.CheckContentType(req.Header, channels.MediaTypeJSON); err != nil {
		return nil, fmt.Errorf("slack: %w", err)
	}
	if !utf8.Valid(req.Body) {
		return nil, channels.BadRequestf("slack: body is not valid UTF-8")
	}
	var p outerPayload
	if err := channels.UnmarshalJSON(req.Body, &p); err != nil {
		return nil, channels.BadRequestf("slack: malformed JSON body: %v", err)
	}
	switch p.Type {
	case "":
		return nil, channels.BadRequestf("slack: missing type")
	case "url_verification":
		return handshake(p.Challenge)
	case "event_callback":
	default:
		return &channels.Parsed{}, nil // app_rate_limited and future types
	}
	if p.EventID == "" {
		return nil, channels.BadRequestf("slack: event_callback without event_id")
	}
	if len(p.Event) == 0 || p.Event[0] != '{' {
		return nil, channels.BadRequestf("slack: event_callback without an event object")
	}
	// Decoded once as a message event, the kind nearly every delivery is.
	// Other kinds may not fit messageEvent (channel_created's channel is
	// an object): only when it fails is the type alone decoded, to tell a
	// kind MIO ignores from a malformed message.
	var ev messageEvent
	if err := channels.UnmarshalJSON(p.Event, &ev); err != nil {
		var kind struct {
			Type string `json:"type"`
		}
		if kerr := channels.UnmarshalJSON(p.Event, &kind); kerr != nil {
			return nil, channels.BadRequestf("slack: malformed event: %v", kerr)
		}
		if kind.Type != "message" {
			return &channels.Parsed{}, nil
		}
		return nil, channels.BadRequestf("slack: malformed message event: %v", err)
	}
	if ev.Type == "reaction_added" || ev.Type == "reaction_removed" {
		msg, err := reaction(p.EventID, p.Event)
		if err != nil {
			return nil, err
		}
		if msg == nil {
			return &channels.Parsed{}, nil // a reaction on a file
		}
		msg.Raw = json.RawMessage(req.Body)
		return &channels.Parsed{Messages: []envelope.Message{*msg}}, nil
	}
	if ev.Type != "message" {
		return &channels.Parsed{}, nil // app_mention, ...
	}
	if !storedSubtypes[ev.Subtype] {
		return &channels.Parsed{}, nil
	}
	msg, err := in.message(ctx, p, &ev)
	if err != nil {
		return nil, err
	}
	msg.Raw = json.RawMessage(req.Body)
	return &channels.Parsed{Messages: []envelope.Message{msg}}, nil
}

// isForm reports whether the request is form-encoded: an interactivity
// payload (interact.go) rather than an Events API delivery.
func isForm(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "application/x-www-form-urlencoded"
}

// handshake answers url_verification with {"challenge": ...}.
func handshake(challenge string) (*channels.Parsed, error) {
	if challenge == "" {
		return nil, channels.BadRequestf("slack: url_verification without challenge")
	}
	body, err := json.Marshal(map[string]string{"challenge": challenge})
	if err != nil {
		return nil, channels.BadRequestf("slack: challenge: %v", err)
	}
	return &channels.Parsed{Reply: &channels.Reply{
		Status:      http.StatusOK,
		ContentType: "application/json",
		Body:        body,
	}}, nil
}

// message maps a message event to an envelope (without Raw).
func (in *inbound) message(ctx context.Context, p outerPayload, ev *messageEvent) (envelope.Message, error) {
	if ev.Channel == "" {
		return envelope.Message{}, channels.BadRequestf("slack: message event without channel")
	}
	msg := envelope.Message{
		ChannelType:     envelope.ChannelSlack,
		SourceMessageID: p.EventID,
		Conversation:    envelope.Conversation{ID: ev.Channel, Type: conversationType(ev.ChannelType, ev.Channel)},
		Attachments:     []envelope.Attachment{},
	}
	// body is the message whose content and ids the envelope carries.
	body := ev
	switch ev.Subtype {
	case "message_changed":
		if ev.Message == nil {
			return envelope.Message{}, channels.BadRequestf("slack: message_changed without message")
		}
		body = ev.Message
		msg.Edited = true
	case "message_deleted":
		msg.Deleted = true
		body = ev.PreviousMessage
		if body == nil { // Slack normally sends it; keep the delete anyway
			body = &messageEvent{TS: cmp.Or(ev.DeletedTS, ev.TS)}
		}
	}
	if body.TS == "" {
		return envelope.Message{}, channels.BadRequestf("slack: message event without ts")
	}
	sentAt, err := parseTS(body.TS)
	if err != nil {
		return envelope.Message{}, channels.BadRequestf("slack: message ts %q: %v", body.TS, err)
	}
	msg.SentAt = sentAt
	// ts is the message's id in its channel: message_changed carries the
	// original's ts in message.ts, message_deleted in deleted_ts.
	if msg.Edited || msg.Deleted {
		msg.EditOf = envelope.NewEditRef(body.TS)
	} else {
		msg.PlatformMessageID = body.TS
	}
	if body.ThreadTS != "" && body.ThreadTS != body.TS {
		msg.ThreadID = body.ThreadTS
	}
	msg.Sender = envelope.Sender{ID: body.User, IsBot: body.BotID != "" || body.Subtype == "bot_message"}
	if msg.Sender.ID == "" {
		msg.Sender.ID = body.BotID
	}
	if msg.Sender.ID == "" && !msg.Deleted {
		return envelope.Message{}, channels.BadRequestf("slack: message event without user or bot_id")
	}
	if !msg.Deleted {
		msg.Text = plainText(body.Text)
		msg.Attachments = attachments(body.Files)
	}
	switch {
	case body.Username != "":
		msg.Sender.DisplayName = body.Username
	case body.BotProfile != nil && body.BotProfile.Name != "":
		msg.Sender.DisplayName = body.BotProfile.Name
	case body.User != "":
		team := p.TeamID
		if team == "" {
			team = ev.Team
		}
		msg.Sender.DisplayName = in.ch.displayName(ctx, in.cfg.APIBaseURL, in.accountID, in.cfg.Tokens, team, body.User)
	}
	return msg, nil
}

// conversationType maps channel_type, falling back to the channel id's
// prefix (D: im, G: private channel or group DM, C: public channel).
func conversationType(channelType, channelID string) string {
	switch channelType {
	case "im":
		return envelope.ConversationDM
	case "mpim", "group":
		return envelope.ConversationGroup
	case "channel":
		return envelope.ConversationChannel
	}
	switch {
	case strings.HasPrefix(channelID, "D"):
		return envelope.ConversationDM
	case strings.HasPrefix(channelID, "G"):
		return envelope.ConversationGroup
	default:
		return envelope.ConversationChannel
	}
}

// attachments maps files[] to pending attachments. A file without a URL
// (hidden_by_limit, external) keeps its id as a Ref to resolve with
// files.info; a file with neither is dropped.
func attachments(files []file) []envelope.Attachment {
	out := make([]envelope.Attachment, 0, len(files))
	for _, f := range files {
		src := &envelope.AttachmentSource{URL: f.URLPrivateDownload}
		if src.URL == "" {
			src.URL = f.URLPrivate
		}
		if src.URL == "" {
			if f.ID == "" {
				continue
			}
			src.Ref = f.ID
		}
		name := f.Name
		if name == "" {
			name = f.Title
		}
		size := f.Size
		if size < 0 {
			size = 0
		}
		out = append(out, envelope.Attachment{
			Kind:     channels.AttachmentKind(f.Mimetype),
			Name:     name,
			MimeType: f.Mimetype,
			Size:     size,
			Status:   envelope.AttachmentPending,
			Source:   src,
		})
	}
	return out
}

// parseTS parses a Slack ts ("1531420618.000200": unix seconds, a dot and
// a fraction) into a UTC time.
func parseTS(ts string) (time.Time, error) {
	secPart, frac, _ := strings.Cut(ts, ".")
	if secPart == "" || len(secPart) > 12 || !allDigits(secPart) || len(frac) > 9 || !allDigits(frac) {
		return time.Time{}, fmt.Errorf("not a Slack timestamp")
	}
	sec, err := strconv.ParseInt(secPart, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	var nsec int64
	if frac != "" {
		nsec, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		if err != nil {
			return time.Time{}, err
		}
	}
	return time.Unix(sec, nsec).UTC(), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// plainText turns Slack mrkdwn into plain text: control sequences become
// their readable form (<@U1> -> @U1, <#C1|general> -> #general, <!here> ->
// @here, <https://x|label> -> "label (https://x)") and the three escaped
// characters (&amp; &lt; &gt;) are restored. Formatting marks such as
// *bold* are kept; the original text stays in Raw.
func plainText(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			break
		}
		b.WriteString(unescape(s[:i]))
		b.WriteString(controlSequence(s[i+1 : i+j]))
		s = s[i+j+1:]
	}
	b.WriteString(unescape(s))
	return b.String()
}

// controlSequence renders the inside of one <...> sequence.
func controlSequence(seq string) string {
	target, label, _ := strings.Cut(seq, "|")
	target, label = unescape(target), unescape(label)
	switch {
	case strings.HasPrefix(target, "@"): // user mention <@U123|name>
		if label != "" {
			return "@" + strings.TrimPrefix(label, "@")
		}
		return target
	case strings.HasPrefix(target, "#"): // channel mention <#C123|general>
		if label != "" {
			return "#" + strings.TrimPrefix(label, "#")
		}
		return target
	case strings.HasPrefix(target, "!"): // <!here>, <!subteam^S1|@team>, <!date^...|fallback>
		if label != "" {
			return label
		}
		name, _, _ := strings.Cut(target[1:], "^")
		return "@" + name
	}
	if label == "" || label == target || "mailto:"+label == target {
		if label != "" {
			return label
		}
		return target
	}
	return label + " (" + target + ")"
}

var unescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

func unescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return unescaper.Replace(s)
}
