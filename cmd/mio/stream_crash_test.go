package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
)

// streamEndpoint is a webhook endpoint that records each delivery's
// operation (a send, or an edit naming the message it edits) and text.
type streamEndpoint struct {
	mu    sync.Mutex
	calls []streamCall
}

type streamCall struct {
	conversation, editOf, text string
}

func (e *streamEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Data struct {
			Conversation struct {
				ID string `json:"id"`
			} `json:"conversation"`
			Text   string `json:"text"`
			EditOf string `json:"edit_of_provider_message_id"`
		} `json:"data"`
	}
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.calls = append(e.calls, streamCall{conversation: body.Data.Conversation.ID, editOf: body.Data.EditOf, text: body.Data.Text})
	n := len(e.calls)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"id":"m%d"}`, n)
}

// of returns the calls of one conversation.
func (e *streamEndpoint) of(conversation string) []streamCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []streamCall
	for _, c := range e.calls {
		if c.conversation == conversation {
			out = append(out, c)
		}
	}
	return out
}

// TestStreamSurvivesWorkerKill: `mio serve` renders a streamed reply,
// sends its message and edits it, and is killed with SIGKILL mid-stream;
// another process takes the rest of the appends and the finish and, once
// the dead worker's lease has ended and the sweeper has given the row a
// job, resumes the stream: the platform shows ONE message, edited to
// exactly the concatenation of the appends, within the lease (send
// timeout + 15 s, MIO_SEND_TIMEOUT=1s here), the sweeper's grace (10 s)
// and its interval (5 s) of the kill. Meanwhile a stream finished with
// nothing to show is refused (422 stream_empty) and stays open, and its
// finish with text then ends it as one message, handed off.
func TestStreamSurvivesWorkerKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://x")
	tenant, _, err := svc.TenantCreate(ctx, "stream-crash")
	require.NoError(t, err)
	endpoint := &streamEndpoint{}
	srv := httptest.NewServer(endpoint)
	t.Cleanup(srv.Close)
	settings, _ := json.Marshal(map[string]string{"endpoint_url": srv.URL})
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook",
		Settings: settings, WebhookSecret: "whsec_" + base64.StdEncoding.EncodeToString(key)})
	require.NoError(t, err)
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "agent", []db.Role{db.RoleProduce})
	require.NoError(t, err)

	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	start := func() func() {
		cmd := startServe(t, env.OwnerURL, key, addr, "MIO_SEND_TIMEOUT=1s")
		return func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() }
	}
	kill := start()
	c := client.New("http://"+addr, token)
	sent, err := c.Send(ctx, envelope.SendCommand{IdempotencyKey: "stream-crash", AccountID: acct.ID,
		ConversationID: "crash", Stream: true})
	require.NoError(t, err)
	var full strings.Builder
	seq := 0
	appendN := func(n int) {
		for range n {
			seq++
			delta := fmt.Sprintf("w%d ", seq)
			require.NoError(t, c.StreamAppend(ctx, sent.ID, seq, delta))
			full.WriteString(delta)
			time.Sleep(50 * time.Millisecond)
		}
	}
	appendN(10)
	owner := env.OwnerPool(t)
	require.Eventually(t, func() bool {
		var recorded string
		_ = owner.QueryRow(ctx, `SELECT coalesce(provider_message_id, '') FROM mio.outbox WHERE id = $1`, sent.ID).Scan(&recorded)
		return recorded != "" && len(endpoint.of("crash")) > 0
	}, 10*time.Second, 20*time.Millisecond, "the first process sent the message and recorded its id")
	kill()
	killed := time.Now()

	defer start()()
	empty, err := c.Send(ctx, envelope.SendCommand{IdempotencyKey: "stream-empty", AccountID: acct.ID,
		ConversationID: "empty", Stream: true})
	require.NoError(t, err)
	var apiErr *client.APIError
	require.ErrorAs(t, c.StreamFinish(ctx, empty.ID, client.StreamFinish{}), &apiErr)
	require.Equal(t, http.StatusUnprocessableEntity, apiErr.Status)
	require.Equal(t, "stream_empty", apiErr.Code)
	answer := "Nothing found."
	require.NoError(t, c.StreamFinish(ctx, empty.ID, client.StreamFinish{Text: &answer}))
	appendN(10)
	require.NoError(t, c.StreamFinish(ctx, sent.ID, client.StreamFinish{Seq: seq}))
	const recovery = (time.Second + 15*time.Second) + 10*time.Second + 5*time.Second
	require.Eventually(t, func() bool {
		calls := endpoint.of("crash")
		return len(calls) > 0 && calls[len(calls)-1].text == full.String()
	}, recovery+5*time.Second-time.Since(killed), 50*time.Millisecond, "the stream ends with its full text")
	t.Logf("resumed and finished %s after the kill", time.Since(killed).Round(time.Second))

	calls := endpoint.of("crash")
	require.Empty(t, calls[0].editOf, "the first call sends the message")
	for i, call := range calls[1:] {
		require.Equal(t, "m1", call.editOf, "call %d edits the one message", i+1)
		require.True(t, strings.HasPrefix(full.String(), call.text), "call %d shows a prefix of the text", i+1)
	}
	for _, id := range []any{sent.ID, empty.ID} {
		var state string
		require.Eventually(t, func() bool {
			_ = owner.QueryRow(ctx, `SELECT handoff_state FROM mio.outbox WHERE id = $1`, id).Scan(&state)
			return state == string(db.HandoffHandedOff)
		}, 5*time.Second, 20*time.Millisecond, "handed off, not dead: %s", state)
	}
	require.Equal(t, []streamCall{{conversation: "empty", text: answer}}, endpoint.of("empty"),
		"the stream finished with text after its empty finish: one message")
}
