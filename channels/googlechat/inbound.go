package googlechat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Leeway is the clock skew allowed on a token's exp, nbf and iat.
const Leeway = time.Minute

// Event types of Chat's interaction events.
const (
	EventMessage          = "MESSAGE"
	EventAddedToSpace     = "ADDED_TO_SPACE"
	EventRemovedFromSpace = "REMOVED_FROM_SPACE"
	EventCardClicked      = "CARD_CLICKED"
)

type inbound struct {
	cfg  Config
	keys *keyCache
}

var _ channels.Inbound = (*inbound)(nil)

// chatClaims are the claims of both token forms.
type chatClaims struct {
	jwt.RegisteredClaims
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
}

// Verify authenticates the bearer token in Authorization: RS256, signed by
// a key of the form's key set, unexpired (Leeway of skew), issued by Chat
// for this account's audience. A project-number token is issued by
// chat@system.gserviceaccount.com for ProjectNumber; an ID token is issued
// by accounts.google.com for EndpointURL with the verified email
// chat@system.gserviceaccount.com. The token does not cover the body.
func (in *inbound) Verify(ctx context.Context, req *channels.Request) error {
	if req == nil {
		return channels.Unauthorizedf("google_chat: no request")
	}
	raw, ok := bearer(req.Header.Get("Authorization"))
	if !ok {
		return channels.Unauthorizedf("google_chat: missing bearer token")
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	var unverified chatClaims
	if _, _, err := jwt.NewParser().ParseUnverified(raw, &unverified); err != nil {
		return channels.Unauthorizedf("google_chat: malformed token")
	}
	var url, format, aud string
	switch unverified.Issuer {
	case ChatIssuer:
		url, format, aud = in.cfg.CertsURL, formatX509, in.cfg.ProjectNumber
	case OIDCIssuer, strings.TrimPrefix(OIDCIssuer, "https://"):
		url, format, aud = in.cfg.OIDCCertsURL, formatJWKS, in.cfg.EndpointURL
	default:
		return channels.Unauthorizedf("google_chat: token not issued by Chat")
	}
	if aud == "" {
		return channels.Unauthorizedf("google_chat: the account takes no tokens of issuer %s", unverified.Issuer)
	}
	var claims chatClaims
	var keyErr error
	_, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, err := in.keys.key(ctx, url, format, kid)
		keyErr = err
		return k, err
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(aud), jwt.WithIssuer(unverified.Issuer),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(Leeway),
		jwt.WithTimeFunc(func() time.Time { return now }))
	switch {
	case keyErr != nil && !errors.Is(keyErr, errUnknownKey):
		// Google's keys could not be read: not a verdict on the token.
		// Transient, answered 503 so that the event is delivered again.
		return &channels.TransientError{Err: fmt.Errorf("google_chat: keys unavailable: %w", keyErr)}
	case errors.Is(err, jwt.ErrTokenExpired):
		return channels.Unauthorizedf("google_chat: token expired")
	case err != nil:
		return channels.Unauthorizedf("google_chat: invalid token")
	case format == formatJWKS && (claims.Email != ChatIssuer || !claims.EmailVerified):
		return channels.Unauthorizedf("google_chat: ID token not of %s", ChatIssuer)
	}
	return nil
}

// bearer reads "Bearer <token>" (scheme case-insensitive).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	tok = strings.TrimSpace(tok)
	return tok, ok && strings.EqualFold(scheme, "Bearer") && tok != ""
}

// Chat's event, as much of it as MIO reads.
type event struct {
	Type      string   `json:"type"`
	EventTime string   `json:"eventTime"`
	Message   *message `json:"message"`
	User      *user    `json:"user"`
	Space     *space   `json:"space"`
	// Chat is the event of a Chat app built as a Google Workspace
	// add-on, a format MIO does not read.
	Chat   json.RawMessage `json:"chat"`
	Action *struct {
		ActionMethodName string `json:"actionMethodName"`
		Parameters       []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"parameters"`
	} `json:"action"`
	// Common is the event's common object: on a card click the invoked
	// function, its parameters and the card's inputs.
	Common *struct {
		InvokedFunction string            `json:"invokedFunction"`
		Parameters      map[string]string `json:"parameters"`
		FormInputs      map[string]struct {
			StringInputs *struct {
				Value []string `json:"value"`
			} `json:"stringInputs"`
		} `json:"formInputs"`
	} `json:"common"`
}

type message struct {
	Name           string  `json:"name"`
	Sender         *user   `json:"sender"`
	CreateTime     string  `json:"createTime"`
	LastUpdateTime string  `json:"lastUpdateTime"`
	Text           string  `json:"text"`
	Thread         *thread `json:"thread"`
	Space          *space  `json:"space"`
	Attachment     []struct {
		Name              string `json:"name"`
		ContentName       string `json:"contentName"`
		ContentType       string `json:"contentType"`
		AttachmentDataRef *struct {
			ResourceName string `json:"resourceName"`
		} `json:"attachmentDataRef"`
	} `json:"attachment"`
	QuotedMessageMetadata *struct {
		Name string `json:"name"`
	} `json:"quotedMessageMetadata"`
}

type user struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	Type        string `json:"type"`
}

type space struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	SpaceType   string `json:"spaceType"`
	DisplayName string `json:"displayName"`
}

type thread struct {
	Name string `json:"name"`
}

// emptyReply is the answer to every event: an empty message response
// (the app answers later through the API).
var emptyReply = &channels.Reply{Status: 200, ContentType: channels.MediaTypeJSON, Body: []byte("{}")}

// Parse turns one event into at most one message. MESSAGE (and
// ADDED_TO_SPACE when the app was added by a mention, which carries the
// message) stores the message, its dedup key the message's resource name
// (with its lastUpdateTime for an edit); CARD_CLICKED is an interaction
// (cardClicked); REMOVED_FROM_SPACE and other events store nothing.
func (in *inbound) Parse(_ context.Context, req *channels.Request) (*channels.Parsed, error) {
	if req == nil {
		return nil, channels.BadRequestf("google_chat: no request")
	}
	if err := channels.CheckContentType(req.Header, channels.MediaTypeJSON); err != nil {
		return nil, fmt.Errorf("google_chat: %w", err)
	}
	var ev event
	if err := channels.UnmarshalJSON(req.Body, &ev); err != nil {
		return nil, channels.BadRequestf("google_chat: body is not an event: %v", err)
	}
	switch ev.Type {
	case "":
		if len(ev.Chat) > 0 {
			return nil, channels.BadRequestf("google_chat: a Google Workspace add-on event: configure the app as a Chat API app (interaction events)")
		}
		return nil, channels.BadRequestf("google_chat: event has no type")
	case EventMessage:
		return in.message(&ev, req.Body)
	case EventAddedToSpace:
		if ev.Message != nil {
			return in.message(&ev, req.Body)
		}
		return ignored("ADDED_TO_SPACE without a message"), nil
	case EventCardClicked:
		return in.cardClicked(&ev, req.Body)
	default:
		return ignored(boundCode(ev.Type) + " event"), nil
	}
}

func ignored(what string) *channels.Parsed {
	return &channels.Parsed{Reply: emptyReply, Ignored: []string{what}}
}

func (in *inbound) message(ev *event, raw []byte) (*channels.Parsed, error) {
	m := ev.Message
	if m == nil || m.Name == "" {
		return nil, channels.BadRequestf("google_chat: %s event has no message name", ev.Type)
	}
	conv, err := conversation(m.Space, ev.Space)
	if err != nil {
		return nil, err
	}
	sender := m.Sender
	if sender == nil || sender.Name == "" {
		sender = ev.User
	}
	if sender == nil || sender.Name == "" {
		return nil, channels.BadRequestf("google_chat: message has no sender")
	}
	msg := envelope.Message{
		ChannelType:       envelope.ChannelGoogleChat,
		SourceMessageID:   m.Name,
		PlatformMessageID: m.Name,
		Conversation:      conv,
		Sender:            toSender(sender),
		Text:              m.Text,
		SentAt:            parseTime(m.CreateTime),
		Raw:               raw,
	}
	if m.Thread != nil {
		msg.ThreadID = m.Thread.Name
	}
	if m.QuotedMessageMetadata != nil {
		msg.ReplyToSourceID = m.QuotedMessageMetadata.Name
	}
	if m.LastUpdateTime != "" && m.LastUpdateTime != m.CreateTime {
		// An edit: a new dedup key per version, pointing at the original.
		msg.Edited = true
		msg.SourceMessageID = m.Name + "@" + m.LastUpdateTime
		msg.EditOf = envelope.NewEditRef(m.Name)
		if t := parseTime(m.LastUpdateTime); !t.IsZero() {
			msg.SentAt = t
		}
	}
	var skipped []string
	for _, a := range m.Attachment {
		if a.AttachmentDataRef == nil || a.AttachmentDataRef.ResourceName == "" {
			// Drive files need the user's Drive scopes, not the app's.
			skipped = append(skipped, "attachment without attachmentDataRef (a Drive file)")
			continue
		}
		msg.Attachments = append(msg.Attachments, envelope.Attachment{
			Kind: channels.AttachmentKind(a.ContentType), Name: a.ContentName, MimeType: a.ContentType,
			Status: envelope.AttachmentPending, Source: &envelope.AttachmentSource{Ref: a.AttachmentDataRef.ResourceName},
		})
	}
	return &channels.Parsed{Messages: []envelope.Message{msg}, Reply: emptyReply, Ignored: skipped}, nil
}

// cardClicked maps a click as an interaction: the action id and value
// are the parameters MIO's card actions carry ("action_id", "value"; a
// select's "input" names the selectionInput whose choice in formInputs is
// the value), else the invoked function (common.invokedFunction, or the
// deprecated action.actionMethodName) and no value, for a card MIO did not
// render. The click's message is the card's. Chat gives a click no id:
// the dedup key is a digest of the event.
func (in *inbound) cardClicked(ev *event, raw []byte) (*channels.Parsed, error) {
	params := map[string]string{}
	function := ""
	if ev.Action != nil {
		function = ev.Action.ActionMethodName
		for _, p := range ev.Action.Parameters {
			params[p.Key] = p.Value
		}
	}
	if ev.Common != nil {
		if ev.Common.InvokedFunction != "" {
			function = ev.Common.InvokedFunction
		}
		for k, v := range ev.Common.Parameters {
			params[k] = v
		}
	}
	it := &envelope.Interaction{ActionID: params[paramActionID], Value: params[paramValue]}
	if it.ActionID == "" {
		it.ActionID = function
	}
	if it.ActionID == "" {
		return nil, channels.BadRequestf("google_chat: CARD_CLICKED event has no action")
	}
	if name := params[paramInput]; name != "" && ev.Common != nil {
		if fi, ok := ev.Common.FormInputs[name]; ok && fi.StringInputs != nil && len(fi.StringInputs.Value) > 0 {
			it.Value = fi.StringInputs.Value[0]
			it.Values = fi.StringInputs.Value
		}
	}
	var sp *space
	if ev.Message != nil {
		sp = ev.Message.Space
	}
	conv, err := conversation(sp, ev.Space)
	if err != nil {
		return nil, err
	}
	if ev.User == nil || ev.User.Name == "" {
		return nil, channels.BadRequestf("google_chat: CARD_CLICKED event has no user")
	}
	sum := sha256.Sum256(raw)
	msg := envelope.Message{
		ChannelType:     envelope.ChannelGoogleChat,
		Kind:            envelope.KindInteraction,
		Interaction:     it,
		SourceMessageID: "card_clicked:" + hex.EncodeToString(sum[:16]),
		Conversation:    conv,
		Sender:          toSender(ev.User),
		Text:            it.Value,
		SentAt:          parseTime(ev.EventTime),
		Raw:             raw,
	}
	if _, ours := params[paramActionID]; !ours {
		// Another card's action: its name and parameters as text.
		msg.Text = foreignActionText(ev, function)
	}
	if ev.Message != nil {
		msg.ReplyToSourceID = ev.Message.Name
		it.MessageID = ev.Message.Name
		if ev.Message.Thread != nil {
			msg.ThreadID = ev.Message.Thread.Name
		}
	}
	return &channels.Parsed{Messages: []envelope.Message{msg}, Reply: emptyReply}, nil
}

// foreignActionText is the text of a click on a card MIO did not render:
// the method name and its parameters ("approve order=42").
func foreignActionText(ev *event, function string) string {
	parts := []string{function}
	if ev.Action != nil {
		for _, p := range ev.Action.Parameters {
			parts = append(parts, p.Key+"="+p.Value)
		}
	}
	return strings.Join(parts, " ")
}

// conversation is the message's space, else the event's: a DM
// (DIRECT_MESSAGE, legacy type DM), a group chat (GROUP_CHAT) or a space.
func conversation(spaces ...*space) (envelope.Conversation, error) {
	for _, s := range spaces {
		if s == nil || s.Name == "" {
			continue
		}
		conv := envelope.Conversation{ID: s.Name, Type: envelope.ConversationChannel, Title: s.DisplayName}
		switch {
		case s.SpaceType == "DIRECT_MESSAGE" || (s.SpaceType == "" && s.Type == "DM"):
			conv.Type = envelope.ConversationDM
		case s.SpaceType == "GROUP_CHAT":
			conv.Type = envelope.ConversationGroup
		}
		return conv, nil
	}
	return envelope.Conversation{}, channels.BadRequestf("google_chat: event has no space")
}

func toSender(u *user) envelope.Sender {
	return envelope.Sender{ID: u.Name, DisplayName: u.DisplayName, IsBot: u.Type == "BOT"}
}

// parseTime reads an RFC 3339 timestamp; zero when absent or malformed.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
