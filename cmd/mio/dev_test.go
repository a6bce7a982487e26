package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db/dbtest"
)

// TestDevFromEmptyDirectory runs `mio dev` as a user would: from an empty
// directory it starts a private PostgreSQL, migrates, seeds, serves
// /readyz; Ctrl-C stops everything; a second run reuses the data.
func TestDevFromEmptyDirectory(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	require.NoError(t, os.Chmod(work, 0o755)) // the postgres OS user must reach .mio/pg

	first := startDev(t, work)
	require.NotEmpty(t, first.info.APIToken)
	require.True(t, strings.HasPrefix(first.info.WebhookSecret, "whsec_"))
	require.Equal(t, "webhook", first.info.ChannelType)
	require.Contains(t, first.stdout(), first.info.WebhookURL)
	require.Contains(t, first.stdout(), first.info.APIToken)

	// The user flow of the README: a consumer, a signed webhook, a pull.
	c := client.New(first.info.PublicURL, first.info.APIToken)
	ctx := context.Background()
	_, err := c.PutConsumer(ctx, "agent", client.ConsumerConfig{})
	require.NoError(t, err)
	send := exec.Command(mioBin, "send-test", "--text", "hello from the test")
	send.Dir, send.Env = work, baseEnv()
	out, err := send.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "-> 200")
	ds, err := c.Pull(ctx, "agent", 10, 10*time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, "hello from the test", ds[0].Message.Text)
	res, err := c.Ack(ctx, "agent", ds[0].DeliveryID)
	require.NoError(t, err)
	require.True(t, res[0].OK)

	// mio admin, run in the same directory, finds the dev database
	// through dev.json.
	require.NotEmpty(t, first.info.DatabaseURL)
	require.Equal(t, first.info.AdminURL+"/", first.info.ConsoleURL)
	adm := exec.Command(mioBin, "admin", "consumer", "list")
	adm.Dir, adm.Env = work, baseEnv()
	out, err = adm.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), `"name": "agent"`)

	pgPID := postmasterPID(t, work)
	first.interrupt(t)
	require.False(t, processAlive(pgPID), "postgres (pid %d) must be gone after Ctrl-C", pgPID)
	_, err = os.Stat(filepath.Join(work, ".mio", "pg", "postmaster.pid"))
	require.True(t, os.IsNotExist(err), "clean shutdown removes postmaster.pid")

	second := startDev(t, work)
	require.Equal(t, first.info.TenantID, second.info.TenantID, "second run reuses the database and the demo install")
	require.Equal(t, first.info.APIToken, second.info.APIToken)
	require.NotContains(t, second.stdout(), "initdb")
	pgPID = postmasterPID(t, work)
	second.interrupt(t)
	require.False(t, processAlive(pgPID))
}

// TestDevReusesDemoTenant: `mio dev` pointed at an existing database from
// a second data directory reuses the demo tenant the first one created,
// instead of creating a second tenant named demo.
func TestDevReusesDemoTenant(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	dbURL := "MIO_DATABASE_URL=" + env.OwnerURL
	var runs []*devProc
	for range 2 {
		d := startDev(t, t.TempDir(), dbURL)
		require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
		select {
		case err := <-d.done:
			require.NoError(t, err, d.out.String())
		case <-time.After(45 * time.Second):
			t.Fatalf("mio dev did not stop on Ctrl-C:\n%s", d.out.String())
		}
		runs = append(runs, d)
	}
	require.Equal(t, runs[0].info.TenantID, runs[1].info.TenantID)
	var n int
	require.NoError(t, env.OwnerPool(t).QueryRow(context.Background(),
		`SELECT count(*) FROM mio.tenants WHERE lower(name) = 'demo'`).Scan(&n))
	require.Equal(t, 1, n)
}

type devProc struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	info devInfo
	done chan error
}

func (d *devProc) stdout() string { return d.out.String() }

// startDev runs `mio dev` in work (data directory work/.mio) with extra
// environment variables, and waits until it serves.
func startDev(t *testing.T, work string, env ...string) *devProc {
	t.Helper()
	cmd := exec.Command(mioBin, "dev", "--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0")
	cmd.Dir = work
	cmd.Env = append(baseEnv(), env...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	d := &devProc{cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-d.done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
			}
		}
	})

	devJSON := filepath.Join(work, ".mio", "dev.json")
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case err := <-d.done:
			t.Fatalf("mio dev exited early: %v\n%s", err, out.String())
		default:
		}
		if b, err := os.ReadFile(devJSON); err == nil && json.Unmarshal(b, &d.info) == nil &&
			d.info.PublicURL != "" && strings.Contains(out.String(), "MIO is running") {
			resp, err := http.Get(d.info.PublicURL + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return d
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mio dev not ready in time:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (d *devProc) interrupt(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-d.done:
		require.NoError(t, err, d.out.String())
	case <-time.After(45 * time.Second):
		t.Fatalf("mio dev did not stop on Ctrl-C:\n%s", d.out.String())
	}
	require.Contains(t, d.out.String(), "PostgreSQL stopped")
}

func postmasterPID(t *testing.T, work string) int {
	t.Helper()
	f, err := os.Open(filepath.Join(work, ".mio", "pg", "postmaster.pid"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	require.True(t, sc.Scan())
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	require.NoError(t, err)
	return pid
}

func processAlive(pid int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if syscall.Kill(pid, 0) != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
