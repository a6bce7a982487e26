package googlechat

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

// FetchHosts is the Chat API host, which serves media.
func (c *Channel) FetchHosts() []string {
	return []string{channels.BaseHost(c.opts.APIBaseURL)}
}

// Fetch downloads an uploaded attachment through the media API: GET
// {api_base_url}/v1/media/{resourceName}?alt=media with the app's access
// token (the attachment's attachmentDataRef.resourceName is its
// Source.Ref).
func (c *Channel) Fetch(ctx context.Context, acct channels.Account, att envelope.Attachment, client *fetch.Client) (*channels.FetchedAttachment, error) {
	if att.Source == nil || att.Source.Ref == "" {
		return nil, &channels.PermanentError{Err: errors.New("google_chat: attachment has no resource name")}
	}
	segs := strings.Split(att.Source.Ref, "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." {
			return nil, &channels.PermanentError{Err: errors.New("google_chat: malformed attachment resource name")}
		}
		segs[i] = url.PathEscape(s)
	}
	cfg, err := c.ParseConfig(acct)
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	if acct.Tokens == nil {
		return nil, &channels.PermanentError{Err: errors.New("google_chat: the account has no service-account key to download media with")}
	}
	token, err := acct.Tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	client = channels.FetchClientFor(client, cfg.APIBaseURL, c.opts.APIBaseURL)
	u := cfg.APIBaseURL + "/v1/media/" + strings.Join(segs, "/") + "?alt=media"
	return channels.OpenURL(ctx, client, "google_chat media", u, http.Header{"Authorization": {"Bearer " + token}})
}
