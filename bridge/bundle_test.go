package bridge_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/bridge"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/ingest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/secretbox"
)

// natsServer is an in-process nats-server with JetStream on a file store
// in a temp dir; it can be stopped and started again on the same port and
// store.
type natsServer struct {
	t    testing.TB
	dir  string
	port int
	srv  *server.Server
}

func startNATS(t testing.TB) *natsServer {
	t.Helper()
	n := &natsServer{t: t, dir: t.TempDir(), port: -1}
	n.start()
	t.Cleanup(n.stop)
	return n
}

func (n *natsServer) start() {
	n.t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: n.port, JetStream: true, StoreDir: n.dir,
		NoLog: true, NoSigs: true})
	require.NoError(n.t, err)
	go s.Start()
	require.True(n.t, s.ReadyForConnections(10*time.Second), "nats-server did not start")
	n.srv = s
	n.port = s.Addr().(*net.TCPAddr).Port
}

func (n *natsServer) stop() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}

func (n *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// bundle is one test's database, tenant, account and NATS server.
type bundle struct {
	env     *dbtest.Env
	tenant  uuid.UUID
	account uuid.UUID
	nats    *natsServer
	admin   *admin.Service
}

func setup(t *testing.T) *bundle {
	t.Helper()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://mio.test")
	b := &bundle{env: env, nats: startNATS(t), admin: svc}
	b.tenant, b.account = b.newTenant(t)
	return b
}

func (b *bundle) newTenant(t *testing.T) (tenant, account uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	tn, _, err := b.admin.TenantCreate(ctx, "bridge-"+uuid.NewString())
	require.NoError(t, err)
	a, err := b.admin.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: envelope.ChannelWebhook,
		WebhookSecret: "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"})
	require.NoError(t, err)
	return tn.ID, a.ID
}

// otherTenant is a second tenant on the same database and NATS server.
func (b *bundle) otherTenant(t *testing.T) *bundle {
	o := *b
	o.tenant, o.account = b.newTenant(t)
	return &o
}

// rows prepares n ready messages in the given conversations (round robin).
func (b *bundle) rows(n int, conversations ...string) []db.InboxRow {
	if len(conversations) == 0 {
		conversations = []string{"c1", "c2", "c3"}
	}
	msgs := make([]envelope.Message, n)
	for i := range msgs {
		msgs[i] = envelope.Message{SourceMessageID: uuid.NewString(),
			Conversation: envelope.Conversation{ID: conversations[i%len(conversations)], Type: envelope.ConversationGroup},
			Sender:       envelope.Sender{ID: "u1", DisplayName: "Ann"}, Text: fmt.Sprintf("hello %d", i), SentAt: time.Now()}
	}
	req := ingest.Prepare(&accounts.Account{ID: b.account, TenantID: b.tenant, ChannelType: envelope.ChannelWebhook},
		&channels.Parsed{Messages: msgs}, []byte(`{"k":1}`), time.Now())
	return req.Messages
}

// insert commits rows in one transaction and returns their ids.
func (b *bundle) insert(t testing.TB, rows []db.InboxRow) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTenant(ctx, b.env.Pool, b.tenant)
	require.NoError(t, err)
	ids, err := db.InboxInsertBatch(ctx, tx, b.tenant, rows)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	return ids
}

// connect opens a client connection to the test server.
func (b *bundle) connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := bridge.Connect(bridge.ConnectOptions{URL: b.nats.url()})
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// newBridge returns a bridge on its own connection.
func (b *bundle) newBridge(t testing.TB, cfg bridge.Config) (*bridge.Bridge, *metrics.Bridge) {
	t.Helper()
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.NewBridge(nil)
	}
	if cfg.ClaimInterval == 0 {
		cfg.ClaimInterval = 100 * time.Millisecond
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	br, err := bridge.New(b.env.Pool, b.connect(t), cfg)
	require.NoError(t, err)
	return br, cfg.Metrics
}

// run runs br until the returned stop is called (or the test ends).
func run(t testing.TB, br *bridge.Bridge) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); br.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// streamMsgs reads every message of the stream: Nats-Msg-Id → count, and
// the subjects.
func (b *bundle) streamMsgs(t testing.TB, name string) (ids map[string]int, subjects []string, headers []nats.Header) {
	t.Helper()
	ctx := context.Background()
	js, err := jetstream.New(b.connect(t))
	require.NoError(t, err)
	s, err := js.Stream(ctx, name)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	ids = map[string]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		ids[m.Header.Get(jetstream.MsgIDHeader)]++
		subjects = append(subjects, m.Subject)
		headers = append(headers, m.Header)
	}
	return ids, subjects, headers
}

// waitMsgs waits until the stream holds want messages (a wait for an
// outcome, not a timing assertion).
func (b *bundle) waitMsgs(t testing.TB, name string, want uint64) {
	t.Helper()
	ctx := context.Background()
	js, err := jetstream.New(b.connect(t))
	require.NoError(t, err)
	var got uint64
	require.Eventually(t, func() bool {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		if err != nil {
			return false
		}
		got = info.State.Msgs
		return got >= want
	}, 60*time.Second, 20*time.Millisecond, "stream %s: want %d messages", name, want)
	require.Equal(t, want, got)
}

// terminate ends a backend as a killed process's connection would end.
func (b *bundle) terminate(t testing.TB, pid uint32) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.env.OwnerURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var ok bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int32(pid)).Scan(&ok))
	require.True(t, ok)
}
