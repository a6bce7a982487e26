package discord

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/miohq/mio/channels"
)

var _ channels.Typer = (*outbound)(nil)

// Typing triggers the typing indicator in the channel (POST
// /channels/{id}/typing, 204; shown for about 10 seconds or until the
// bot's next message). Threads are channels in Discord: a thread id, when
// given, is the channel typed in.
func (o *outbound) Typing(ctx context.Context, sig *channels.TypingSignal) error {
	const op = "trigger typing"
	channel := sig.ConversationID
	if sig.ThreadID != "" {
		channel = sig.ThreadID
	}
	if _, ok := parseSnowflake(channel); !ok {
		return channels.Permanent("discord: "+op, fmt.Errorf("channel id %q is not a snowflake", channel))
	}
	resp, err := channels.CallAPI(ctx, o.client, channels.APIRequest{
		Op:     "discord: " + op,
		Method: http.MethodPost,
		URL:    o.apiBase + "/channels/" + channel + "/typing",
		Header: http.Header{"Authorization": {"Bot " + o.token}},
	})
	if err != nil {
		return err
	}
	if resp.Status >= 200 && resp.Status < 300 {
		return nil
	}
	apiErr := &apiError{op: op, status: resp.Status}
	switch {
	case resp.Status == http.StatusTooManyRequests:
		return &channels.RateLimitedError{RetryAfter: channels.RetryAfter(resp.Header, time.Now(), defaultRetryAfter), Err: apiErr}
	case resp.Status >= 500:
		return &channels.TransientError{Err: apiErr}
	}
	return &channels.PermanentError{Err: apiErr}
}
