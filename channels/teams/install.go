package teams

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/miohq/mio/channels"
)

// Microsoft's admin consent (https://learn.microsoft.com/en-us/entra/identity-platform/v2-admin-consent):
// a directory admin grants the bot's app registration in the organization
// and Microsoft redirects with admin_consent=True and the tenant's id. No
// code is exchanged: the account's client-credentials grant (app id,
// client secret, tenant id) obtains its tokens.
const (
	// DefaultLoginURL is Microsoft's sign-in host.
	DefaultLoginURL = "https://login.microsoftonline.com"
	// DefaultConsentTenant is the consent page's tenant when the install's
	// settings name none: the admin's own organization.
	DefaultConsentTenant = "organizations"
)

var _ channels.Installer = (*Channel)(nil)

// appJSON is a Teams bot's app registration: client_id (or app_id) and
// client_secret.
type appJSON struct {
	channels.InstallClient
	AppID string `json:"app_id"`
}

func (c *Channel) readApp(app channels.InstallApp) (appJSON, json.RawMessage, map[string]string, error) {
	var a appJSON
	if err := channels.DecodeObject("teams app credentials", app.Credentials, &a); err != nil {
		return a, nil, nil, err
	}
	if a.ClientID == "" {
		a.ClientID = a.AppID
	}
	raw, _ := json.Marshal(a.InstallClient)
	if err := channels.ReadInstallClient("teams app credentials", raw, &a.InstallClient, &a.InstallClient); err != nil {
		return a, nil, nil, err
	}
	settings, params, err := channels.SplitInstallSettings("teams install settings", app.Settings, " ", "tenant")
	if err != nil {
		return a, nil, nil, err
	}
	if params["tenant"] == "" {
		params["tenant"] = DefaultConsentTenant
	}
	if !validTenant(params["tenant"]) {
		return a, nil, nil, invalidf("install settings tenant %q is not a tenant id or domain", params["tenant"])
	}
	return a, settings, params, nil
}

func validTenant(s string) bool {
	return s != "" && len(s) <= 256 && !channels.HasSpaceOrControl(s) && !strings.ContainsAny(s, "/?#%&\\")
}

// InstallURL returns Microsoft's admin consent page for the bot's app
// registration (credentials client_id or app_id, client_secret; settings
// tenant — default "organizations" — and the account's settings).
func (c *Channel) InstallURL(app channels.InstallApp, redirectURI, state string) (string, error) {
	a, _, params, err := c.readApp(app)
	if err != nil {
		return "", err
	}
	q := url.Values{"client_id": {a.ClientID}, "redirect_uri": {redirectURI}, "state": {state}}
	return DefaultLoginURL + "/" + url.PathEscape(params["tenant"]) + "/adminconsent?" + q.Encode(), nil
}

// CompleteInstall reads the consent's redirect: admin_consent=True and
// the tenant the admin consented for. The account's credentials are the
// app id, client secret and that tenant_id (its tokens come from the
// tenant's endpoint); its external id is the app id.
func (c *Channel) CompleteInstall(_ context.Context, app channels.InstallApp, _ string, query url.Values) (*channels.Installed, error) {
	if err := channels.InstallQueryError(query); err != nil {
		return nil, err
	}
	if !strings.EqualFold(query.Get("admin_consent"), "true") {
		return nil, &channels.InstallRefusedError{Reason: "admin consent not granted"}
	}
	tenant := query.Get("tenant")
	if !validTenant(tenant) {
		return nil, &channels.InstallRefusedError{Reason: "the redirect names no valid tenant"}
	}
	a, settings, _, err := c.readApp(app)
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	creds, err := json.Marshal(credentialsJSON{AppID: a.ClientID, ClientSecret: a.ClientSecret, TenantID: tenant})
	if err != nil {
		return nil, err
	}
	return &channels.Installed{ExternalID: a.ClientID, Credentials: creds, Settings: settings}, nil
}
