package discord

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/miohq/mio/channels"
)

// Discord's bot authorization (https://docs.discord.com/developers/topics/oauth2):
// the consent page adds the bot to a server the user picks and redirects
// with a code and the guild_id; exchanging the code answers with the
// guild. A bot token belongs to the application, not to an install, so
// the account's bot_token comes from the app's credentials.
const (
	// AuthorizeURL is Discord's consent page.
	AuthorizeURL = "https://discord.com/oauth2/authorize"
	// DefaultInstallScopes are the scopes an install asks for.
	DefaultInstallScopes = "bot applications.commands"
	// DefaultInstallPermissions is the permission bit set asked for when
	// the install's settings name none: View Channels, Send Messages,
	// Send Messages in Threads, Read Message History.
	DefaultInstallPermissions = "274877975552"
	opInstall                 = "discord: oauth2 token"
)

var _ channels.Installer = (*Channel)(nil)

// appJSON is a Discord app's credentials: its OAuth client and its bot
// token.
type appJSON struct {
	channels.InstallClient
	BotToken string `json:"bot_token"`
}

func (c *Channel) readApp(app channels.InstallApp) (appJSON, json.RawMessage, map[string]string, error) {
	var a appJSON
	if err := channels.ReadInstallClient("discord app credentials", app.Credentials, &a, &a.InstallClient); err != nil {
		return a, nil, nil, err
	}
	if a.BotToken == "" || channels.HasSpaceOrControl(a.BotToken) {
		return a, nil, nil, fmt.Errorf("%w: discord app credentials bot_token is required (the application's bot token: Discord bot tokens are per application)", channels.ErrInvalidConfig)
	}
	settings, params, err := channels.SplitInstallSettings("discord install settings", app.Settings, " ", "scopes", "permissions")
	if err != nil {
		return a, nil, nil, err
	}
	if _, err := c.AccountAPIBase(channels.Account{Settings: settings}); err != nil {
		return a, nil, nil, err
	}
	return a, settings, params, nil
}

// InstallURL returns Discord's bot authorization page for the app
// (credentials client_id, client_secret, bot_token; settings scopes,
// permissions, api_base_url). The application's public key (the webhook
// secret) verifies interactions.
func (c *Channel) InstallURL(app channels.InstallApp, redirectURI, state string) (string, error) {
	a, _, params, err := c.readApp(app)
	if err != nil {
		return "", err
	}
	scopes, perms := params["scopes"], params["permissions"]
	if scopes == "" {
		scopes = DefaultInstallScopes
	}
	if perms == "" {
		perms = DefaultInstallPermissions
	}
	if strings.Trim(perms, "0123456789") != "" {
		return "", fmt.Errorf("%w: discord install settings permissions must be a decimal bit set", channels.ErrInvalidConfig)
	}
	q := url.Values{"client_id": {a.ClientID}, "scope": {scopes}, "permissions": {perms},
		"response_type": {"code"}, "redirect_uri": {redirectURI}, "state": {state}}
	return AuthorizeURL + "?" + q.Encode(), nil
}

// tokenAnswer is Discord's answer to a code exchange with scope bot.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	Error       string `json:"error"`
	Guild       *struct {
		ID string `json:"id"`
	} `json:"guild"`
}

// CompleteInstall exchanges the redirect's code at {api base}/oauth2/token
// (form encoded, the client in HTTP Basic) and takes the guild from the
// answer: the account's external id is the guild id, its credentials the
// app's bot_token, its settings application_id the client id.
func (c *Channel) CompleteInstall(ctx context.Context, app channels.InstallApp, redirectURI string, query url.Values) (*channels.Installed, error) {
	if err := channels.InstallQueryError(query); err != nil {
		return nil, err
	}
	code := query.Get("code")
	if code == "" {
		return nil, &channels.InstallRefusedError{Reason: "no code in the redirect"}
	}
	a, settings, _, err := c.readApp(app)
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	base, _ := c.AccountAPIBase(channels.Account{Settings: settings}) // checked by readApp
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
	req := channels.APIRequest{Op: opInstall, URL: base + "/oauth2/token", Body: []byte(form.Encode()), MaxAnswer: 64 << 10,
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}}
	req.Header.Set("Authorization", "Basic "+basicAuth(a.ClientID, a.ClientSecret))
	resp, err := channels.CallAPI(ctx, c.opts.HTTPClient, req)
	if err != nil {
		return nil, err
	}
	var ans tokenAnswer
	decodeErr := json.Unmarshal(resp.Body, &ans)
	switch {
	case resp.Status == http.StatusTooManyRequests:
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: HTTP 429", opInstall)}
	case resp.Status >= 500:
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: HTTP %d", opInstall, resp.Status)}
	case resp.Status != http.StatusOK && ans.Error != "":
		return nil, channels.Permanent(opInstall, fmt.Errorf("HTTP %d, error %q", resp.Status, boundCode(ans.Error)))
	case resp.Status != http.StatusOK:
		return nil, channels.Permanent(opInstall, fmt.Errorf("HTTP %d", resp.Status))
	case decodeErr != nil || ans.Guild == nil || ans.Guild.ID == "":
		return nil, channels.Permanent(opInstall, fmt.Errorf("the answer names no guild (was the bot scope granted?)"))
	case strings.Trim(ans.Guild.ID, "0123456789") != "":
		return nil, channels.Permanent(opInstall, fmt.Errorf("the answer's guild id is not a snowflake"))
	}
	var s map[string]json.RawMessage
	_ = json.Unmarshal(settings, &s) // an object: SplitInstallSettings made it
	if _, ok := s["application_id"]; !ok {
		s["application_id"], _ = json.Marshal(a.ClientID)
	}
	accountSettings, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	creds, err := json.Marshal(map[string]string{"bot_token": a.BotToken})
	if err != nil {
		return nil, err
	}
	return &channels.Installed{ExternalID: ans.Guild.ID, Credentials: creds, Settings: accountSettings}, nil
}

func basicAuth(clientID, clientSecret string) string {
	return base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID) + ":" + url.QueryEscape(clientSecret)))
}

func boundCode(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	return s[:min(len(s), 64)]
}
