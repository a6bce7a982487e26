package console

// channelSetup is what the account wizard asks for a channel and the
// steps it shows with the webhook URL (docs/channels.md has the detail).
type channelSetup struct {
	Name string
	// SettingsExample, CredentialsExample: JSON placeholders for the form.
	SettingsExample    string
	CredentialsExample string
	// SecretLabel names the webhook secret field ("" : none asked).
	SecretLabel string
	Steps       []string
}

// setups are the wizard's channels.
var setups = map[string]channelSetup{
	"webhook": {Name: "Standard Webhooks",
		SettingsExample: `{"endpoint_url":"https://your-app.example/mio"}`,
		SecretLabel:     "Signing secret (whsec_…, base64 after the prefix)",
		Steps: []string{
			"Configure the sender to POST Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature) to the URL below.",
			"Give the sender the same signing secret.",
			"Replies are POSTed to endpoint_url, signed with that secret.",
		}},
	"slack": {Name: "Slack",
		CredentialsExample: `{"bot_token":"xoxb-…"}`,
		SecretLabel:        "Signing secret (Basic Information → App Credentials)",
		Steps: []string{
			"In the Slack app's settings open Event Subscriptions, enable events and paste the URL below as the Request URL (Slack verifies it at once).",
			"Subscribe to the bot events message.channels, message.im (and others you need).",
			"Install the app to the workspace; its Bot User OAuth Token is the bot_token.",
		}},
	"telegram": {Name: "Telegram",
		SettingsExample:    `{"mode":"webhook"}`,
		CredentialsExample: `{"bot_token":"123456:ABC…"}`,
		SecretLabel:        "Secret token (sent by Telegram as X-Telegram-Bot-Api-Secret-Token)",
		Steps: []string{
			"Create the bot with @BotFather; its token is the bot_token.",
			"In webhook mode MIO calls setWebhook with the URL below and the secret token; in polling mode no URL is needed.",
		}},
	"discord": {Name: "Discord",
		CredentialsExample: `{"bot_token":"…"}`,
		SecretLabel:        "Application public key (hex, General Information)",
		Steps: []string{
			"In the Discord developer portal, General Information: paste the URL below as the Interactions Endpoint URL (Discord sends a signed PING).",
			"Bot: copy the bot token into the credentials.",
		}},
	"whatsapp": {Name: "WhatsApp Cloud API",
		SettingsExample:    `{"phone_number_id":"…","graph_version":"v21.0"}`,
		CredentialsExample: `{"access_token":"EAA…","verify_token":"choose-one"}`,
		SecretLabel:        "App secret (App settings → Basic)",
		Steps: []string{
			"In the Meta app's WhatsApp → Configuration, set the callback URL below and the verify_token you chose.",
			"Subscribe the webhook field messages.",
		}},
	"zoho_cliq": {Name: "Zoho Cliq",
		CredentialsExample: `{"access_token":"1000.…"}`,
		SecretLabel:        "Shared token (sent by the bot handler as X-Mio-Token)",
		Steps: []string{
			"In the Cliq bot's message handler, invoke the URL below with the header X-Mio-Token set to the shared token.",
		}},
}
