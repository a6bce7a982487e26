package client

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"

	"github.com/google/uuid"

	"github.com/miohq/mio/envelope"
)

// StreamFinish ends a streamed reply: Text, when not nil, is the complete
// final text (it replaces what was appended); RichContent is sent with
// it; Seq, when not 0, is the seq of the last append, which the server
// checks.
type StreamFinish struct {
	Seq         int             `json:"seq,omitempty"`
	Text        *string         `json:"text,omitempty"`
	RichContent json.RawMessage `json:"rich_content,omitempty"`
}

// StreamAppend adds delta to the open streamed reply id as the client's
// append seq, counting from 1 (POST /v1/outbound/{id}/append). A seq the
// server already took is answered as before (a retry is safe: the client
// retries with the same seq); a gap or an append after the finish is an
// *APIError with status 409.
func (c *Client) StreamAppend(ctx context.Context, id uuid.UUID, seq int, delta string) error {
	body := struct {
		Seq       int    `json:"seq"`
		TextDelta string `json:"text_delta"`
	}{seq, delta}
	return c.do(ctx, http.MethodPost, "/v1/outbound/"+id.String()+"/append", body, nil)
}

// StreamFinish ends the streamed reply id (POST
// /v1/outbound/{id}/finish); finishing it again is answered as before.
func (c *Client) StreamFinish(ctx context.Context, id uuid.UUID, f StreamFinish) error {
	return c.do(ctx, http.MethodPost, "/v1/outbound/"+id.String()+"/finish", f, nil)
}

// SendStream sends a reply whose text grows while it is written: it
// opens a stream with cmd (Stream set for it; Text, which may be empty,
// is its start), appends each chunk in order (seq 1, 2, 3…, each retried
// with its own seq), then finishes it. The platform shows the newest text
// within one edit interval and ends with the complete text. When chunks
// yields an error or an append fails, the stream is finished with what
// was appended and the error returned. Each chunk is one request: pass a few words at a time
// rather than single tokens.
func (c *Client) SendStream(ctx context.Context, cmd envelope.SendCommand, chunks iter.Seq2[string, error]) (*Sent, error) {
	cmd.Stream = true
	sent, err := c.Send(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return sent, c.streamChunks(ctx, sent.ID, chunks)
}

// ReplyStream is SendStream as a reply with ack (Reply): the stream is
// opened in the transaction that acknowledges delivery deliveryID of
// consumer, then grown and finished as SendStream does.
func (c *Client) ReplyStream(ctx context.Context, consumer string, deliveryID uuid.UUID, cmd envelope.SendCommand, chunks iter.Seq2[string, error]) (*Sent, error) {
	cmd.Stream = true
	sent, err := c.Reply(ctx, consumer, deliveryID, cmd)
	if err != nil {
		return nil, err
	}
	return sent, c.streamChunks(ctx, sent.ID, chunks)
}

// streamChunks appends each chunk to stream id in order and finishes it.
func (c *Client) streamChunks(ctx context.Context, id uuid.UUID, chunks iter.Seq2[string, error]) error {
	seq := 0
	var srcErr error
	for chunk, err := range chunks {
		if err != nil {
			srcErr = err
			break
		}
		if chunk == "" {
			continue
		}
		if err := c.StreamAppend(ctx, id, seq+1, chunk); err != nil {
			// Finished with what was taken, rather than left open until
			// the server's stream timeout.
			return errors.Join(err, c.StreamFinish(ctx, id, StreamFinish{Seq: seq}))
		}
		seq++
	}
	return errors.Join(srcErr, c.StreamFinish(ctx, id, StreamFinish{Seq: seq}))
}
