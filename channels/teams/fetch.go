package teams

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

var _ channels.AttachmentFetcher = (*Channel)(nil)

// FetchHosts are the Bot Connector hosts (inline images) and SharePoint /
// OneDrive (shared files' download URLs).
func (c *Channel) FetchHosts() []string {
	return append(append([]string(nil), ServiceHosts...), "*.sharepoint.com", "*.sharepoint.us", "*.sharepoint-mil.us")
}

// Fetch downloads an attachment. An inline image on a trusted service
// URL host (ServiceHosts, the account's api_base_url host) is fetched
// with the bot's token, which Teams requires; a shared file's downloadUrl
// is pre-authenticated and fetched without it, as is any other host.
func (c *Channel) Fetch(ctx context.Context, acct channels.Account, att envelope.Attachment, client *fetch.Client) (*channels.FetchedAttachment, error) {
	if att.Source == nil || att.Source.URL == "" {
		return nil, &channels.PermanentError{Err: errors.New("teams: attachment has no URL")}
	}
	cfg, err := c.ParseConfig(acct)
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	client = channels.FetchClientFor(client, cfg.APIBaseURL, c.opts.APIBaseURL)
	var hdr http.Header
	if acct.Tokens != nil && c.trustedHosts(cfg).trusts(att.Source.URL) && !sharedFile(att.Source.URL) {
		token, err := acct.Tokens.Token(ctx)
		if err != nil {
			return nil, err
		}
		hdr = http.Header{"Authorization": {"Bearer " + token}}
	}
	return channels.OpenURL(ctx, client, "teams attachment", att.Source.URL, hdr)
}

// sharedFile: a SharePoint download URL, which carries its own
// authorization.
func sharedFile(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && strings.Contains(strings.ToLower(u.Hostname()), "sharepoint")
}
