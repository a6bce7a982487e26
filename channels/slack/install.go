package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/miohq/mio/channels"
)

// Slack's OAuth v2 install (https://docs.slack.dev/authentication/installing-with-oauth).
const (
	// AuthorizeURL is Slack's consent page.
	AuthorizeURL = "https://slack.com/oauth/v2/authorize"
	// DefaultScopes are the bot scopes an install asks for when its
	// settings name none: sends and edits, sender names, history and
	// files.
	DefaultScopes = "chat:write,users:read,channels:history,groups:history,im:history,mpim:history,files:read"
)

var _ channels.Installer = (*Channel)(nil)

// InstallURL returns Slack's consent page for the app (credentials
// client_id, client_secret; settings scopes, user_scopes, api_base_url).
// The signing secret (the webhook secret) is required: events cannot be
// verified without it.
func (c *Channel) InstallURL(app channels.InstallApp, redirectURI, state string) (string, error) {
	var client channels.InstallClient
	if err := channels.ReadInstallClient("slack app credentials", app.Credentials, &client, &client); err != nil {
		return "", err
	}
	settings, params, err := channels.SplitInstallSettings("slack install settings", app.Settings, ",", "scopes", "user_scopes")
	if err != nil {
		return "", err
	}
	if _, err := c.accountAPIBase(channels.Account{Settings: settings}); err != nil {
		return "", err
	}
	if strings.TrimSpace(app.WebhookSecret) == "" {
		return "", invalidf("the app's signing secret (the webhook secret) is required")
	}
	scopes := params["scopes"]
	if scopes == "" {
		scopes = DefaultScopes
	}
	q := url.Values{"client_id": {client.ClientID}, "scope": {scopes}, "redirect_uri": {redirectURI}, "state": {state}}
	if params["user_scopes"] != "" {
		q.Set("user_scope", params["user_scopes"])
	}
	return AuthorizeURL + "?" + q.Encode(), nil
}

// CompleteInstall exchanges the redirect's code at oauth.v2.access
// (grant_type=authorization_code, the client in HTTP Basic). The account's
// external id is the workspace's team id (the enterprise id for an
// organization-wide install). An app with token rotation gets an expiring
// token and a refresh token: the account keeps the grant (client_id,
// client_secret, refresh_token) and MIO renews its tokens; otherwise it
// keeps the bot_token, which does not expire.
func (c *Channel) CompleteInstall(ctx context.Context, app channels.InstallApp, redirectURI string, query url.Values) (*channels.Installed, error) {
	if err := channels.InstallQueryError(query); err != nil {
		return nil, err
	}
	code := query.Get("code")
	if code == "" {
		return nil, &channels.InstallRefusedError{Reason: "no code in the redirect"}
	}
	var client channels.InstallClient
	if err := channels.ReadInstallClient("slack app credentials", app.Credentials, &client, &client); err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	settings, _, err := channels.SplitInstallSettings("slack install settings", app.Settings, ",", "scopes", "user_scopes")
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	base, err := c.accountAPIBase(channels.Account{Settings: settings})
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	a, err := postOAuth(ctx, c.client, base+"/oauth.v2.access", client.ClientID, client.ClientSecret,
		url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}})
	if err != nil {
		return nil, err
	}
	external := a.Team.ID
	if external == "" && a.Enterprise != nil {
		external = a.Enterprise.ID
	}
	if external == "" {
		return nil, &channels.PermanentError{Err: fmt.Errorf("%s: the answer names no team", opToken)}
	}
	var creds any = map[string]string{"bot_token": a.AccessToken}
	if a.RefreshToken != "" {
		if channels.HasSpaceOrControl(a.RefreshToken) {
			return nil, &channels.PermanentError{Err: fmt.Errorf("%s: the refresh_token holds whitespace or control characters", opToken)}
		}
		creds = map[string]string{"client_id": client.ClientID, "client_secret": client.ClientSecret, "refresh_token": a.RefreshToken}
	}
	raw, err := json.Marshal(creds)
	if err != nil {
		return nil, err
	}
	return &channels.Installed{ExternalID: external, Credentials: raw, Settings: settings}, nil
}
