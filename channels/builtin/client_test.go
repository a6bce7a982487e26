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

// TestAccountAPIBaseChecked: every platform adapter reads settings
// api_base_url and refuses plain http unless the policy allows it.
func TestAccountAPIBaseChecked(t *testing.T) {
	t.Parallel()
	creds := map[string]string{
		"slack":     `{"bot_token":"xoxb-1"}`,
		"telegram":  `{"bot_token":"1:abc"}`,
		"discord":   `{"bot_token":"abc"}`,
		"zoho_cliq": `{"access_token":"1000.x"}`,
		"whatsapp":  `{"access_token":"EAAB"}`,
	}
	for slug, cred := range creds {
		t.Run(slug, func(t *testing.T) {
			t.Parallel()
			acct := channels.Account{ID: uuid.New(), ExternalID: "123", Credentials: json.RawMessage(cred),
				Settings: json.RawMessage(`{"api_base_url":"http://fake.internal:8080/"}`)}
			prod, _ := Registry(Options{}).Get(slug)
			_, err := prod.(channels.OutboundChannel).NewOutbound(acct)
			require.ErrorIs(t, err, channels.ErrInvalidConfig)
			require.ErrorContains(t, err, "api_base_url")

			rec := &recorder{}
			listed, _ := Registry(Options{HTTPClient: &http.Client{Transport: rec},
				APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"fake.internal"}}}).Get(slug)
			out, err := listed.(channels.OutboundChannel).NewOutbound(acct)
			require.NoError(t, err)
			_, _ = out.Send(context.Background(), &channels.OutboundMessage{MessageID: uuid.New(), Attempt: 1,
				IdempotencyKey: "k", ConversationID: "123", Text: "hi"})
			require.Equal(t, []string{"fake.internal:8080"}, rec.hosts, "the send went to the account's base")
		})
	}
}
