package builtin

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
)

// validAccounts are accounts every decoder of their channel accepts,
// holding each required field of its schema.
var validAccounts = map[string]channels.Account{
	envelope.ChannelSlack: {WebhookSecret: "signing-secret",
		Settings:    json.RawMessage(`{"api_base_url": "https://slack.example/api"}`),
		Credentials: json.RawMessage(`{"bot_token": "xoxb-1"}`)},
	envelope.ChannelTelegram: {WebhookSecret: "secret_token",
		Settings:    json.RawMessage(`{"mode": "webhook", "delete_webhook": false, "api_base_url": "https://telegram.example"}`),
		Credentials: json.RawMessage(`{"bot_token": "123456:ABCdef"}`)},
	envelope.ChannelDiscord: { // Gateway only: no application public key
		Settings: json.RawMessage(`{"application_id": "123456789012345678", "gateway": true, "gateway_intents": 512,
			"gateway_url": "wss://gateway.example", "api_base_url": "https://discord.example/api"}`),
		Credentials: json.RawMessage(`{"bot_token": "bot-token"}`)},
	envelope.ChannelWhatsApp: {WebhookSecret: "app-secret", ExternalID: "1234",
		Settings:    json.RawMessage(`{"phone_number_id": "1234", "graph_version": "v21.0", "api_base_url": "https://graph.example"}`),
		Credentials: json.RawMessage(`{"access_token": "EAA1", "verify_token": "v"}`)},
	envelope.ChannelWebhook: {WebhookSecret: whsec,
		Settings:    json.RawMessage(`{"endpoint_url": "https://app.example/mio"}`),
		Credentials: json.RawMessage(`{"previous_secrets": ["` + whsec + `"]}`)},
	envelope.ChannelGoogleChat: {ExternalID: "123456789012",
		Settings: json.RawMessage(`{"project_number": "123456789012", "endpoint_url": "https://mio.example/webhooks/google_chat/x",
			"api_base_url": "https://chat.example", "token_url": "https://oauth.example/token", "certs_url": "https://keys.example/x509",
			"oidc_certs_url": "https://keys.example/jwks"}`),
		Credentials: googleChatKey()},
	envelope.ChannelZohoCliq: {WebhookSecret: "shared-token",
		Settings:    json.RawMessage(`{"mode": "token", "message_handlers": ["message"], "api_base_url": "https://cliq.example"}`),
		Credentials: json.RawMessage(`{"access_token": "1000.abc"}`)},
	envelope.ChannelTeams: {ExternalID: "00000000-0000-0000-0000-0000000000a1",
		Settings: json.RawMessage(`{"api_base_url": "https://smba.example/teams", "token_url": "https://login.example/token",
			"openid_metadata_url": "https://login.example/openid"}`),
		Credentials: json.RawMessage(`{"app_id": "00000000-0000-0000-0000-0000000000a1", "client_secret": "s3cret", "tenant_id": "contoso.onmicrosoft.com"}`)},
}

// googleChatKey is a service-account key file with a fresh RSA key.
func googleChatKey() json.RawMessage {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "mio-test", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "mio@mio-test.iam.gserviceaccount.com", "client_id": "1", "token_uri": "https://oauth.example/token"})
	return b
}

var whsec = "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))

// wrongValues are JSON values of another type than the field's.
var wrongValues = map[string]string{
	channels.TypeString: `12`, channels.TypeBoolean: `"yes"`, channels.TypeInteger: `"12"`,
	channels.TypeArray: `{}`, channels.TypeObject: `[]`,
}

// TestSchemasMatchDecoders holds each channel's settings and credentials
// schema (Info.Settings, Info.Credentials) to its Config decoders
// (NewInbound, NewOutbound): a field given a value of another type is
// refused with ErrInvalidConfig (the decoder reads that key with that
// type), a required field left out is refused, an account without an
// optional one is still accepted (NewInbound: sending may need one of
// several, as Zoho Cliq's access_token or grant), every key of a valid account is named, and every
// credentials field is secret.
func TestSchemasMatchDecoders(t *testing.T) {
	t.Parallel()
	r := Registry(Options{})
	for _, slug := range r.Types() {
		ch, _ := r.Get(slug)
		base, ok := validAccounts[slug]
		require.True(t, ok, "validAccounts (schema_test.go) has no %s account", slug)
		t.Run(slug, func(t *testing.T) {
			t.Parallel()
			decoders := decodersOf(ch)
			for name, dec := range decoders {
				require.NoError(t, dec(base), "%s refuses the valid account", name)
			}
			info := ch.Info()
			for _, part := range []struct {
				what   string
				fields []channels.Field
			}{{"settings", info.Settings}, {"credentials", info.Credentials}} {
				named := map[string]bool{}
				for _, f := range part.fields {
					named[f.Name] = true
					where := part.what + " " + f.Name
					require.Contains(t, wrongValues, f.Type, where)
					require.NotEmpty(t, f.Description, where)
					require.Equal(t, part.what == "credentials", f.Secret, "%s: exactly the credentials fields are secret", where)
					wrong := edit(t, base, part.what, func(m map[string]json.RawMessage) { m[f.Name] = json.RawMessage(wrongValues[f.Type]) })
					require.True(t, refused(decoders, wrong), "%s: a value that is not %s is accepted: no decoder reads it as one", where, f.Type)
					without := edit(t, base, part.what, func(m map[string]json.RawMessage) { delete(m, f.Name) })
					if f.Required {
						require.True(t, refused(decoders, without), "%s is required but an account without it is accepted", where)
					} else {
						require.NoError(t, decoders["NewInbound"](without), "%s is optional but an account without it is refused", where)
					}
				}
				for k := range object(t, base, part.what) {
					require.True(t, named[k], "%s %s: the valid account holds a key its schema does not name", part.what, k)
				}
			}
		})
	}
}

// decodersOf are the configuration decoders of ch, by name.
func decodersOf(ch channels.Channel) map[string]func(channels.Account) error {
	out := map[string]func(channels.Account) error{
		"NewInbound": func(a channels.Account) error { _, err := ch.NewInbound(a); return err },
	}
	if oc, ok := ch.(channels.OutboundChannel); ok {
		out["NewOutbound"] = func(a channels.Account) error { _, err := oc.NewOutbound(a); return err }
	}
	return out
}

// refused reports whether a decoder refuses acct as an invalid
// configuration.
func refused(decoders map[string]func(channels.Account) error, acct channels.Account) bool {
	for _, name := range slices.Sorted(maps.Keys(decoders)) {
		if err := decoders[name](acct); errors.Is(err, channels.ErrInvalidConfig) {
			return true
		}
	}
	return false
}

func object(t *testing.T, acct channels.Account, what string) map[string]json.RawMessage {
	t.Helper()
	raw := acct.Settings
	if what == "credentials" {
		raw = acct.Credentials
	}
	m := map[string]json.RawMessage{}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &m))
	}
	return m
}

// edit returns acct with its settings or credentials object changed by f.
func edit(t *testing.T, acct channels.Account, what string, f func(map[string]json.RawMessage)) channels.Account {
	t.Helper()
	m := object(t, acct, what)
	f(m)
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	if what == "credentials" {
		acct.Credentials = raw
	} else {
		acct.Settings = raw
	}
	return acct
}
