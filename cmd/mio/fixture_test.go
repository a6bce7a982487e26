package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/secretbox"
)

// webhookFixture is a tenant with a Standard Webhooks account, sealed
// with a fresh master key, for tests that run `mio serve`.
type webhookFixture struct {
	svc       *admin.Service
	tenant    uuid.UUID
	account   uuid.UUID
	secret    string
	masterKey string // base64, for MIO_MASTER_KEY
}

func newWebhookFixture(t *testing.T, env *dbtest.Env, tenantName string) *webhookFixture {
	t.Helper()
	ctx := context.Background()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, _ := secretbox.New(key)
	svc := admin.New(env.Pool, box, "http://x")
	tenant, _, err := svc.TenantCreate(ctx, tenantName)
	require.NoError(t, err)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook", WebhookSecret: secret})
	require.NoError(t, err)
	return &webhookFixture{svc: svc, tenant: tenant.ID, account: acct.ID, secret: secret, masterKey: base64.StdEncoding.EncodeToString(key)}
}

// send posts a signed webhook message with id and text to the server at
// base and returns the status.
func (f *webhookFixture) send(client *http.Client, base, id, text string) (int, error) {
	body := []byte(fmt.Sprintf(`{"type":"message.created","timestamp":%q,"data":{"conversation":{"id":"c"},"sender":{"id":"u"},"text":%q}}`,
		time.Now().UTC().Format(time.RFC3339), text))
	now := time.Now()
	sig, err := webhook.Sign(f.secret, id, now, body)
	if err != nil {
		return 0, err
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/webhook/"+f.account.String(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
