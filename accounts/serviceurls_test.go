package accounts_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/channels/channelstest"
	"github.com/miohq/mio/channels/teams"
	"github.com/miohq/mio/db"
)

// staticTokens gives one token, never renewed.
type staticTokens string

func (s staticTokens) Token(context.Context) (string, error)         { return string(s), nil }
func (s staticTokens) Renew(context.Context, string) (string, error) { return string(s), nil }

// TestTeamsServiceURLSurvivesRestart: the service URL of a conversation's
// activity, received by one process, is where another process — or the
// same one restarted, its memory empty — replies; a stored URL off the
// allow-list is not used.
func TestTeamsServiceURLSurvivesRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.registry = builtin.Registry(builtin.Options{APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	var mu sync.Mutex
	got := map[string][]string{}
	record := func(name string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got[name] = append(got[name], r.URL.EscapedPath())
			mu.Unlock()
			channelstest.Answer(http.StatusCreated, `{"id":"1"}`)(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	base, regional := record("base"), record("regional")
	store := &accounts.TeamsServiceURLs{Pool: b.env.Pool}
	newChannel := func() *teams.Channel {
		return teams.New(teams.Options{ServiceURLs: store,
			APIBasePolicy: channels.APIBasePolicy{HTTPHosts: []string{"127.0.0.1"}}})
	}
	settings := `{"api_base_url":"` + base.URL + `/teams"}`
	creds := `{"app_id":"a","client_secret":"s"}`
	id := b.create(t, accountOpts{channel: "teams", settings: settings, credentials: creds})
	acct := channels.Account{ID: id, TenantID: b.tenant, Settings: json.RawMessage(settings),
		Credentials: json.RawMessage(creds), Tokens: staticTokens("t")}

	// The process that received the activity.
	first := newChannel()
	in, err := first.NewInbound(acct)
	require.NoError(t, err)
	body, _ := json.Marshal(map[string]any{"type": "message", "id": "1", "channelId": "msteams",
		"serviceUrl": regional.URL + "/amer/", "conversation": map[string]string{"id": "19:x@thread.tacv2"},
		"from": map[string]string{"id": "u"}})
	_, err = in.Parse(context.Background(), &channels.Request{Body: body})
	require.NoError(t, err)

	send := func(ch *teams.Channel, conv string) {
		o, err := ch.NewOutbound(acct)
		require.NoError(t, err)
		_, err = o.Send(context.Background(), &channels.OutboundMessage{ConversationID: conv, Text: "x"})
		require.NoError(t, err)
	}
	send(newChannel(), "19:x@thread.tacv2") // another replica, or a restart

	// A URL in the table that the allow-list does not trust is ignored.
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		return db.TeamsServiceURLPut(context.Background(), tx, b.tenant, id, "19:y@thread.tacv2", "https://evil.example/amer")
	}))
	send(newChannel(), "19:y@thread.tacv2")

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string][]string{
		"regional": {"/amer/v3/conversations/19:x@thread.tacv2/activities"},
		"base":     {"/teams/v3/conversations/19:y@thread.tacv2/activities"},
	}, got)
}
