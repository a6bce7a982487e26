package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/config"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
)

// topServer is an in-process mio serve on a fresh database with a
// tenant, a Standard Webhooks account whose endpoint refuses every send
// (HTTP 400), a viewer admin token in a file and an API token.
type topServer struct {
	env        *dbtest.Env
	tenant     uuid.UUID
	account    uuid.UUID
	secret     string
	publicURL  string
	adminURL   string
	tokenFile  string
	apiToken   string
	webhookURL string
}

func startTopServer(t *testing.T) *topServer {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	publicAddr := freeAddr(t)
	svc := admin.New(env.Pool, box, "http://"+publicAddr)
	tenant, _, err := svc.TenantCreate(ctx, "tmux")
	require.NoError(t, err)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no such conversation", http.StatusBadRequest)
	}))
	t.Cleanup(endpoint.Close)
	settings, _ := json.Marshal(map[string]string{"endpoint_url": endpoint.URL})
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook",
		DisplayName: "tmux hook", Settings: settings, WebhookSecret: secret})
	require.NoError(t, err)
	adminToken, _, err := svc.AdminTokenCreate(ctx, admin.AdminTokenCreateParams{Name: "top", Roles: []db.AdminRole{db.AdminRoleViewer}})
	require.NoError(t, err)
	apiToken, _, err := svc.TokenCreate(ctx, tenant.ID, "agent", []db.Role{db.RoleConsume, db.RoleProduce})
	require.NoError(t, err)
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(adminToken+"\n"), 0o600))

	vars := map[string]string{
		"MIO_DATABASE_URL": env.OwnerURL, "MIO_HTTP_ADDR": publicAddr, "MIO_ADMIN_ADDR": "127.0.0.1:0",
		"MIO_PUBLIC_URL": "http://" + publicAddr, "MIO_MASTER_KEY": base64.StdEncoding.EncodeToString(key), "MIO_ENV": "dev",
		"MIO_BLOB_URL": "file://" + t.TempDir(), "MIO_LOG_LEVEL": "error",
	}
	cfg, _, err := config.Load("mio serve", nil, func(k string) string { return vars[k] }, io.Discard)
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	listening := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(sctx, cfg, slog.New(slog.DiscardHandler), nil, nil, func(_, adminAddr string) { listening <- adminAddr })
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	s := &topServer{env: env, tenant: tenant.ID, account: acct.ID, secret: secret, publicURL: "http://" + publicAddr,
		tokenFile: tokenFile, apiToken: apiToken, webhookURL: acct.WebhookURL}
	select {
	case addr := <-listening:
		s.adminURL = "http://" + addr
	case err := <-done:
		t.Fatalf("mio serve stopped: %v", err)
	}
	return s
}

// tmuxPath is tmux (make test installs it: deploy/scripts/ensure-tmux.sh).
// Without it the terminal test fails under CI=true and skips elsewhere.
func tmuxPath(t *testing.T) string {
	if p, err := exec.LookPath("tmux"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("tmux is not installed: run deploy/scripts/ensure-tmux.sh (apt-get install -y tmux)")
	}
	t.Skip("tmux is not installed: skipping the terminal test of mio top (deploy/scripts/ensure-tmux.sh installs it)")
	return ""
}

// terminal is an 80×24 tmux session of its own server (socket).
type terminal struct {
	tmux, socket string
}

// startTerminal runs command (a shell command line) in a detached 80×24
// tmux session; the server is killed at cleanup.
func startTerminal(t *testing.T, command string) *terminal {
	t.Helper()
	dir, err := os.MkdirTemp("", "mio-tmux-") // short: a socket path has at most 107 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	term := &terminal{tmux: tmuxPath(t), socket: filepath.Join(dir, "sock")}
	term.run(t, "-f", "/dev/null", "new-session", "-d", "-s", "top", "-x", "80", "-y", "24", command)
	t.Cleanup(func() { _ = exec.Command(term.tmux, "-S", term.socket, "kill-server").Run() })
	return term
}

func (term *terminal) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(term.tmux, append([]string{"-u", "-S", term.socket}, args...)...)
	cmd.Env = append(baseEnv(), "TERM=xterm-256color", "LANG=C.UTF-8")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "tmux %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// keys types keys into the session (tmux key names: 1, Tab, Enter …).
func (term *terminal) keys(t *testing.T, keys ...string) {
	t.Helper()
	term.run(t, append([]string{"send-keys", "-t", "top"}, keys...)...)
}

// screen is the session's text, one line per row.
func (term *terminal) screen(t *testing.T) string {
	t.Helper()
	return term.run(t, "capture-pane", "-p", "-t", "top")
}

// waitFor polls the screen until ok holds, up to 30 s, and returns it.
func (term *terminal) waitFor(t *testing.T, what string, ok func(screen string) bool) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := term.screen(t)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen does not show %s after 30 s:\n%s", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// consumerRow is the fields of the row of consumer name on the consumers
// view: tenant, consumer, pending, ack pending, redelivered, dead, oldest.
func consumerRow(screen, name string) []string {
	for _, line := range strings.Split(screen, "\n") {
		if f := strings.Fields(line); len(f) == 7 && f[1] == name {
			return f
		}
	}
	return nil
}

// TestTopInTmux drives mio top in a real 80×24 terminal (tmux) against a
// running server: the consumers view, a webhook seen in the tail view and
// as the consumer's backlog, a dead letter with its last error, the
// tenant key, and q. Screens are logged (go test -v) as they are asserted.
func TestTopInTmux(t *testing.T) {
	tmuxPath(t)
	ctx := context.Background()
	s := startTopServer(t)
	agent := client.New(s.publicURL, s.apiToken)
	_, err := agent.PutConsumer(ctx, "agent", client.ConsumerConfig{})
	require.NoError(t, err)

	term := startTerminal(t, fmt.Sprintf("'%s' top --admin-url '%s' --admin-token-file '%s' --interval 500ms; echo \"mio top exited $?\"; sleep 600",
		mioBin, s.adminURL, s.tokenFile))
	screen := term.waitFor(t, "the consumer", func(sc string) bool { return consumerRow(sc, "agent") != nil })
	require.Equal(t, []string{"tmux", "agent", "0", "0", "0", "0", "-"}, consumerRow(screen, "agent"))
	require.Contains(t, screen, "[1 Consumers]")
	for i, line := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		require.LessOrEqual(t, len([]rune(line)), 80, "line %d", i)
	}

	// A webhook: the tail view shows its conversation and text.
	term.keys(t, "5")
	term.waitFor(t, "the live tail", func(sc string) bool {
		return strings.Contains(sc, "[5 Tail]") && strings.Contains(sc, "tail live")
	})
	postSignedWebhook(t, s.webhookURL, s.secret, "conv-tmux", "hello from the terminal test")
	screen = term.waitFor(t, "the tailed message", func(sc string) bool { return strings.Contains(sc, "hello from the terminal test") })
	require.Contains(t, screen, "conv-tmux")
	require.Contains(t, screen, "webhook")
	t.Logf("tail view:\n%s", screen)

	// The consumer's backlog goes to 1.
	term.keys(t, "1")
	screen = term.waitFor(t, "a backlog of 1", func(sc string) bool {
		r := consumerRow(sc, "agent")
		return r != nil && r[2] == "1"
	})
	t.Logf("consumers view:\n%s", screen)

	// A send the endpoint refuses becomes a dead letter, shown with its
	// last error.
	sent, err := agent.Send(ctx, envelope.SendCommand{IdempotencyKey: "tmux-1", AccountID: s.account, ConversationID: "conv-tmux", Text: "doomed"})
	require.NoError(t, err)
	waitDead(t, s.env, s.tenant, sent.ID)
	term.keys(t, "4")
	screen = term.waitFor(t, "the dead letter", func(sc string) bool {
		return strings.Contains(sc, "[4 Dead letters]") && strings.Contains(sc, "endpoint answered HTTP 400")
	})
	require.Regexp(t, `outbound webhook\s+tmux\s+\d+ `+sent.ID.String()+`\n\s+permanent: webhook: endpoint answered HTTP 400`, screen)
	t.Logf("dead letters view:\n%s", screen)

	// t shows the one tenant; q quits with status 0.
	term.keys(t, "t")
	term.waitFor(t, "the tenant", func(sc string) bool { return strings.Contains(sc, "tenant tmux ·") })
	term.keys(t, "3")
	screen = term.waitFor(t, "the rates", func(sc string) bool { return strings.Contains(sc, "webhook    in") })
	t.Logf("rates view:\n%s", screen)
	term.keys(t, "q")
	term.waitFor(t, "mio top's exit", func(sc string) bool { return strings.Contains(sc, "mio top exited 0") })
}

// TestTopOnce: --once prints plain tables and exits 0; a missing URL or
// token, and a token the server refuses, are one line and exit 1.
func TestTopOnce(t *testing.T) {
	t.Parallel()
	s := startTopServer(t)
	_, err := client.New(s.publicURL, s.apiToken).PutConsumer(context.Background(), "agent", client.ConsumerConfig{})
	require.NoError(t, err)
	postSignedWebhook(t, s.webhookURL, s.secret, "conv-once", "hello")

	r := runMio(t, []string{"MIO_ADMIN_URL=" + s.adminURL, "MIO_ADMIN_TOKEN_FILE=" + s.tokenFile}, "top", "--once")
	require.Zero(t, r.code, r.stderr)
	require.Regexp(t, `(?m)^tmux\s+agent\s+1\s+0\s+0\s+0\s`, r.stdout)
	require.Regexp(t, `(?m)^webhook\s+1\s+0\s+-\s+-$`, r.stdout)
	require.NotContains(t, r.stdout, "\x1b", "no terminal control")

	r = runMio(t, []string{"MIO_ADMIN_URL=" + s.adminURL, "MIO_ADMIN_TOKEN=mioadm_wrong"}, "top", "--once")
	require.Equal(t, 1, r.code)
	require.Equal(t, "mio: the admin API refused the admin token (401): check --admin-token-file or MIO_ADMIN_TOKEN\n", r.stderr)

	dataDir := t.TempDir() // no dev.json
	r = runMio(t, []string{"MIO_DATA_DIR=" + dataDir, "MIO_ADMIN_TOKEN_FILE=" + s.tokenFile}, "top", "--once")
	require.Equal(t, 1, r.code)
	require.Regexp(t, `^mio: no admin URL: [^\n]+\n$`, r.stderr)
	r = runMio(t, []string{"MIO_DATA_DIR=" + dataDir, "MIO_ADMIN_URL=" + s.adminURL}, "top", "--once")
	require.Equal(t, 1, r.code)
	require.Regexp(t, `^mio: no admin token: [^\n]+\n$`, r.stderr)

	// dev.json supplies both, as mio dev writes it.
	b, _ := json.Marshal(devInfo{AdminURL: s.adminURL, AdminToken: strings.TrimSpace(readFile(t, s.tokenFile))})
	require.NoError(t, os.WriteFile(filepath.Join(dataDir, "dev.json"), b, 0o600))
	r = runMio(t, []string{"MIO_DATA_DIR=" + dataDir}, "top", "--once", "--tenant", "tmux")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "tenant tmux ("+s.tenant.String()+")")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
