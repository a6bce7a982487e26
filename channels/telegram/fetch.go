package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
)

// MaxBotDownload is the largest file the Bot API lets a bot download
// (20 MB); larger files fail permanently whatever MIO's own cap.
const MaxBotDownload = 20 << 20

var _ channels.AttachmentFetcher = (*Channel)(nil)

// FetchHosts is the Bot API host, which serves getFile and the files.
func (c *Channel) FetchHosts() []string { return []string{"api.telegram.org"} }

// Fetch resolves the attachment's file_id with getFile, then downloads
// https://api.telegram.org/file/bot<token>/<file_path> (a link valid for
// at least an hour). Files over MaxBotDownload fail permanently, before
// any download when the size is known. Errors never contain the token
// (package fetch names hosts only).
func (c *Channel) Fetch(ctx context.Context, acct channels.Account, att envelope.Attachment, client *fetch.Client) (*channels.FetchedAttachment, error) {
	cfg, err := ParseOutboundConfig(acct)
	if err != nil {
		return nil, &channels.PermanentError{Err: fmt.Errorf("telegram: downloading files needs credentials bot_token: %w", err)}
	}
	if att.Source == nil || att.Source.Ref == "" {
		return nil, &channels.PermanentError{Err: errors.New("telegram: attachment has no file_id")}
	}
	base, err := c.accountAPIBase(acct)
	if err != nil {
		return nil, &channels.PermanentError{Err: err}
	}
	client = channels.FetchClientFor(client, base, c.opts.APIBaseURL)
	if att.Size > MaxBotDownload {
		return nil, tooBig(att.Size)
	}
	resp, err := client.Get(ctx, base+"/bot"+cfg.BotToken+"/getFile?file_id="+url.QueryEscape(att.Source.Ref), nil)
	if err != nil {
		return nil, channels.FetchError("telegram getFile", err)
	}
	var body struct {
		OK          bool   `json:"ok"`
		Description string `json:"description"`
		Result      struct {
			FilePath string `json:"file_path"`
			FileSize int64  `json:"file_size"`
		} `json:"result"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body)
	resp.Body.Close()
	switch {
	case err != nil:
		return nil, &channels.TransientError{Err: fmt.Errorf("telegram getFile: %w", err)}
	case !body.OK:
		return nil, &channels.PermanentError{Err: fmt.Errorf("telegram getFile: %s", body.Description)}
	case body.Result.FileSize > MaxBotDownload:
		return nil, tooBig(body.Result.FileSize)
	case body.Result.FilePath == "":
		return nil, &channels.PermanentError{Err: errors.New("telegram getFile: no file_path (file too big for bots?)")}
	}
	path := strings.TrimPrefix(body.Result.FilePath, "/")
	f, err := channels.OpenURL(ctx, client, "telegram file", base+"/file/bot"+cfg.BotToken+"/"+path, nil)
	if err != nil {
		return nil, err
	}
	return channels.LimitBody(f, MaxBotDownload, "telegram file")
}

func tooBig(size int64) error {
	return &channels.PermanentError{Err: fmt.Errorf("telegram: file of %d bytes is over the Bot API's %d-byte download limit: %w", size, MaxBotDownload, fetch.ErrTooLarge)}
}
