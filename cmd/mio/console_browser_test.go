package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/webhook"
	"github.com/miohq/mio/client"
	"github.com/miohq/mio/config"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
)

// chromiumPath is Debian's chromium (make browser installs it). Without
// it the browser test fails under CI=true and skips elsewhere.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: run `make browser` (apt-get install -y chromium)")
	}
	t.Skip("chromium is not installed: skipping the console browser test (make browser installs it)")
	return ""
}

// freeAddr is a loopback address free at the time of the call.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestConsoleInBrowser drives the web console in headless Chromium
// against an in-process mio serve: sign in, create a Standard Webhooks
// account with the wizard and read its webhook URL, post a signed webhook
// and see it in the live tail and on the messages page, make a send fail
// permanently and requeue it from the dead-letter page, log out. On
// failure a screenshot is written to $MIO_TEST_ARTIFACTS (or a kept
// temporary directory, logged).
func TestConsoleInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	publicAddr := freeAddr(t)
	svc := admin.New(env.Pool, box, "http://"+publicAddr)
	tenant, _, err := svc.TenantCreate(ctx, "browser")
	require.NoError(t, err)
	adminToken, _, err := svc.AdminTokenCreate(ctx, admin.AdminTokenCreateParams{Name: "browser",
		Roles: []db.AdminRole{db.AdminRoleOperator, db.AdminRoleCredentialAdmin}})
	require.NoError(t, err)
	apiToken, _, err := svc.TokenCreate(ctx, tenant.ID, "browser", []db.Role{db.RoleProduce})
	require.NoError(t, err)
	// The endpoint refuses every send: a permanent failure (HTTP 400).
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no such conversation", http.StatusBadRequest)
	}))
	t.Cleanup(endpoint.Close)

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
	var consoleURL string
	select {
	case addr := <-listening:
		consoleURL = "http://" + addr
	case err := <-done:
		t.Fatalf("mio serve stopped: %v", err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancelTimeout := context.WithTimeout(bctx, 60*time.Second)
	defer cancelTimeout()
	defer screenshotOnFailure(t, bctx)

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(bctx, steps...), what)
	}
	text := func(what, sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, what)
		return v
	}
	tid := tenant.ID.String()

	// Sign in.
	do("login", chromedp.Navigate(consoleURL+"/login"),
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#logout")))

	// The wizard: tenant and channel, then settings and the secret.
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	do("create account", chromedp.Navigate(consoleURL+"/accounts/new?tenant_id="+tid),
		chromedp.SetValue(chromedp.CSS("#channel"), "webhook"),
		chromedp.Click(chromedp.CSS("#next")),
		chromedp.WaitVisible(chromedp.CSS("#settings")),
		chromedp.SetValue(chromedp.CSS("#display_name"), "browser hook"),
		chromedp.SetValue(chromedp.CSS("#settings"), `{"endpoint_url":"`+endpoint.URL+`"}`),
		chromedp.SetValue(chromedp.CSS("#webhook_secret"), secret),
		chromedp.Click(chromedp.CSS("#create")))
	webhookURL := text("webhook URL", "#webhook-url")
	require.True(t, strings.HasPrefix(webhookURL, "http://"+publicAddr+"/webhooks/webhook/"), webhookURL)
	accountID, err := uuid.Parse(webhookURL[strings.LastIndex(webhookURL, "/")+1:])
	require.NoError(t, err)

	// The live tail, then a signed webhook posted to the URL the wizard showed.
	do("open tail", chromedp.Navigate(consoleURL+"/tail?tenant_id="+tid), chromedp.WaitVisible(chromedp.CSS("#tail-state")))
	_, err = chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById("tail-state").textContent === "live"`))
	require.NoError(t, err, "tail live")
	postSignedWebhook(t, webhookURL, secret, "conv-browser", "hello from the browser test")
	do("see tail", chromedp.WaitVisible(chromedp.CSS("#tail li")))
	tailed := text("tail", "#tail")
	require.Contains(t, tailed, "hello from the browser test")
	require.Contains(t, tailed, "conv-browser")

	// The messages page, then the message's envelope and raw payload.
	do("messages", chromedp.Navigate(consoleURL+"/messages?tenant_id="+tid+"&conversation=conv-browser"),
		chromedp.Click(chromedp.CSS("a.message")), chromedp.WaitVisible(chromedp.CSS("#envelope")))
	require.Contains(t, text("envelope", "#envelope"), "hello from the browser test")
	require.Contains(t, text("raw", "#raw"), "message.created")

	// A send the endpoint refuses becomes a dead letter; requeue it.
	sent, err := client.New("http://"+publicAddr, apiToken).Send(ctx, envelope.SendCommand{IdempotencyKey: "browser-1",
		AccountID: accountID, ConversationID: "conv-browser", Text: "doomed"})
	require.NoError(t, err)
	waitDead(t, env, tenant.ID, sent.ID)
	do("requeue", chromedp.Navigate(consoleURL+"/dead-letters?tenant_id="+tid+"&kind=outbound"),
		chromedp.Click(chromedp.CSS("button.requeue")))
	require.Contains(t, text("flash", "#flash"), "requeue "+sent.ID.String())
	audit, err := svc.AuditList(ctx, db.AuditListParams{Limit: 10})
	require.NoError(t, err)
	actions := []string{}
	for _, e := range audit.Items {
		actions = append(actions, e.Action)
	}
	require.Contains(t, actions, "account.create")
	require.Contains(t, actions, "dead_letter.requeue")
	do("timeline", chromedp.Navigate(consoleURL+"/outbound/"+tid+"/"+sent.ID.String()))
	timeline := text("timeline", "#timeline")
	require.Contains(t, timeline, "dead")
	require.Contains(t, timeline, "requeued")

	// Log out: the session is gone.
	do("logout", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.Navigate(consoleURL+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	loc, err := chromedp.Run(bctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, consoleURL+"/login", loc)
}

// postSignedWebhook posts a Standard Webhooks message to url and requires 200.
func postSignedWebhook(t *testing.T, url, secret, conversation, text string) {
	t.Helper()
	now := time.Now()
	body := []byte(fmt.Sprintf(`{"type":"message.created","timestamp":%q,"data":{"conversation":{"id":%q},"sender":{"id":"u"},"text":%q}}`,
		now.UTC().Format(time.RFC3339), conversation, text))
	id := "msg_browser_" + strconv.FormatInt(now.UnixNano(), 10)
	sig, err := webhook.Sign(secret, id, now, body)
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(out))
}

// waitDead waits until outbound id is a dead letter (the dispatcher's
// permanent failure), up to 30 s.
func waitDead(t *testing.T, env *dbtest.Env, tenantID, id uuid.UUID) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		found, err := db.DeadLettersFind(context.Background(), env.Pool, tenantID, id)
		if err == nil && len(found) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbound %s is not a dead letter after 30 s (last error: %v)", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screenshotOnFailure keeps a full-page screenshot of a failed browser
// test in $MIO_TEST_ARTIFACTS or a temporary directory it logs.
func screenshotOnFailure(t *testing.T, bctx context.Context) {
	if !t.Failed() {
		return
	}
	dir := os.Getenv("MIO_TEST_ARTIFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "mio-console-artifacts-"); err != nil {
			t.Logf("screenshot: %v", err)
			return
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(bctx), 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, t.Name()+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	t.Logf("screenshot of the failed page: %s", path)
}
