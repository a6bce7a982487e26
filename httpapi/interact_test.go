package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
)

// TestWebhookAnswersCallbackQueryAfterCommit: a Telegram callback_query
// webhook of a bot with a token is answered 200 once stored, and MIO then
// calls answerCallbackQuery (apart from the request); the platform's
// redelivery is a duplicate, stored once.
func TestWebhookAnswersCallbackQueryAfterCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, err := b.svc.AccountCreate(context.Background(), admin.AccountCreateParams{TenantID: b.tenant, ChannelType: "telegram",
		WebhookSecret: b.tgSecret, Credentials: json.RawMessage(`{"bot_token":"123456:callback-test"}`)})
	require.NoError(t, err)
	body := fixture(t, "telegram", "callback_query.json")
	url := b.srv.URL + "/webhooks/telegram/" + acct.ID.String()
	for range 2 {
		resp, out := post(t, url, body, map[string]string{"X-Telegram-Bot-Api-Secret-Token": b.tgSecret})
		require.Equal(t, http.StatusOK, resp.StatusCode, out)
	}
	require.Eventually(t, func() bool { return len(b.tg.Calls("answerCallbackQuery")) == 2 }, 10*time.Second, 10*time.Millisecond,
		"each delivery is answered: the redelivery too, its client is spinning again")
	require.Equal(t, "4382bfdwdsb323b2d9", b.tg.Calls("answerCallbackQuery")[0].Body["callback_query_id"])
	var kinds []string
	for _, e := range b.envelopes(t) {
		kinds = append(kinds, e["kind"].(string))
	}
	require.Equal(t, []string{"interaction"}, kinds, "stored once")
}
