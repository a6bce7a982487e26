package discord

import (
	"context"
	"errors"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

var _ channels.AttachmentFetcher = (*Channel)(nil)

// FetchHosts are Discord's CDN hosts.
func (c *Channel) FetchHosts() []string {
	return []string{"cdn.discordapp.com", "media.discordapp.net", "*.discordapp.com", "*.discordapp.net"}
}

// Fetch downloads the attachment's CDN URL. The URL is signed (ex, is, hm
// query parameters) and needs no token; once it has expired the CDN refuses
// it and the attachment fails permanently (an interaction's attachment
// cannot be re-resolved without the original message).
func (c *Channel) Fetch(ctx context.Context, _ channels.Account, att envelope.Attachment, client *fetch.Client) (*channels.FetchedAttachment, error) {
	if att.Source == nil || att.Source.URL == "" {
		return nil, &channels.PermanentError{Err: errors.New("discord: attachment has no URL")}
	}
	return channels.OpenURL(ctx, client, "discord attachment", att.Source.URL, nil)
}
