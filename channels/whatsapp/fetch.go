package whatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

var _ channels.AttachmentFetcher = (*Channel)(nil)

// FetchHosts are the Graph API host and Meta's media hosts.
func (c *Channel) FetchHosts() []string {
	return []string{"graph.facebook.com", "lookaside.fbsbx.com", "*.fbsbx.com", "*.fbcdn.net", "*.whatsapp.net"}
}

// Fetch resolves the media id (GET /{media-id} with the access token as a
// Bearer token, giving a URL valid for 5 minutes) and downloads that URL
// with the same token. When the download is refused as expired (401, 403,
// 404 or 410), the id is resolved once more for a fresh URL. Media ids
// themselves expire after 7 days (then the lookup fails permanently).
func (c *Channel) Fetch(ctx context.Context, acct channels.Account, att envelope.Attachment, client *fetch.Client) (*channels.FetchedAttachment, error) {
	var creds struct {
		AccessToken string `json:"access_token"`
	}
	if err := channels.DecodeObject("whatsapp credentials", acct.Credentials, &creds); err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	if creds.AccessToken == "" {
		return nil, &channels.PermanentError{Err: errors.New("whatsapp: downloading media needs credentials access_token")}
	}
	if att.Source == nil || att.Source.Ref == "" {
		return nil, &channels.PermanentError{Err: errors.New("whatsapp: attachment has no media id")}
	}
	base, err := c.accountAPIBase(acct)
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	client = channels.FetchClientFor(client, base, c.opts.APIBaseURL)
	hdr := http.Header{"Authorization": {"Bearer " + creds.AccessToken}}
	var lastErr error
	for range 2 {
		u, err := c.mediaURL(ctx, client, base, hdr, att.Source.Ref)
		if err != nil {
			return nil, err
		}
		resp, err := client.Get(ctx, u, hdr)
		if err == nil {
			return &channels.FetchedAttachment{Body: resp.Body, ContentType: resp.ContentType, Size: resp.ContentLength}, nil
		}
		lastErr = err
		if !expired(err) {
			break
		}
	}
	return nil, channels.FetchError("whatsapp media download", lastErr)
}

// expired reports whether a media URL download failed as an expired URL.
func expired(err error) bool {
	var se *fetch.StatusError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone:
		return true
	}
	return false
}

// mediaURL looks a media id up and returns its current download URL.
func (c *Channel) mediaURL(ctx context.Context, client *fetch.Client, base string, hdr http.Header, id string) (string, error) {
	resp, err := client.Get(ctx, base+"/"+url.PathEscape(id), hdr)
	if err != nil {
		return "", channels.FetchError("whatsapp media lookup", err)
	}
	defer resp.Body.Close()
	var body struct {
		URL string `json:"url"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return "", &channels.TransientError{Err: fmt.Errorf("whatsapp media lookup: %w", err)}
	}
	if body.URL == "" {
		return "", &channels.PermanentError{Err: errors.New("whatsapp media lookup: no url in the answer")}
	}
	return body.URL, nil
}
