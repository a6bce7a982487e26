package consume_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/notify"
)

type testBundle struct {
	env     *dbtest.Env
	hub     *notify.Hub
	svc     *admin.Service
	srv     *httptest.Server
	tenant  uuid.UUID
	account uuid.UUID
	token   string
	client  *client.Client
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	b := &testBundle{env: dbtest.NewWith(t, dbtest.Options{MaxConns: 20})}
	b.svc = admin.New(b.env.Pool, nil, "http://x")
	b.hub = notify.New(nil, nil, notify.Options{})
	m := metrics.New()
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: m, Hub: b.hub,
		Consumers: consume.New(b.env.Pool, b.hub, m, nil, consume.Options{MaxPoll: 20 * time.Millisecond})})
	b.srv = httptest.NewServer(api.PublicHandler())
	t.Cleanup(b.srv.Close)
	b.tenant, b.account, b.token = b.newTenant(t, "consume", "produce", "read")
	b.client = client.New(b.srv.URL, b.token)
	_ = ctx
	return b
}

// newTenant creates a tenant (a name of its own: names are unique) with a
// webhook account and a token.
func (b *testBundle) newTenant(t *testing.T, roles ...db.Role) (uuid.UUID, uuid.UUID, string) {
	t.Helper()
	ctx := context.Background()
	tn, _, err := b.svc.TenantCreate(ctx, "t-"+uuid.NewString())
	require.NoError(t, err)
	acct, err := b.svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: "webhook"})
	require.NoError(t, err)
	tok, _, err := b.svc.TokenCreate(ctx, tn.ID, "test", roles)
	require.NoError(t, err)
	return tn.ID, acct.ID, tok
}

// insert commits messages in one transaction and returns their ids.
func (b *testBundle) insert(t *testing.T, tenant, account uuid.UUID, conv string, texts ...string) []uuid.UUID {
	t.Helper()
	var ids []uuid.UUID
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, tenant, func(tx pgx.Tx) error {
		var err error
		ids, err = b.insertTx(tx, tenant, account, conv, texts...)
		return err
	}))
	return ids
}

func (b *testBundle) insertTx(tx pgx.Tx, tenant, account uuid.UUID, conv string, texts ...string) ([]uuid.UUID, error) {
	rows := make([]db.InboxRow, len(texts))
	for i, text := range texts {
		id := uuid.Must(uuid.NewV7())
		env, _ := json.Marshal(envelope.Message{ID: id, TenantID: tenant, AccountID: account, ChannelType: "webhook",
			SourceMessageID: id.String(), Conversation: envelope.Conversation{ID: conv, Type: "dm"}, Text: text,
			Attachments: []envelope.Attachment{}})
		rows[i] = db.InboxRow{ID: id, AccountID: account, ChannelType: "webhook", SourceMessageID: id.String(),
			ConversationID: conv, State: db.InboxReady, Envelope: env, Raw: []byte(`{"n":` + fmt.Sprint(i) + `}`), ReceivedAt: time.Now()}
	}
	return db.InboxInsertBatch(context.Background(), tx, tenant, rows)
}
