package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
)

// TestReplyCrash kills `mio serve` with SIGKILL while agents stream
// replies with ack and restarts it. Each reply's idempotency key is its
// delivery id — a fresh key whenever a message is delivered again — so a
// reply committed without its ack (or an ack without its reply) would
// show as a second reply or a missing one. Every message ends with
// exactly one reply, and the consumer with nothing pending or dead.
func TestReplyCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	svc := admin.New(env.Pool, nil, "http://x")
	tenant, _, err := svc.TenantCreate(ctx, "crash")
	require.NoError(t, err)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook"})
	require.NoError(t, err)
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "agent", []db.Role{db.RoleConsume, db.RoleProduce})
	require.NoError(t, err)

	const total = 300
	rows := make([]db.InboxRow, total)
	for i := range rows {
		id := uuid.Must(uuid.NewV7())
		e, _ := json.Marshal(envelope.Message{ID: id, TenantID: tenant.ID, AccountID: acct.ID, ChannelType: "webhook",
			SourceMessageID: id.String(), Conversation: envelope.Conversation{ID: "c" + strconv.Itoa(i%7), Type: "dm"},
			Text: "q" + strconv.Itoa(i), Attachments: []envelope.Attachment{}})
		rows[i] = db.InboxRow{ID: id, AccountID: acct.ID, ChannelType: "webhook", SourceMessageID: id.String(),
			ConversationID: "c" + strconv.Itoa(i%7), State: db.InboxReady, Envelope: e, ReceivedAt: time.Now()}
	}
	require.NoError(t, db.InTenantTx(ctx, env.Pool, tenant.ID, func(tx pgx.Tx) error {
		_, err := db.InboxInsertBatch(ctx, tx, tenant.ID, rows)
		return err
	}))

	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	start := func() *exec.Cmd { return startServe(t, env.OwnerURL, key, addr) }
	server := start()
	// Network errors (the server is down) are retried for a while.
	c := client.New("http://"+addr, token, client.WithRetry(client.Retry{Attempts: 200, Base: 20 * time.Millisecond, Max: 100 * time.Millisecond}))
	_, err = c.PutConsumer(ctx, "agent", client.ConsumerConfig{AckWait: client.Duration(2 * time.Second)})
	require.NoError(t, err)

	var (
		replied  atomic.Int64
		lost     atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
		agentErr = make(chan error, 4)
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				ds, err := c.Pull(ctx, "agent", 5, 200*time.Millisecond)
				if err != nil {
					continue // the server is down: retried
				}
				for _, d := range ds {
					cmd := envelope.SendCommand{IdempotencyKey: "reply:" + d.DeliveryID.String(), Text: "re: " + d.Message.Text}
					_, err := c.Reply(ctx, "agent", d.DeliveryID, cmd)
					switch {
					case err == nil:
						replied.Add(1)
					case client.IsLeaseLost(err):
						lost.Add(1) // redelivered later under a new id
					default:
						select {
						case agentErr <- fmt.Errorf("reply: %w", err):
						default:
						}
					}
				}
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for replied.Load() < total/3 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	require.NoError(t, server.Process.Signal(syscall.SIGKILL))
	_ = server.Wait()
	server = start()
	defer func() { _ = server.Process.Signal(syscall.SIGTERM); _ = server.Wait() }()

	owner := env.OwnerPool(t)
	count := func() (replies, messages int) {
		require.NoError(t, owner.QueryRow(ctx, `SELECT count(*), count(DISTINCT (conversation_id, text)) FROM mio.outbox`).Scan(&replies, &messages))
		return replies, messages
	}
	deadline = time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, m := count(); m == total {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-agentErr:
		t.Fatal(err)
	default:
	}
	replies, messages := count()
	require.Equal(t, total, messages, "every message answered")
	require.Equal(t, total, replies, "none answered twice")
	info, err := c.GetConsumer(ctx, "agent")
	require.NoError(t, err)
	require.Zero(t, info.Stats.Pending+info.Stats.AckPending+info.Stats.Dead, "nothing pending, leased or dead: %+v", info.Stats)
	t.Logf("replies answered 200/202: %d, lease_lost: %d", replied.Load(), lost.Load())
}
