package main

import (
	"context"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
)

// TestServeWithListenURL: `mio serve` with its pool on the runtime pool's
// URL and MIO_DATABASE_LISTEN_URL for LISTEN (River then polls) takes a
// webhook and delivers it to a long-polling consumer. Under
// MIO_TEST_PGBOUNCER=1 the pool URL goes through PgBouncer in transaction
// pooling mode, the supported way to run behind it.
func TestServeWithListenURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	f := newWebhookFixture(t, env, "pooled")
	token, _, err := f.svc.TokenCreate(ctx, f.tenant, "agent", []db.Role{db.RoleConsume})
	require.NoError(t, err)

	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(mioBin, "serve")
	cmd.Env = append(baseEnv(), "MIO_DATABASE_URL="+env.PoolURL, "MIO_DATABASE_LISTEN_URL="+env.ListenURL,
		"MIO_MASTER_KEY="+f.masterKey, "MIO_HTTP_ADDR="+addr, "MIO_ADMIN_ADDR=127.0.0.1:0", "MIO_LOG_LEVEL=error")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	base := "http://" + addr
	waitReady(t, base, out)

	c := client.New(base, token)
	_, err = c.PutConsumer(ctx, "agent", client.ConsumerConfig{DeliverPolicy: "all"})
	require.NoError(t, err)
	status, err := f.send(http.DefaultClient, base, "msg_pooled", "through the pooler")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, out.String())

	var got []client.Delivery
	for deadline := time.Now().Add(30 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		got, err = c.Pull(ctx, "agent", 10, 5*time.Second)
		require.NoError(t, err)
	}
	require.Len(t, got, 1, out.String())
	require.Equal(t, "through the pooler", got[0].Message.Text)
	res, err := c.Ack(ctx, "agent", got[0].DeliveryID)
	require.NoError(t, err)
	require.Len(t, res, 1)
}
