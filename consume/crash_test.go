package consume_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/localpg"
	"github.com/miohq/mio/migrations"
)

// TestPostgresCrashAtLeastOnce: pull transactions commit asynchronously
// (docs/architecture.md, "Pull commits"), acks synchronously. PostgreSQL
// is killed outright (every process of the cluster at once, so WAL not
// yet written is lost) right after an unacknowledged pull, with fsync on:
// after crash recovery, what was acknowledged before the crash is never
// delivered again, and everything else is delivered — again if its pull
// was lost, or after its lease expires if it survived.
func TestPostgresCrashAtLeastOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and crashes a PostgreSQL cluster of its own")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "pg")
	settings := map[string]string{"fsync": "on", "synchronous_commit": "on"}
	pg, err := localpg.Start(ctx, localpg.Options{DataDir: dir, KillWithParent: true, Settings: settings})
	if err != nil {
		t.Skipf("no local PostgreSQL server binaries: %v", err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	url := pg.URL("postgres")
	owner, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	_, err = migrations.New(owner).Up(ctx)
	owner.Close()
	require.NoError(t, err)
	open := func() *pgxpool.Pool {
		p, err := db.Open(ctx, url, db.PoolOptions{MaxConns: 4, RuntimeRole: "mio_runtime"})
		require.NoError(t, err)
		return p
	}
	pool := open()
	adm := admin.New(pool, nil, "http://x")
	tn, _, err := adm.TenantCreate(ctx, "crash")
	require.NoError(t, err)
	acct, err := adm.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: "webhook"})
	require.NoError(t, err)
	svc := consume.New(pool, nil, nil, nil, consume.Options{})
	_, _, err = svc.Put(ctx, tn.ID, "c", consume.Config{AckWait: time.Second})
	require.NoError(t, err)
	b := &testBundle{}
	var all []uuid.UUID
	require.NoError(t, db.InTenantTx(ctx, pool, tn.ID, func(tx pgx.Tx) error {
		texts := make([]string, 300)
		for i := range texts {
			texts[i] = "m"
		}
		all, err = b.insertTx(tx, tn.ID, acct.ID, "conv", texts...)
		return err
	}))

	// Freeze the WAL writer: from here on only a synchronous commit writes
	// WAL to disk, so what the crash keeps is exactly what a synchronous
	// commit covered.
	walwriter := childNamed(t, pg.PID(), "walwriter")
	require.NoError(t, syscall.Kill(walwriter, syscall.SIGSTOP))

	pullIDs := func(svc *consume.Service, n int) ([]uuid.UUID, []uuid.UUID) {
		ds, err := svc.Pull(ctx, tn.ID, "c", n, 5*time.Second)
		require.NoError(t, err)
		var deliveries, messages []uuid.UUID
		for _, d := range ds {
			deliveries = append(deliveries, d.DeliveryID)
			messages = append(messages, messageID(t, d.Message))
		}
		return deliveries, messages
	}
	ackedDeliveries, acked := pullIDs(svc, 100)
	require.Len(t, acked, 100)
	res, err := svc.Settle(ctx, tn.ID, "c", consume.ActionAck, ackedDeliveries, consume.SettleOptions{})
	require.NoError(t, err)
	for _, r := range res {
		require.True(t, r.OK)
	}
	lostDeliveries, _ := pullIDs(svc, 100)
	require.Len(t, lostDeliveries, 100)

	// Power cut for the cluster: SIGKILL to the postmaster and every
	// process it started (each is its own process group).
	procs := children(t, pg.PID())
	require.NoError(t, syscall.Kill(pg.PID(), syscall.SIGKILL))
	for _, pid := range procs {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-pg.Done()
	waitGone(t, procs)
	pool.Close()
	pg, err = localpg.Start(ctx, localpg.Options{DataDir: dir, Port: pg.Port(), KillWithParent: true, Settings: settings})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	pool = open()
	defer pool.Close()
	svc = consume.New(pool, nil, nil, nil, consume.Options{})

	res, err = svc.Settle(ctx, tn.ID, "c", consume.ActionAck, lostDeliveries[:1], consume.SettleOptions{})
	require.NoError(t, err)
	require.False(t, res[0].OK, "the last pull committed asynchronously and was lost: its deliveries do not settle")
	// The lost pull's position and taken count went together: its messages
	// are pending again, exactly (docs/architecture.md, "Exact backlog").
	info, err := svc.Get(ctx, tn.ID, "c")
	require.NoError(t, err)
	require.Equal(t, int64(200), info.Stats.Pending, "pending after the crash")

	wasAcked := map[uuid.UUID]bool{}
	for _, id := range acked {
		wasAcked[id] = true
	}
	seen := map[uuid.UUID]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < 200 && time.Now().Before(deadline) {
		ds, ms := pullIDs(svc, 100)
		for _, m := range ms {
			require.False(t, wasAcked[m], "a message acknowledged before the crash came back")
			seen[m] = true
		}
		if len(ds) > 0 {
			_, err := svc.Settle(ctx, tn.ID, "c", consume.ActionAck, ds, consume.SettleOptions{})
			require.NoError(t, err)
		}
	}
	for _, id := range all {
		require.True(t, wasAcked[id] || seen[id], "message %s lost", id)
	}
	info, err = svc.Get(ctx, tn.ID, "c")
	require.NoError(t, err)
	require.Zero(t, info.Stats.AckPending+info.Stats.Pending, "nothing left")
}

// messageID reads the id of a delivered mio.v1.Message.
func messageID(t *testing.T, msg []byte) uuid.UUID {
	t.Helper()
	var m struct {
		ID uuid.UUID `json:"id"`
	}
	require.NoError(t, json.Unmarshal(msg, &m))
	return m.ID
}

// children returns the pids of parent's child processes and their
// command lines.
func childProcs(t *testing.T, parent int) map[int]string {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	out := map[int]string{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		out[pid] = string(cmd)
	}
	return out
}

func children(t *testing.T, parent int) []int {
	var pids []int
	for pid := range childProcs(t, parent) {
		pids = append(pids, pid)
	}
	return pids
}

// childNamed returns the pid of the child of parent whose command line
// starts with "postgres: "+name.
func childNamed(t *testing.T, parent int, name string) int {
	t.Helper()
	for pid, cmd := range childProcs(t, parent) {
		if strings.HasPrefix(cmd, "postgres: "+name) {
			return pid
		}
	}
	t.Fatalf("no %s process under %d", name, parent)
	return 0
}

// waitGone waits until none of pids exists any more.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, pid := range pids {
			stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
			if err == nil && !strings.Contains(string(stat), ") Z ") {
				return false // alive (a zombie is gone for this purpose)
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
}
