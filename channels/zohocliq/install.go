package zohocliq

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/miohq/mio/channels"
)

// Zoho's authorization code flow (https://www.zoho.com/accounts/protocol/oauth/web-apps/authorization.html):
// the consent page, on the accounts server of the data centre the app is
// registered in, redirects with a code, the user's location and the
// accounts-server of the user's data centre, where the code is exchanged
// for a refresh token (access_type=offline; prompt=consent so that a
// user who consented before gets one again).
const (
	// DefaultAccountsServer is the accounts server of Zoho's US data
	// centre, where the consent page is unless the install's settings
	// name another (accounts_server).
	DefaultAccountsServer = "https://accounts.zoho.com"
	// DefaultInstallScopes are the scopes an install asks for when its
	// settings name none: posting messages to Cliq.
	DefaultInstallScopes = "ZohoCliq.Messages.CREATE"
	opInstall            = "zoho_cliq: exchange authorization code"
)

var _ channels.Installer = (*Channel)(nil)

// installParams are the consent page's parameters in an install's
// settings.
var installParams = []string{"scopes", "accounts_server"}

func (c *Channel) readApp(app channels.InstallApp) (channels.InstallClient, json.RawMessage, map[string]string, error) {
	var client channels.InstallClient
	if err := channels.ReadInstallClient("zoho_cliq app credentials", app.Credentials, &client, &client); err != nil {
		return client, nil, nil, err
	}
	settings, params, err := channels.SplitInstallSettings("zoho_cliq install settings", app.Settings, ",", installParams...)
	if err != nil {
		return client, nil, nil, err
	}
	if params["accounts_server"] == "" {
		params["accounts_server"] = DefaultAccountsServer
	}
	if params["accounts_server"], err = c.accountsServer(params["accounts_server"]); err != nil {
		return client, nil, nil, err
	}
	return client, settings, params, nil
}

// InstallURL returns Zoho's consent page for the app (credentials
// client_id, client_secret; settings scopes, accounts_server — the data
// centre the app is registered in — and the account's settings).
func (c *Channel) InstallURL(app channels.InstallApp, redirectURI, state string) (string, error) {
	client, _, params, err := c.readApp(app)
	if err != nil {
		return "", err
	}
	scopes := params["scopes"]
	if scopes == "" {
		scopes = DefaultInstallScopes
	}
	q := url.Values{"client_id": {client.ClientID}, "scope": {scopes}, "response_type": {"code"},
		"access_type": {"offline"}, "prompt": {"consent"}, "redirect_uri": {redirectURI}, "state": {state}}
	return params["accounts_server"] + "/oauth/v2/auth?" + q.Encode(), nil
}

// CompleteInstall exchanges the redirect's code at the accounts server it
// names (accounts-server: the user's data centre, which must be a Zoho
// accounts server — https://accounts.zoho.<domain> or
// https://accounts.zohocloud.ca — or the install's own accounts_server)
// for a refresh token. The account keeps the refresh-token grant
// (client_id, client_secret, refresh_token, accounts_server); its
// api_base_url, unless the install's settings name one, is the Cliq host
// of that data centre.
func (c *Channel) CompleteInstall(ctx context.Context, app channels.InstallApp, redirectURI string, query url.Values) (*channels.Installed, error) {
	if err := channels.InstallQueryError(query); err != nil {
		return nil, err
	}
	code := query.Get("code")
	if code == "" {
		return nil, &channels.InstallRefusedError{Reason: "no code in the redirect"}
	}
	client, settings, params, err := c.readApp(app)
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	server := params["accounts_server"]
	if dc := query.Get("accounts-server"); dc != "" && strings.TrimRight(dc, "/") != server {
		if server, err = zohoAccountsServer(dc); err != nil {
			return nil, &channels.PermanentError{Err: err}
		}
	}
	form := url.Values{"grant_type": {"authorization_code"}, "client_id": {client.ClientID},
		"client_secret": {client.ClientSecret}, "redirect_uri": {redirectURI}, "code": {code}}
	resp, err := channels.CallAPI(ctx, c.opts.HTTPClient, channels.APIRequest{
		Op: opInstall, URL: server + "/oauth/v2/token", Body: []byte(form.Encode()), MaxAnswer: 64 << 10,
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Accept": {channels.MediaTypeJSON}},
	})
	if err != nil {
		return nil, err
	}
	var a struct {
		RefreshToken string          `json:"refresh_token"`
		Error        json.RawMessage `json:"error"`
	}
	decodeErr := json.Unmarshal(resp.Body, &a)
	switch code := errorCode(a.Error); {
	case resp.Status >= 500 || resp.Status == http.StatusTooManyRequests:
		return nil, &channels.TransientError{Err: fmt.Errorf("%s: HTTP %d", opInstall, resp.Status)}
	case code != "":
		return nil, channels.Permanent(opInstall, fmt.Errorf("HTTP %d, error %q", resp.Status, code))
	case resp.Status != http.StatusOK:
		return nil, channels.Permanent(opInstall, fmt.Errorf("HTTP %d", resp.Status))
	case decodeErr != nil || a.RefreshToken == "" || channels.HasSpaceOrControl(a.RefreshToken):
		return nil, channels.Permanent(opInstall, fmt.Errorf("the answer holds no usable refresh_token (access_type=offline?)"))
	}
	creds, err := json.Marshal(map[string]string{"client_id": client.ClientID, "client_secret": client.ClientSecret,
		"refresh_token": a.RefreshToken, "accounts_server": server})
	if err != nil {
		return nil, err
	}
	var s map[string]json.RawMessage
	_ = json.Unmarshal(settings, &s) // an object: SplitInstallSettings made it
	if _, ok := s["api_base_url"]; !ok {
		if cliq := cliqHost(server); cliq != "" {
			s["api_base_url"], _ = json.Marshal(cliq)
		}
	}
	accountSettings, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return &channels.Installed{Credentials: creds, Settings: accountSettings}, nil
}

// zohoAccountsServer checks an accounts-server a redirect names: MIO
// sends the app's client secret there, so only Zoho's own accounts
// servers are taken.
func zohoAccountsServer(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Port() != "" {
		return "", invalidf("the redirect's accounts-server %q is not a Zoho accounts server", raw)
	}
	host := strings.ToLower(u.Hostname())
	if !strings.HasPrefix(host, "accounts.zoho.") && host != "accounts.zohocloud.ca" {
		return "", invalidf("the redirect's accounts-server %q is not a Zoho accounts server", raw)
	}
	return "https://" + host, nil
}

// cliqHost is the Cliq API host of an accounts server's data centre
// (accounts.zoho.eu → https://cliq.zoho.eu); "" for another host.
func cliqHost(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" {
		return ""
	}
	host := u.Hostname()
	if rest, ok := strings.CutPrefix(host, "accounts."); ok && strings.HasPrefix(rest, "zoho") {
		return "https://cliq." + rest
	}
	return ""
}
