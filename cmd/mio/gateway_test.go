package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/discord"
	"github.com/miohq/mio/channels/discord/discordtest"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/secretbox"
)

// TestDiscordGatewayKillTakeover runs two `mio serve` processes on one
// database with a Discord account whose Gateway is a fake: one connection
// only; SIGKILL of the holder; the other process takes the account over
// with the default lease (10 s) and scan (2 s), resumes from the sequence
// stored with the messages, and every MESSAGE_CREATE is stored once.
func TestDiscordGatewayKillTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, _ := secretbox.New(key)
	svc := admin.New(env.Pool, box, "http://x")
	tenant, _, err := svc.TenantCreate(ctx, "gateway")
	require.NoError(t, err)
	fake := discordtest.NewGateway(t, "bot-token")
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "discord",
		WebhookSecret: hex.EncodeToString(pub),
		Settings:      json.RawMessage(fmt.Sprintf(`{"gateway_url": %q}`, fake.URL())),
		Credentials:   json.RawMessage(`{"bot_token": "bot-token"}`)})
	require.NoError(t, err)

	start := func() *exec.Cmd {
		addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		cmd := exec.Command(mioBin, "serve")
		cmd.Env = append(baseEnv(), "MIO_DATABASE_URL="+env.OwnerURL, "MIO_MASTER_KEY="+base64.StdEncoding.EncodeToString(key),
			"MIO_HTTP_ADDR="+addr, "MIO_ADMIN_ADDR=127.0.0.1:0", "MIO_LOG_LEVEL=error")
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitReady(t, "http://"+addr, out)
		return cmd
	}
	wait := func(what string, cond func(discordtest.Stats) bool) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		require.True(t, fake.Wait(wctx, cond), "fake gateway: %s: %+v", what, fake.Stats())
	}
	stored := func() map[string]int {
		out := map[string]int{}
		require.NoError(t, db.InTenantTx(ctx, env.Pool, tenant.ID, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT source_message_id FROM mio.inbox WHERE account_id = $1`, acct.ID)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			for _, id := range ids {
				out[id]++
			}
			return err
		}))
		return out
	}
	send := func(from, to int) {
		for i := from; i < to; i++ {
			fake.Dispatch(discord.EventMessageCreate, discordtest.Message(strconv.Itoa(9000+i), "500", "77", "1", "m"))
		}
	}
	waitStored := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return len(stored()) >= n }, 60*time.Second, 50*time.Millisecond, "want %d stored", n)
	}

	first := start()
	wait("first holder connected", func(s discordtest.Stats) bool { return s.Readies == 1 && s.Connected })
	second := start()
	send(0, 20)
	waitStored(20)

	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	killed := time.Now()
	wait("connection gone", func(s discordtest.Stats) bool { return s.Live == 0 })
	send(20, 40) // while nobody holds the account: replayed on RESUME
	wait("takeover", func(s discordtest.Stats) bool { return len(s.Resumes) == 1 && s.Connected })
	t.Logf("takeover after SIGKILL: %s (lease 10 s + scan 2 s)", time.Since(killed).Round(100*time.Millisecond))
	send(40, 50)
	waitStored(50)

	got := stored()
	require.Len(t, got, 50)
	for id, n := range got {
		require.Equal(t, 1, n, "message %s", id)
	}
	st := fake.Stats()
	require.Equal(t, 1, st.Identifies, "the session was resumed, not identified anew")
	require.Equal(t, 1, st.MaxLive, "one connection at a time")
	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	_ = second.Wait()
}
