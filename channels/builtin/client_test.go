package builtin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
)

// recorder answers every request 200 without a network and remembers the
// hosts it saw.
type recorder struct {
	mu    sync.Mutex
	hosts []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.hosts = append(r.hosts, req.URL.Host)
	r.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{}`)), Request: req}, nil
}

// TestRegistryUsesTheGivenClient: the generic webhook adapter, like the
// platform adapters, sends through Options.HTTPClient (mio serve's
// pooled client), not http.DefaultClient.
func TestRegistryUsesTheGivenClient(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	r := Registry(Options{HTTPClient: &http.Client{Transport: rec}})
	ch, ok := r.Get("webhook")
	require.True(t, ok)
	settings, _ := json.Marshal(map[string]string{"endpoint_url": "https://agent-hooks.invalid/mio"})
	out, err := ch.(channels.OutboundChannel).NewOutbound(channels.Account{ID: uuid.New(), WebhookSecret: "whsec_" + strings.Repeat("QUJD", 8), Settings: settings})
	require.NoError(t, err)
	_, err = out.Send(context.Background(), &channels.OutboundMessage{MessageID: uuid.New(), Attempt: 1, IdempotencyKey: "k", ConversationID: "c", Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, []string{"agent-hooks.invalid"}, rec.hosts)
}
