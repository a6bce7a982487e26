package teams

import (
	"errors"
	"strings"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Adaptive Cards.
const (
	ContentTypeAdaptiveCard = "application/vnd.microsoft.card.adaptive"
	adaptiveCardSchema      = "http://adaptivecards.io/schemas/adaptive-card.json"
	// adaptiveCardVersion is the newest version Teams renders everywhere
	// (desktop, web and mobile).
	adaptiveCardVersion = "1.4"
)

// outActivity is the activity MIO posts (send, reply, update, typing).
type outActivity struct {
	Type        string          `json:"type"`
	ID          string          `json:"id,omitempty"`
	Text        string          `json:"text,omitempty"`
	TextFormat  string          `json:"textFormat,omitempty"`
	ReplyToID   string          `json:"replyToId,omitempty"`
	Attachments []outAttachment `json:"attachments,omitempty"`
	Entities    []streamInfo    `json:"entities,omitempty"`
}

// streamInfo is the streaminfo entity of a streamed reply's activities
// (stream.go).
type streamInfo struct {
	Type           string `json:"type"` // "streaminfo"
	StreamID       string `json:"streamId,omitempty"`
	StreamType     string `json:"streamType"` // informative, streaming or final
	StreamSequence int    `json:"streamSequence,omitempty"`
}

type outAttachment struct {
	ContentType string        `json:"contentType"`
	Content     *adaptiveCard `json:"content"`
}

type adaptiveCard struct {
	Type    string           `json:"type"`
	Schema  string           `json:"$schema"`
	Version string           `json:"version"`
	Body    []cardElement    `json:"body"`
	Actions []cardAction     `json:"actions,omitempty"`
	MSTeams *cardTeamsLayout `json:"msteams,omitempty"`
}

type cardTeamsLayout struct {
	Width string `json:"width"`
}

// cardElement is a TextBlock, an Image or an Input.ChoiceSet.
type cardElement struct {
	Type     string `json:"type"`
	ID       string `json:"id,omitempty"`
	Text     string `json:"text,omitempty"`
	Wrap     bool   `json:"wrap,omitempty"`
	Size     string `json:"size,omitempty"`
	Weight   string `json:"weight,omitempty"`
	IsSubtle bool   `json:"isSubtle,omitempty"`
	FontType string `json:"fontType,omitempty"`
	URL      string `json:"url,omitempty"`
	AltText  string `json:"altText,omitempty"`
	// Input.ChoiceSet
	Style       string       `json:"style,omitempty"`
	Placeholder string       `json:"placeholder,omitempty"`
	Choices     []cardChoice `json:"choices,omitempty"`
}

type cardChoice struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

// cardAction is Action.OpenUrl or Action.Execute.
type cardAction struct {
	Type  string            `json:"type"`
	Title string            `json:"title"`
	URL   string            `json:"url,omitempty"`
	Verb  string            `json:"verb,omitempty"`
	Data  map[string]string `json:"data,omitempty"`
}

// SelectInputPrefix prefixes the id of the Input.ChoiceSet of a select:
// "select:<action id>", named by the Action.Execute's data "input".
const SelectInputPrefix = "select:"

// DefaultSelectTitle is the title of a select's Action.Execute when the
// select has no placeholder.
const DefaultSelectTitle = "Choose"

// render builds the message activity of msg: its text (markdown) with one
// line per attachment URL, and rich_content as an Adaptive Card — the
// title as a large TextBlock, text and label blocks as TextBlocks, lists
// as markdown lists, tables as monospace aligned text, images as Image,
// URL buttons as Action.OpenUrl and callback buttons as Action.Execute
// with verb the action id and data {"action_id", "value"}, which Teams
// posts back as an adaptiveCard/action invoke; a select is an
// Input.ChoiceSet (compact) and an Action.Execute whose data names it.
func render(msg *channels.OutboundMessage) (*outActivity, error) {
	var parts []string
	if strings.TrimSpace(msg.Text) != "" {
		parts = append(parts, msg.Text)
	}
	parts = append(parts, channels.AttachmentLines(msg.Attachments)...)
	act := &outActivity{Type: "message", Text: strings.Join(parts, "\n\n"), TextFormat: "markdown"}
	if rc := msg.RichContent; rc != nil && (strings.TrimSpace(rc.Title) != "" || len(rc.Blocks) > 0 || len(rc.Buttons) > 0 || len(rc.Selects) > 0) {
		card, err := renderCard(rc)
		if err != nil {
			return nil, err
		}
		act.Attachments = []outAttachment{{ContentType: ContentTypeAdaptiveCard, Content: card}}
	}
	if act.Text == "" && len(act.Attachments) == 0 {
		return nil, errors.New("empty message: no text, rich content or attachments")
	}
	return act, nil
}

func renderCard(rc *envelope.RichContent) (*adaptiveCard, error) {
	card := &adaptiveCard{Type: "AdaptiveCard", Schema: adaptiveCardSchema, Version: adaptiveCardVersion,
		Body: []cardElement{}, MSTeams: &cardTeamsLayout{Width: "Full"}}
	if t := strings.TrimSpace(rc.Title); t != "" {
		card.Body = append(card.Body, cardElement{Type: "TextBlock", Text: t, Wrap: true, Size: "Large", Weight: "Bolder"})
	}
	for _, b := range rc.Blocks {
		if el, ok := blockElement(b); ok {
			card.Body = append(card.Body, el)
		}
	}
	for _, b := range rc.Buttons {
		switch {
		case b.Label == "":
			return nil, errors.New("a button has no label")
		case b.URL != "":
			card.Actions = append(card.Actions, cardAction{Type: "Action.OpenUrl", Title: b.Label, URL: b.URL})
		default:
			// The click comes back as an adaptiveCard/action invoke whose
			// action carries this data (inbound.go, executed).
			action, value := envelope.SplitCallbackData(b.CallbackData())
			card.Actions = append(card.Actions, cardAction{Type: "Action.Execute", Title: b.Label, Verb: action,
				Data: map[string]string{"action_id": action, "value": value}})
		}
	}
	for _, sel := range rc.Selects {
		input := SelectInputPrefix + sel.ActionID
		set := cardElement{Type: "Input.ChoiceSet", ID: input, Style: "compact", Placeholder: sel.Placeholder}
		for _, o := range sel.Options {
			set.Choices = append(set.Choices, cardChoice{Title: o.Label, Value: o.Value})
		}
		card.Body = append(card.Body, set)
		title := sel.Placeholder
		if title == "" {
			title = DefaultSelectTitle
		}
		card.Actions = append(card.Actions, cardAction{Type: "Action.Execute", Title: title, Verb: sel.ActionID,
			Data: map[string]string{"action_id": sel.ActionID, "input": input}})
	}
	return card, nil
}

func blockElement(b envelope.RichBlock) (cardElement, bool) {
	switch b.Type {
	case envelope.BlockList:
		if len(b.Items) == 0 {
			return cardElement{}, false
		}
		lines := make([]string, len(b.Items))
		for i, it := range b.Items {
			lines[i] = "- " + it
		}
		return cardElement{Type: "TextBlock", Text: strings.Join(lines, "\n"), Wrap: true}, true
	case envelope.BlockTable:
		if len(b.Rows) == 0 {
			return cardElement{}, false
		}
		return cardElement{Type: "TextBlock", Text: channels.AlignedTable(b.Rows), Wrap: true, FontType: "Monospace"}, true
	case envelope.BlockImage:
		if b.URL == "" {
			return cardElement{}, false
		}
		return cardElement{Type: "Image", URL: b.URL, AltText: b.Alt}, true
	case envelope.BlockLabel:
		if strings.TrimSpace(b.Text) == "" {
			return cardElement{}, false
		}
		return cardElement{Type: "TextBlock", Text: b.Text, Wrap: true, IsSubtle: true, Weight: "Bolder"}, true
	}
	if strings.TrimSpace(b.Text) == "" {
		return cardElement{}, false
	}
	return cardElement{Type: "TextBlock", Text: b.Text, Wrap: true}, true
}
