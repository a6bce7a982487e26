package slack

import (
	"encoding/json"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// Slack's interactivity requests (a click on a Block Kit button or
// select) are POSTed to the app's Interactivity Request URL, signed like
// events, form-encoded with the JSON in the "payload" field.

// interactionPayload is the part of a block_actions payload MIO reads.
type interactionPayload struct {
	Type      string `json:"type"`
	TriggerID string `json:"trigger_id"`
	User      *struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Name     string `json:"name"`
	} `json:"user"`
	Container *struct {
		Type      string `json:"type"`
		MessageTS string `json:"message_ts"`
		ChannelID string `json:"channel_id"`
	} `json:"container"`
	Channel *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"channel"`
	Message *struct {
		TS       string `json:"ts"`
		ThreadTS string `json:"thread_ts"`
	} `json:"message"`
	Actions []blockAction `json:"actions"`
}

// blockAction is one element of actions[]: a button (value) or a select
// (selected_option, selected_options).
type blockAction struct {
	ActionID       string        `json:"action_id"`
	Type           string        `json:"type"`
	Value          string        `json:"value"`
	ActionTS       string        `json:"action_ts"`
	SelectedOption *selectOption `json:"selected_option"`
	// SelectedOptions are a multi-select's choices.
	SelectedOptions []selectOption `json:"selected_options"`
}

type selectOption struct {
	Value string `json:"value"`
}

// parseInteraction turns a form-encoded block_actions payload into one
// interaction envelope per action (Slack sends one). The dedup key is the
// payload's trigger_id (one per click), with ":1", ":2", ... for further
// actions. Other payload types (view_submission, shortcut, ...) yield
// nothing.
func parseInteraction(body []byte) (*channels.Parsed, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, channels.BadRequestf("slack: malformed form body: %v", err)
	}
	raw := form.Get("payload")
	if raw == "" {
		return nil, channels.BadRequestf("slack: form body without payload")
	}
	if !utf8.ValidString(raw) {
		return nil, channels.BadRequestf("slack: payload is not valid UTF-8")
	}
	var p interactionPayload
	if err := channels.UnmarshalJSON([]byte(raw), &p); err != nil {
		return nil, channels.BadRequestf("slack: malformed interaction payload: %v", err)
	}
	switch {
	case p.Type == "":
		return nil, channels.BadRequestf("slack: interaction payload without type")
	case p.Type != "block_actions":
		return &channels.Parsed{Ignored: []string{"slack: interaction payload of type " + strconv.Quote(channels.Truncate(p.Type, 40)) + " is not stored"}}, nil
	case p.TriggerID == "":
		return nil, channels.BadRequestf("slack: block_actions without trigger_id")
	case p.User == nil || p.User.ID == "":
		return nil, channels.BadRequestf("slack: block_actions without user.id")
	}
	conv := envelope.Conversation{}
	var messageTS, threadTS string
	if p.Container != nil {
		conv.ID, messageTS = p.Container.ChannelID, p.Container.MessageTS
	}
	if p.Channel != nil {
		if conv.ID == "" {
			conv.ID = p.Channel.ID
		}
		conv.Title = p.Channel.Name
	}
	if p.Message != nil {
		if messageTS == "" {
			messageTS = p.Message.TS
		}
		if p.Message.ThreadTS != "" && p.Message.ThreadTS != messageTS {
			threadTS = p.Message.ThreadTS
		}
	}
	if conv.ID == "" {
		return nil, channels.BadRequestf("slack: block_actions without a channel (a click in a modal or the App Home is not stored)")
	}
	conv.Type = conversationType("", conv.ID)
	display := p.User.Username
	if display == "" {
		display = p.User.Name
	}
	out := &channels.Parsed{}
	for i, a := range p.Actions {
		if a.ActionID == "" {
			return nil, channels.BadRequestf("slack: actions[%d] without action_id", i)
		}
		it := &envelope.Interaction{ActionID: a.ActionID, Value: a.Value, MessageID: messageTS}
		if a.SelectedOption != nil {
			it.Value = a.SelectedOption.Value
			it.Values = []string{it.Value}
		}
		for _, o := range a.SelectedOptions {
			it.Values = append(it.Values, o.Value)
		}
		id := p.TriggerID
		if i > 0 {
			id += ":" + strconv.Itoa(i)
		}
		msg := envelope.Message{
			Kind: envelope.KindInteraction, Interaction: it, ChannelType: envelope.ChannelSlack,
			SourceMessageID: id, Conversation: conv, ThreadID: threadTS, ReplyToSourceID: messageTS,
			Sender: envelope.Sender{ID: p.User.ID, DisplayName: display}, Text: it.Value,
			Attachments: []envelope.Attachment{}, Raw: json.RawMessage(raw),
		}
		if msg.Text == "" {
			msg.Text = a.ActionID
		}
		if t, err := parseTS(a.ActionTS); err == nil {
			msg.SentAt = t
		}
		out.Messages = append(out.Messages, msg)
	}
	return out, nil
}

// reactionEvent is a reaction_added or reaction_removed event.
type reactionEvent struct {
	Type     string `json:"type"`
	User     string `json:"user"`
	Reaction string `json:"reaction"`
	Item     struct {
		Type    string `json:"type"`
		Channel string `json:"channel"`
		TS      string `json:"ts"`
	} `json:"item"`
	EventTS string `json:"event_ts"`
}

// reaction maps a reaction event on a message to a reaction envelope (nil
// for reactions on files and file comments). Emoji is Slack's name
// ("thumbsup", "+1::skin-tone-2").
func reaction(eventID string, event json.RawMessage) (*envelope.Message, error) {
	var ev reactionEvent
	if err := channels.UnmarshalJSON(event, &ev); err != nil {
		return nil, channels.BadRequestf("slack: malformed %s event: %v", "reaction", err)
	}
	if ev.Item.Type != "message" {
		return nil, nil
	}
	switch {
	case ev.Item.Channel == "" || ev.Item.TS == "":
		return nil, channels.BadRequestf("slack: %s without item.channel or item.ts", ev.Type)
	case ev.User == "" || ev.Reaction == "":
		return nil, channels.BadRequestf("slack: %s without user or reaction", ev.Type)
	}
	r := &envelope.Reaction{Emoji: ev.Reaction, Added: ev.Type == "reaction_added", MessageID: ev.Item.TS}
	msg := &envelope.Message{
		Kind: envelope.KindReaction, Reaction: r, ChannelType: envelope.ChannelSlack, SourceMessageID: eventID,
		Conversation: envelope.Conversation{ID: ev.Item.Channel, Type: conversationType("", ev.Item.Channel)},
		Sender:       envelope.Sender{ID: ev.User}, Text: ev.Reaction, ReplyToSourceID: ev.Item.TS,
		Attachments: []envelope.Attachment{},
	}
	if t, err := parseTS(ev.EventTS); err == nil {
		msg.SentAt = t
	}
	return msg, nil
}
