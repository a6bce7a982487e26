package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

var _ channels.AttachmentFetcher = (*Channel)(nil)

// FetchHosts are Slack's file hosts (and the Web API host, for files.info).
func (c *Channel) FetchHosts() []string {
	return []string{"slack.com", "*.slack.com", "*.slack-edge.com", "*.slack-files.com"}
}

// Fetch downloads a shared file: url_private_download (or url_private)
// with the bot token as a Bearer token; a file known only by id is first
// resolved with files.info. The bot token needs the files:read scope.
// Slack answers a request it does not authorize with its HTML sign-in page
// and status 200, which is reported as a permanent error.
func (c *Channel) Fetch(ctx context.Context, acct channels.Account, att envelope.Attachment, client *fetch.Client) (*channels.FetchedAttachment, error) {
	cfg, err := c.newOutboundConfig(acct)
	if err != nil {
		return nil, &channels.PermanentError{Err: fmt.Errorf("slack: downloading files needs credentials bot_token: %w", err)}
	}
	if att.Source == nil || att.Source.URL == "" && att.Source.Ref == "" {
		return nil, &channels.PermanentError{Err: errors.New("slack: attachment has no source")}
	}
	base, err := c.accountAPIBase(acct)
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	client = channels.FetchClientFor(client, base, c.apiBase)
	token, err := cfg.Tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	hdr := http.Header{"Authorization": {"Bearer " + token}}
	u := att.Source.URL
	if u == "" {
		if u, err = c.fileURL(ctx, client, base, hdr, att.Source.Ref); err != nil {
			return nil, err
		}
	}
	f, err := channels.OpenURL(ctx, client, "slack file", u, hdr)
	if err != nil {
		return nil, err
	}
	if isHTML(f.ContentType) && !isHTML(att.MimeType) {
		f.Body.Close()
		return nil, &channels.PermanentError{Err: errors.New("slack file: Slack answered its sign-in page: the bot token lacks files:read or cannot see the file")}
	}
	return f, nil
}

func isHTML(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return strings.EqualFold(mt, "text/html")
}

// fileURL resolves a file id with files.info.
func (c *Channel) fileURL(ctx context.Context, client *fetch.Client, base string, hdr http.Header, id string) (string, error) {
	resp, err := client.Get(ctx, base+"/files.info?file="+url.QueryEscape(id), hdr)
	if err != nil {
		return "", channels.FetchError("slack files.info", err)
	}
	defer resp.Body.Close()
	var body struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		File  file   `json:"file"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return "", &channels.TransientError{Err: fmt.Errorf("slack files.info: %w", err)}
	}
	if !body.OK {
		err := fmt.Errorf("slack files.info: %s", body.Error)
		if body.Error == "ratelimited" || body.Error == "internal_error" || body.Error == "fatal_error" {
			return "", &channels.TransientError{Err: err}
		}
		return "", &channels.PermanentError{Err: err}
	}
	u := body.File.URLPrivateDownload
	if u == "" {
		u = body.File.URLPrivate
	}
	if u == "" {
		return "", &channels.PermanentError{Err: errors.New("slack files.info: the file has no download URL")}
	}
	return u, nil
}
