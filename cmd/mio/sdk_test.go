package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/secretbox"
)

// sdkServer starts `mio serve` on a fresh test database with a tenant, a
// generic-webhook account and a token with every agent role, and returns
// the environment the SDK test suites read (MIO_URL, MIO_TOKEN,
// MIO_WEBHOOK_URL, MIO_WEBHOOK_SECRET).
func sdkServer(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://x")
	tenant, err := svc.TenantCreate(ctx, "sdk")
	require.NoError(t, err)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook", WebhookSecret: secret})
	require.NoError(t, err)
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "sdk", []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead})
	require.NoError(t, err)

	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(mioBin, "serve")
	cmd.Env = append(baseEnv(), "MIO_DATABASE_URL="+env.OwnerURL, "MIO_MASTER_KEY="+base64.StdEncoding.EncodeToString(key),
		"MIO_HTTP_ADDR="+addr, "MIO_ADMIN_ADDR=127.0.0.1:0", "MIO_LOG_LEVEL=error")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	waitReady(t, "http://"+addr, out)
	base := "http://" + addr
	return []string{"MIO_URL=" + base, "MIO_TOKEN=" + token, "MIO_WEBHOOK_URL=" + base + "/webhooks/webhook/" + acct.ID.String(),
		"MIO_WEBHOOK_SECRET=" + secret}
}

// repoRoot is the module root (this package is cmd/mio).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	return root
}

// tool finds an executable or skips: make's setup installs python3 and
// nodejs from Debian when they are missing, so this skip only happens
// outside `make test` on a machine without them.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (make test installs it: deploy/scripts/ensure-sdk-tools.sh)", name)
	}
	return p
}

// TestSDKPython runs the Python SDK's unittest suite (sdk/python/tests)
// against a real `mio serve`.
func TestSDKPython(t *testing.T) {
	t.Parallel()
	python := tool(t, "python3")
	vars := sdkServer(t)
	dir := filepath.Join(repoRoot(t), "sdk", "python")
	cmd := exec.Command(python, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(vars, "PYTHONPATH="+filepath.Join(dir, "src"), "PYTHONDONTWRITEBYTECODE=1")...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "python3 -m unittest failed")
	require.NotContains(t, string(out), "skipped 'set MIO_URL", "the live tests must run")
}

// TestSDKTypeScript builds the TypeScript SDK with tsc (npm ci from the
// committed package-lock.json) and runs its node --test suite
// (sdk/typescript/test) against a real `mio serve`.
func TestSDKTypeScript(t *testing.T) {
	t.Parallel()
	node := tool(t, "node")
	npm := tool(t, "npm")
	dir := filepath.Join(repoRoot(t), "sdk", "typescript")
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = os.Environ()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v:\n%s", name, args, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "tsc")); err != nil {
		run(npm, "ci", "--no-audit", "--no-fund")
	}
	run(npm, "run", "build")
	vars := sdkServer(t)
	cmd := exec.Command(node, "--test", "test/offline.test.mjs", "test/live.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), vars...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "node --test failed")
	require.Contains(t, string(out), "# skipped 0", "the live tests must run")
}
