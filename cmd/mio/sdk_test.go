package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/secretbox"
)

// sdkServer starts `mio serve` on a fresh test database with a tenant, a
// generic-webhook account and a token with every agent role, and returns
// the environment the SDK test suites read (MIO_URL, MIO_TOKEN,
// MIO_WEBHOOK_URL, MIO_WEBHOOK_SECRET). extraEnv is added to the
// server's environment.
func sdkServer(t *testing.T, extraEnv ...string) []string {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://x")
	tenant, _, err := svc.TenantCreate(ctx, "sdk")
	require.NoError(t, err)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook", WebhookSecret: secret})
	require.NoError(t, err)
	token, _, err := svc.TokenCreate(ctx, tenant.ID, "sdk", []db.Role{db.RoleConsume, db.RoleProduce, db.RoleRead})
	require.NoError(t, err)

	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := startServe(t, env.OwnerURL, key, addr, extraEnv...)
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
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
// against a real `mio serve`, traced to an OTLP receiver. When the
// OpenTelemetry SDK is importable, the live trace test prints its handler
// span's traceparent, and the reply's server span must be that span's
// child, in the trace the webhook started.
func TestSDKPython(t *testing.T) {
	t.Parallel()
	python := tool(t, "python3")
	recv := newOTLPReceiver(t)
	vars := sdkServer(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.srv.URL, "OTEL_TRACES_SAMPLER=always_on",
		"OTEL_BSP_SCHEDULE_DELAY=100")
	dir := filepath.Join(repoRoot(t), "sdk", "python")
	cmd := exec.Command(python, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = dir
	// A PYTHONPATH of the caller's (an OpenTelemetry SDK outside
	// site-packages) stays after the SDK's sources, and so does the SDK
	// deploy/scripts/ensure-python-otel.sh unpacked (make test runs it).
	pythonPath := filepath.Join(dir, "src")
	if p := os.Getenv("PYTHONPATH"); p != "" {
		pythonPath += string(os.PathListSeparator) + p
	}
	otel := filepath.Join(repoRoot(t), ".cache", "python-otel", "usr", "lib", "python3", "dist-packages")
	_, err := os.Stat(otel)
	unpacked := err == nil
	if unpacked {
		pythonPath += string(os.PathListSeparator) + otel
	}
	cmd.Env = append(os.Environ(), append(vars, "PYTHONPATH="+pythonPath, "PYTHONDONTWRITEBYTECODE=1", "MIO_TRACED=1")...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "python3 -m unittest failed")
	require.NotContains(t, string(out), "skipped 'set MIO_URL", "the live tests must run")
	if m := handlerTraceparent.FindStringSubmatch(string(out)); m != nil {
		requireReplyUnder(t, recv, m[1])
	} else {
		require.False(t, unpacked, "the live trace test did not run, though the OpenTelemetry SDK for Python is in %s", otel)
		t.Log("the live trace test did not run: the OpenTelemetry SDK for Python is not importable")
	}

	// The example agent answers one message end to end.
	runExample(t, vars, filepath.Join(repoRoot(t), "examples", "python-agent"), python, "agent.py")
}

// handlerTraceparent is the line the Python live trace test prints.
var handlerTraceparent = regexp.MustCompile(`MIO-TRACE handler (00-[0-9a-f]{32}-[0-9a-f]{16}-01)`)

// requireReplyUnder waits for recv to hold the reply's server span as a
// child of the agent's handler span (traceparent), in a trace a webhook
// started: one trace id from the webhook to the reply.
func requireReplyUnder(t *testing.T, recv *otlpReceiver, traceparent string) {
	t.Helper()
	traceID, handler := traceparent[3:35], traceparent[36:52]
	require.Eventually(t, func() bool {
		var reply, webhook bool
		for _, s := range collectSpans(recv, nil) {
			if s.traceID != traceID {
				continue
			}
			reply = reply || s.name == "POST /v1/consumers/{name}/reply" && s.parent == handler
			webhook = webhook || s.name == "POST /webhooks/{channel_type}/{account_id}"
		}
		return reply && webhook
	}, 20*time.Second, 50*time.Millisecond, "the webhook and the reply in the handler's trace %s", traceID)
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
	// npm ci again whenever package-lock.json changed since the last one:
	// a checkout that pulled a new dev dependency has node_modules without it.
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	require.NoError(t, err)
	sum := fmt.Sprintf("%x", sha256.Sum256(lock))
	stamp := filepath.Join(dir, "node_modules", ".mio-package-lock.sha256")
	if have, err := os.ReadFile(stamp); err != nil || string(have) != sum {
		run(npm, "ci", "--no-audit", "--no-fund")
		require.NoError(t, os.WriteFile(stamp, []byte(sum), 0o644))
	}
	run(npm, "run", "build")
	vars := sdkServer(t)
	cmd := exec.Command(node, "--test", "test/offline.test.mjs", "test/trace.test.mjs", "test/live.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), vars...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "node --test failed")
	require.Contains(t, string(out), "# skipped 0", "the live tests must run")

	// The example agent answers one message end to end.
	exDir := filepath.Join(repoRoot(t), "examples", "ts-agent")
	build := exec.Command(npm, "run", "build")
	build.Dir = exDir
	bout, err := build.CombinedOutput()
	require.NoError(t, err, "%s", bout)
	runExample(t, vars, exDir, node, "agent.js")
}

// runExample starts an example agent (MIO_AGENT_MAX=1), sends it one
// signed webhook message and checks that it posted a placeholder and
// edited it with the answer, acking the delivery.
func runExample(t *testing.T, vars []string, dir, bin string, args ...string) {
	t.Helper()
	get := func(k string) string {
		for _, v := range vars {
			if name, val, _ := strings.Cut(v, "="); name == k {
				return val
			}
		}
		return ""
	}
	consumer := "example-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(vars, "MIO_AGENT_MAX=1", "MIO_CONSUMER="+consumer)...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	c := client.New(get("MIO_URL"), get("MIO_TOKEN"))
	// The consumer exists once the agent started; it delivers all, so the
	// message may come before or after.
	require.Eventually(t, func() bool { _, err := c.GetConsumer(context.Background(), consumer); return err == nil },
		30*time.Second, 20*time.Millisecond, "agent did not start: %s", out.String())
	conv := "example-" + consumer
	body := []byte(fmt.Sprintf(`{"type":"message.created","timestamp":%q,"data":{"conversation":{"id":%q},"sender":{"id":"u"},"text":"what is MIO?"}}`,
		time.Now().UTC().Format(time.RFC3339), conv))
	id := "ex_" + consumer
	now := time.Now()
	sig, err := webhook.Sign(get("MIO_WEBHOOK_SECRET"), id, now, body)
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodPost, get("MIO_WEBHOOK_URL"), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	select {
	case err := <-done:
		require.NoError(t, err, "%s", out.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("example did not answer: %s", out.String())
	}
	require.Contains(t, out.String(), "answered")
	var page struct {
		Items []struct {
			Text   string  `json:"text"`
			EditOf *string `json:"edit_of"`
		} `json:"items"`
	}
	hreq, _ := http.NewRequest(http.MethodGet, get("MIO_URL")+"/v1/outbound?conversation_id="+conv, nil)
	hreq.Header.Set("Authorization", "Bearer "+get("MIO_TOKEN"))
	hresp, err := http.DefaultClient.Do(hreq)
	require.NoError(t, err)
	defer hresp.Body.Close()
	require.NoError(t, json.NewDecoder(hresp.Body).Decode(&page))
	require.Len(t, page.Items, 2, "placeholder and its edit")
	require.Equal(t, "thinking…", page.Items[1].Text, "newest first: the edit, then the placeholder")
	require.NotNil(t, page.Items[0].EditOf)
	require.Contains(t, page.Items[0].Text, "what is MIO?")
	info, err := c.GetConsumer(context.Background(), consumer)
	require.NoError(t, err)
	require.Zero(t, info.Stats.AckPending, "the reply acked the delivery")
}
