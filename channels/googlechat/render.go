package googlechat

import (
	"html"
	"strings"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// MaxTextLength is Chat's limit on a message's text (4,096 characters).
const MaxTextLength = 4096

// cardID names the one card MIO sends per message.
const cardID = "mio"

// chatMessage is the body of a create or update: text and cards v2.
type chatMessage struct {
	Text    string       `json:"text,omitempty"`
	CardsV2 []cardWithID `json:"cardsV2,omitempty"`
	Thread  *threadRef   `json:"thread,omitempty"`
}

type threadRef struct {
	Name string `json:"name"`
}

type cardWithID struct {
	CardID string `json:"cardId"`
	Card   card   `json:"card"`
}

type card struct {
	Header   *cardHeader `json:"header,omitempty"`
	Sections []section   `json:"sections"`
}

type cardHeader struct {
	Title string `json:"title"`
}

type section struct {
	Widgets []widget `json:"widgets"`
}

// widget is one of textParagraph, image, buttonList, selectionInput.
type widget struct {
	TextParagraph  *textParagraph  `json:"textParagraph,omitempty"`
	Image          *image          `json:"image,omitempty"`
	ButtonList     *buttonList     `json:"buttonList,omitempty"`
	SelectionInput *selectionInput `json:"selectionInput,omitempty"`
}

// selectionInput is a select's DROPDOWN: choosing calls onChangeAction,
// a CARD_CLICKED event with the choice in common.formInputs[name].
type selectionInput struct {
	Name           string          `json:"name"`
	Label          string          `json:"label,omitempty"`
	Type           string          `json:"type"`
	Items          []selectionItem `json:"items"`
	OnChangeAction *action         `json:"onChangeAction"`
}

type selectionItem struct {
	Text     string `json:"text"`
	Value    string `json:"value"`
	Selected bool   `json:"selected"`
}

type textParagraph struct {
	Text string `json:"text"`
}

type image struct {
	ImageURL string `json:"imageUrl"`
	AltText  string `json:"altText,omitempty"`
}

type buttonList struct {
	Buttons []button `json:"buttons"`
}

type button struct {
	Text    string  `json:"text"`
	OnClick onClick `json:"onClick"`
}

// onClick opens a link or calls the app back: a CARD_CLICKED event whose
// invoked function (actionMethodName) is the button's action id and whose
// parameters carry "action_id" and "value".
type onClick struct {
	OpenLink *openLink `json:"openLink,omitempty"`
	Action   *action   `json:"action,omitempty"`
}

type openLink struct {
	URL string `json:"url"`
}

type action struct {
	Function   string        `json:"function"`
	Parameters []actionParam `json:"parameters,omitempty"`
}

type actionParam struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Keys of the parameters MIO's card actions carry (inbound.go reads them).
const (
	paramActionID = "action_id"
	paramValue    = "value"
	// paramInput names the selectionInput whose choice is the value.
	paramInput = "input"
)

// render builds the message body of msg: its text with one line per
// attachment URL (Chat takes no attachment by URL), cut at
// MaxTextLength, and a cardsV2 card for rich content: the title as the
// header, one widget per block (text and labels as paragraphs, lists as
// bulleted lines, tables as aligned lines, images as images) and the
// buttons in a button list — URL buttons open the link, callback buttons
// send a CARD_CLICKED event naming their action id and value — and each
// select as a DROPDOWN selectionInput. A message with neither text nor a
// card is refused.
func render(msg *channels.OutboundMessage) (*chatMessage, error) {
	var parts []string
	if strings.TrimSpace(msg.Text) != "" {
		parts = append(parts, msg.Text)
	}
	parts = append(parts, channels.AttachmentLines(msg.Attachments)...)
	body := &chatMessage{Text: channels.Truncate(strings.Join(parts, "\n"), MaxTextLength)}
	if rc := msg.RichContent; rc != nil && (strings.TrimSpace(rc.Title) != "" || len(rc.Blocks) > 0 || len(rc.Buttons) > 0 || len(rc.Selects) > 0) {
		c := card{Sections: []section{{Widgets: widgets(rc)}}}
		if t := strings.TrimSpace(rc.Title); t != "" {
			c.Header = &cardHeader{Title: t}
		}
		body.CardsV2 = []cardWithID{{CardID: cardID, Card: c}}
	}
	if body.Text == "" && body.CardsV2 == nil {
		return nil, errEmpty
	}
	return body, nil
}

func widgets(rc *envelope.RichContent) []widget {
	ws := []widget{}
	para := func(s string) { ws = append(ws, widget{TextParagraph: &textParagraph{Text: s}}) }
	for _, b := range rc.Blocks {
		switch b.Type {
		case envelope.BlockText:
			para(html.EscapeString(b.Text))
		case envelope.BlockLabel:
			para("<b>" + html.EscapeString(b.Text) + "</b>")
		case envelope.BlockList:
			lines := make([]string, len(b.Items))
			for i, it := range b.Items {
				lines[i] = "• " + html.EscapeString(it)
			}
			para(strings.Join(lines, "<br>"))
		case envelope.BlockTable:
			if t := channels.AlignedTable(b.Rows); t != "" {
				para(strings.ReplaceAll(html.EscapeString(t), "\n", "<br>"))
			}
		case envelope.BlockImage:
			if b.URL != "" {
				ws = append(ws, widget{Image: &image{ImageURL: b.URL, AltText: b.Alt}})
			}
		}
	}
	var buttons []button
	for _, b := range rc.Buttons {
		switch {
		case b.Label == "":
		case b.URL != "":
			buttons = append(buttons, button{Text: b.Label, OnClick: onClick{OpenLink: &openLink{URL: b.URL}}})
		default:
			id, value := envelope.SplitCallbackData(b.CallbackData())
			buttons = append(buttons, button{Text: b.Label, OnClick: onClick{Action: &action{Function: id,
				Parameters: []actionParam{{Key: paramActionID, Value: id}, {Key: paramValue, Value: value}}}}})
		}
	}
	if len(buttons) > 0 {
		ws = append(ws, widget{ButtonList: &buttonList{Buttons: buttons}})
	}
	for _, sel := range rc.Selects {
		in := &selectionInput{Name: sel.ActionID, Label: sel.Placeholder, Type: "DROPDOWN",
			OnChangeAction: &action{Function: sel.ActionID,
				Parameters: []actionParam{{Key: paramActionID, Value: sel.ActionID}, {Key: paramInput, Value: sel.ActionID}}}}
		for _, o := range sel.Options {
			in.Items = append(in.Items, selectionItem{Text: o.Label, Value: o.Value})
		}
		ws = append(ws, widget{SelectionInput: in})
	}
	return ws
}
