package channels

import (
	"context"
	"errors"
)

// ErrStreamLost: a native stream cannot go on from an unknown point (a
// worker resumed it after the one that showed its text stopped, and the
// platform appends deltas). It is wrapped in a *PermanentError; the
// dispatcher then ends the stream with StreamStop.
var ErrStreamLost = errors.New("native stream cannot be continued from an unknown point")

// StreamShown is what a native stream shows before a call: Text (a prefix
// of the message's text) after Calls calls, StreamStart being the first.
// Lost means neither is known: the stream was resumed by another worker.
type StreamShown struct {
	Text  string
	Calls int
	Lost  bool
}

// Streamer is implemented by outbound adapters whose platform streams a
// message as it is written (Slack chat.startStream/appendStream/
// stopStream, Telegram sendMessageDraft, Teams streaming activities). The
// dispatcher renders a streamed reply through it when Streams says the
// conversation qualifies, and by sending and editing otherwise. Errors
// are classified as Send's. The native_streaming capability is derived
// from it.
type Streamer interface {
	// Streams reports whether msg's conversation streams natively.
	Streams(msg *OutboundMessage) bool
	// StreamStart opens a stream showing msg.Text. The result's
	// ProviderMessageID names the stream: the dispatcher records it and
	// hands it back as msg.EditProviderMessageID to StreamAppend and
	// StreamStop.
	StreamStart(ctx context.Context, msg *OutboundMessage) (*SendResult, error)
	// StreamAppend shows msg.Text, the text so far.
	StreamAppend(ctx context.Context, msg *OutboundMessage, shown StreamShown) error
	// StreamStop ends the stream showing msg.Text, the complete final
	// text (with a final edit of the message when the stream cannot show
	// it, shown.Lost); the result's ProviderMessageID is the message's.
	StreamStop(ctx context.Context, msg *OutboundMessage, shown StreamShown) (*SendResult, error)
}
