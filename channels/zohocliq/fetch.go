package zohocliq

import (
	"context"
	"errors"
	"net/http"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

var _ channels.AttachmentFetcher = (*Channel)(nil)

// FetchHosts are Zoho's data centres and file hosts.
func (c *Channel) FetchHosts() []string {
	return []string{"*.zoho.com", "*.zoho.eu", "*.zoho.in", "*.zoho.com.au", "*.zoho.jp", "*.zohocdn.com",
		"*.zohopublic.com", "*.zohopublic.eu", "*.zohopublic.in"}
}

// Fetch downloads the attachment URL from the handler payload. When the
// account has an access token (static, or renewed from its grant) it is
// sent as
// "Authorization: Zoho-oauthtoken <token>" (whether Cliq's file URLs need it
// is UNVERIFIED; public file URLs ignore it).
func (c *Channel) Fetch(ctx context.Context, acct channels.Account, att envelope.Attachment, client *fetch.Client) (*channels.FetchedAttachment, error) {
	if att.Source == nil || att.Source.URL == "" {
		return nil, &channels.PermanentError{Err: errors.New("zoho_cliq: attachment has no URL")}
	}
	var creds struct {
		AccessToken string `json:"access_token"`
	}
	if err := channels.DecodeObject("zoho_cliq credentials", acct.Credentials, &creds); err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	var s settingsJSON
	if err := channels.DecodeObject("zoho_cliq settings", acct.Settings, &s); err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	base, err := c.apiBaseURL(s)
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	client = channels.FetchClientFor(client, base, c.opts.APIBaseURL)
	token := creds.AccessToken
	if acct.Tokens != nil {
		if token, err = acct.Tokens.Token(ctx); err != nil {
			return nil, err
		}
	}
	var hdr http.Header
	if token != "" {
		hdr = http.Header{"Authorization": {"Zoho-oauthtoken " + token}}
	}
	return channels.OpenURL(ctx, client, "zoho_cliq attachment", att.Source.URL, hdr)
}
