package client

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/google/uuid"
)

// AttachmentData is a stored attachment's bytes.
type AttachmentData struct {
	MimeType string
	Data     []byte
}

// ErrAttachmentTooLarge: the attachment is over the limit Attachment was
// given.
var ErrAttachmentTooLarge = fmt.Errorf("mio: attachment too large")

// Attachment downloads a stored attachment (GET /v1/attachments/{id}),
// following a redirect to a signed URL, up to limit bytes
// (ErrAttachmentTooLarge beyond).
func (c *Client) Attachment(ctx context.Context, id uuid.UUID, limit int64) (*AttachmentData, error) {
	var out AttachmentData
	err := c.doRaw(ctx, http.MethodGet, "/v1/attachments/"+id.String(), func(resp *http.Response) error {
		data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return fmt.Errorf("mio: read attachment: %w", err)
		}
		if int64(len(data)) > limit {
			return ErrAttachmentTooLarge
		}
		out = AttachmentData{MimeType: resp.Header.Get("Content-Type"), Data: data}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
