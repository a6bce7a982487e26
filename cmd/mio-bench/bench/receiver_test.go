package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/webhook"
)

// TestSignedReceiverVerifies: the receiver accepts what MIO's webhook
// adapter sends (answering an id the adapter takes as the provider's), and
// counts as rejected — 401, the phase failed — a forged signature, a
// tampered body, a stale timestamp and missing headers; a repeated
// webhook-id is a duplicate, not a second delivery.
func TestSignedReceiverVerifies(t *testing.T) {
	t.Parallel()
	secret := newWebhookSecret()
	r, err := newSignedReceiver(secret)
	require.NoError(t, err)
	defer r.close()
	r.expect(1)

	settings, _ := json.Marshal(map[string]string{"endpoint_url": r.url})
	out, err := webhook.New(webhook.Options{}).NewOutbound(channels.Account{ID: uuid.New(), WebhookSecret: secret, Settings: settings})
	require.NoError(t, err)
	msgID := uuid.New()
	sent, err := out.Send(context.Background(), &channels.OutboundMessage{MessageID: msgID, Attempt: 1,
		SeriesKey: "mio-one", ConversationID: "whb-0", Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, "rcv-1", sent.ProviderMessageID)
	require.NoError(t, r.wait(context.Background(), 5*time.Second))
	require.Contains(t, r.receivedTimes(), msgID.String())
	require.Zero(t, r.rejected.Load())

	body := []byte(`{"type":"message.created","data":{"message_id":"m-1","conversation":{"id":"whb-1"}}}`)
	post := func(id string, ts time.Time, sig string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(body))
		req.Header.Set(webhook.HeaderID, id)
		req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set(webhook.HeaderSignature, sig)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	now := time.Now()
	sign := func(secret, id string, ts time.Time, body []byte) string {
		s, err := webhook.Sign(secret, id, ts, body)
		require.NoError(t, err)
		return s
	}
	// A second signature (a rotation) beside the right one verifies.
	require.Equal(t, http.StatusOK, post("mio-two", now, "v1,bm9wZQ== "+sign(secret, "mio-two", now, body), body))
	require.Equal(t, http.StatusOK, post("mio-two", now, sign(secret, "mio-two", now, body), body))
	require.EqualValues(t, 1, r.duplicates.Load())
	require.Zero(t, r.rejected.Load())

	stale := now.Add(-webhook.SignatureTolerance - time.Minute)
	for name, code := range map[string]int{
		"forged":   post("mio-3", now, sign(newWebhookSecret(), "mio-3", now, body), body),
		"tampered": post("mio-4", now, sign(secret, "mio-4", now, body), append(body, ' ')),
		"other id": post("mio-5", now, sign(secret, "mio-x", now, body), body),
		"stale":    post("mio-6", stale, sign(secret, "mio-6", stale, body), body),
		"no sig":   post("mio-7", now, "", body),
	} {
		require.Equal(t, http.StatusUnauthorized, code, name)
	}
	require.EqualValues(t, 5, r.rejected.Load())
	require.Positive(t, r.conns.Load())
	r.expect(1)
	require.ErrorContains(t, r.wait(context.Background(), 5*time.Second), "rejected a delivery (5 in all)")
}
