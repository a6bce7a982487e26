package webhook

import (
	"context"
	"errors"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

var _ channels.AttachmentFetcher = (*Channel)(nil)

// FetchHosts is empty: a generic webhook names any public HTTPS URL (the
// fetch client still refuses private, loopback and link-local addresses;
// operators can restrict hosts with MIO_FETCH_ALLOWED_HOSTS).
func (c *Channel) FetchHosts() []string { return nil }

// Fetch downloads data.attachments[].url with a plain GET; the sender is
// expected to give a URL that needs no credentials (e.g. pre-signed).
func (c *Channel) Fetch(ctx context.Context, _ channels.Account, att envelope.Attachment, client *fetch.Client) (*channels.FetchedAttachment, error) {
	if att.Source == nil || att.Source.URL == "" {
		return nil, &channels.PermanentError{Err: errors.New("webhook: attachment has no URL")}
	}
	return channels.OpenURL(ctx, client, "webhook attachment", att.Source.URL, nil)
}
