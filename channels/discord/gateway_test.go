package discord

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

func TestParseGatewayConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		settings    string
		credentials string
		want        GatewayConfig
		err         error
	}{
		{name: "defaults", credentials: `{"bot_token":"t"}`,
			want: GatewayConfig{Token: "t", Intents: DefaultGatewayIntents, URL: DefaultGatewayURL}},
		{name: "configured", settings: `{"gateway_intents": 512, "gateway_url": "ws://127.0.0.1:9/gw", "application_id": "42"}`,
			credentials: `{"bot_token":"t"}`, want: GatewayConfig{Token: "t", Intents: 512, URL: "ws://127.0.0.1:9/gw", SelfID: "42"}},
		{name: "no token", err: ErrGatewayOff},
		{name: "turned off", settings: `{"gateway": false}`, credentials: `{"bot_token":"t"}`, err: ErrGatewayOff},
		{name: "http url", settings: `{"gateway_url": "https://x"}`, credentials: `{"bot_token":"t"}`, err: channels.ErrInvalidConfig},
		{name: "bad intents", settings: `{"gateway_intents": -1}`, credentials: `{"bot_token":"t"}`, err: channels.ErrInvalidConfig},
		{name: "token with space", credentials: `{"bot_token":"a b"}`, err: channels.ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			acct := channels.Account{}
			if tc.settings != "" {
				acct.Settings = json.RawMessage(tc.settings)
			}
			if tc.credentials != "" {
				acct.Credentials = json.RawMessage(tc.credentials)
			}
			got, err := ParseGatewayConfig(acct)
			if tc.err != nil {
				require.True(t, errors.Is(err, tc.err), "err %v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseMessageEvent(t *testing.T) {
	t.Parallel()
	create := `{"id":"1100000000000000000","channel_id":"55","guild_id":"9","content":"hi","author":{"id":"7","username":"u","global_name":"User"},
		"attachments":[{"id":"3","filename":"a.png","content_type":"image/png","size":10,"url":"https://cdn.discordapp.com/a.png"}],
		"message_reference":{"message_id":"1000000000000000000"}}`
	p, err := ParseMessageEvent(EventMessageCreate, []byte(create), "")
	require.NoError(t, err)
	require.Len(t, p.Messages, 1)
	m := p.Messages[0]
	require.Equal(t, "1100000000000000000", m.SourceMessageID)
	require.Equal(t, envelope.Conversation{ID: "55", Type: envelope.ConversationChannel}, m.Conversation)
	require.Equal(t, envelope.Sender{ID: "7", DisplayName: "User"}, m.Sender)
	require.Equal(t, "1000000000000000000", m.ReplyToSourceID)
	require.Len(t, m.Attachments, 1)
	require.Equal(t, envelope.KindImage, m.Attachments[0].Kind)

	own, err := ParseMessageEvent(EventMessageCreate, []byte(create), "7")
	require.NoError(t, err)
	require.Empty(t, own.Messages)

	del, err := ParseMessageEvent(EventMessageDelete, []byte(`{"id":"1100000000000000000","channel_id":"55"}`), "")
	require.NoError(t, err)
	require.Equal(t, "1100000000000000000:delete", del.Messages[0].SourceMessageID)
	require.True(t, del.Messages[0].Deleted)

	for name, body := range map[string]string{
		"not json": `{`, "no id": `{"channel_id":"1"}`, "no channel": `{"id":"1"}`,
		"no author": `{"id":"1","channel_id":"1","content":"x"}`,
	} {
		_, err := ParseMessageEvent(EventMessageCreate, []byte(body), "")
		var bre *channels.BadRequestError
		require.ErrorAs(t, err, &bre, name)
	}
}
