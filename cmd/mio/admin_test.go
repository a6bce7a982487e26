package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/db/dbtest"
)

func TestAdminCLI(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	base := []string{"MIO_DATABASE_URL=" + env.OwnerURL, "MIO_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key), "MIO_PUBLIC_URL=https://mio.example.com"}

	r := runMio(t, base, "admin", "tenant", "create", "--name", "acme")
	require.Zero(t, r.code, r.stderr)
	var tenant struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tenant))

	r = runMio(t, base, "admin", "tenant", "list")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "acme")

	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("s3cr3t-signing\n"), 0o600))
	r = runMio(t, base, "admin", "account", "create", "--tenant", tenant.ID, "--channel", "slack", "--name", "Acme Slack",
		"--external-id", "T123", "--webhook-secret-file", secretFile)
	require.Zero(t, r.code, r.stderr)
	require.NotContains(t, r.stdout, "s3cr3t", "secrets are never printed back")
	var acct struct {
		ID               string `json:"id"`
		WebhookURL       string `json:"webhook_url"`
		HasWebhookSecret bool   `json:"has_webhook_secret"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &acct))
	require.Equal(t, "https://mio.example.com/webhooks/slack/"+acct.ID, acct.WebhookURL)
	require.True(t, acct.HasWebhookSecret)

	// Secrets from an environment variable and from stdin.
	r = runMio(t, append(base, "TG_SECRET=tg-token_1", `TG_CREDS={"bot_token":"123:abc"}`), "admin", "account", "create",
		"--tenant", tenant.ID, "--channel", "telegram", "--webhook-secret-env", "TG_SECRET", "--credentials-env", "TG_CREDS")
	require.Zero(t, r.code, r.stderr)
	require.NotContains(t, r.stdout, "123:abc")
	cmd := exec.Command(mioBin, "admin", "account", "create", "--tenant", tenant.ID, "--channel", "webhook", "--webhook-secret-file", "-")
	cmd.Env = append(baseEnv(), base...)
	cmd.Stdin = strings.NewReader("whsec_" + base64.StdEncoding.EncodeToString(key) + "\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))

	// The adapter validates the configuration before anything is written.
	r = runMio(t, append(base, "BAD=not a token!"), "admin", "account", "create", "--tenant", tenant.ID, "--channel", "telegram", "--webhook-secret-env", "BAD")
	require.Equal(t, 2, r.code, r.stdout)
	require.Contains(t, r.stderr, "invalid")
	r = runMio(t, base, "admin", "account", "create", "--tenant", tenant.ID, "--channel", "icq")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "channel type")

	// Lists are keyset pages: --limit, and --after the previous page's next.
	r = runMio(t, base, "admin", "account", "list", "--tenant", tenant.ID, "--limit", "2")
	require.Zero(t, r.code, r.stderr)
	var page struct {
		Items []map[string]any
		Next  string
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &page))
	require.Len(t, page.Items, 2)
	require.NotEmpty(t, page.Next)
	seen := map[any]bool{page.Items[0]["id"]: true, page.Items[1]["id"]: true}
	r = runMio(t, base, "admin", "account", "list", "--tenant", tenant.ID, "--limit", "2", "--after", page.Next)
	require.Zero(t, r.code, r.stderr)
	page.Next = ""
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &page))
	require.Len(t, page.Items, 1, "3 accounts: 2, then 1")
	require.Empty(t, page.Next)
	require.False(t, seen[page.Items[0]["id"]], "the second page goes on after the first")
	r = runMio(t, base, "admin", "account", "list", "--tenant", tenant.ID, "--after", "garbage")
	require.NotZero(t, r.code)

	r = runMio(t, base, "admin", "account", "disable", acct.ID)
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, `"status": "disabled"`)
	r = runMio(t, base, "admin", "account", "show", acct.ID)
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, `"status": "disabled"`)

	r = runMio(t, base, "admin", "token", "create", "--tenant", tenant.ID, "--name", "agent", "--roles", "consume,read")
	require.Zero(t, r.code, r.stderr)
	var tok struct {
		Token string   `json:"token"`
		Roles []string `json:"roles"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tok))
	require.True(t, strings.HasPrefix(tok.Token, "mio_"))
	require.Equal(t, []string{"consume", "read"}, tok.Roles)
	r = runMio(t, base, "admin", "token", "create", "--tenant", tenant.ID, "--name", "x", "--roles", "root")
	require.Equal(t, 2, r.code)

	// Without a master key, secrets cannot be stored.
	r = runMio(t, []string{"MIO_DATABASE_URL=" + env.OwnerURL, "S=x"}, "admin", "account", "create", "--tenant", tenant.ID, "--channel", "slack", "--webhook-secret-env", "S")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "MIO_MASTER_KEY")
}

// TestAdminCommandsTakeOnlyTheirFlags: each admin command accepts its own
// flags and the database, master key, data dir and log level settings;
// another server flag is a usage error (exit 2) naming it.
func TestAdminCommandsTakeOnlyTheirFlags(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	masterKey := base64.StdEncoding.EncodeToString(key)

	r := runMio(t, nil, "admin", "tenant", "create", "--database-url", env.OwnerURL, "--master-key", masterKey,
		"--log-level", "debug", "--data-dir", t.TempDir(), "--db-runtime-role", dbtest.RuntimeRole, "--name", "acme")
	require.Zero(t, r.code, r.stderr)
	var tenant struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tenant))
	r = runMio(t, nil, "admin", "account", "list", "--database-url", env.OwnerURL, "--tenant", tenant.ID,
		"--public-url", "https://mio.example.com")
	require.Zero(t, r.code, r.stderr)

	base := []string{"MIO_DATABASE_URL=" + env.OwnerURL}
	for _, tc := range []struct {
		name string
		args []string
		flag string
	}{
		{"ServerFlag", []string{"tenant", "list", "--archive-interval", "1m"}, "archive-interval"},
		{"ListenerFlag", []string{"dead", "list", "--http-addr", ":9999"}, "http-addr"},
		{"OtherCommandsFlag", []string{"tenant", "create", "--name", "x", "--roles", "read"}, "roles"},
		{"PublicURLOnlyForAccounts", []string{"token", "create", "--public-url", "https://x.example.com"}, "public-url"},
		{"NoChannelOnAccountList", []string{"account", "list", "--channel", "slack"}, "channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runMio(t, base, append([]string{"admin"}, tc.args...)...)
			require.Equal(t, 2, r.code, "stdout=%s stderr=%s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, "flag provided but not defined: -"+tc.flag)
			require.Empty(t, r.stdout)
		})
	}
}

// TestAdminTenantCreateIsIdempotent: tenant names are unique,
// case-insensitively; creating a taken name prints the existing tenant,
// says so and exits 0.
func TestAdminTenantCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	base := []string{"MIO_DATABASE_URL=" + env.OwnerURL}
	create := func(name string) (id, stderr string) {
		t.Helper()
		r := runMio(t, base, "admin", "tenant", "create", "--name", name)
		require.Zero(t, r.code, r.stderr)
		var tenant struct{ ID, Name string }
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &tenant), r.stdout)
		require.Equal(t, "acme", tenant.Name, "the tenant printed is the one that exists")
		return tenant.ID, r.stderr
	}
	first, msg := create("acme")
	require.NotContains(t, msg, "already existed")
	again, msg := create("acme")
	require.Equal(t, first, again)
	require.Contains(t, msg, `tenant "acme" already existed`)
	variant, msg := create(" ACME ")
	require.Equal(t, first, variant, "names are compared case-insensitively")
	require.Contains(t, msg, "already existed")

	var n, audited int
	owner := env.OwnerPool(t)
	require.NoError(t, owner.QueryRow(context.Background(), `SELECT count(*) FROM mio.tenants`).Scan(&n))
	require.Equal(t, 1, n)
	require.NoError(t, owner.QueryRow(context.Background(),
		`SELECT count(*) FROM mio.audit_log WHERE action = 'tenant.create'`).Scan(&audited))
	require.Equal(t, 1, audited, "only the create that created is audited")
}

// TestAdminCLIOperations: the operator commands beyond creation — token
// and admin-token list/revoke, account update and rotation, tenant
// disable, consumers, audit — each audited as cli:<user>, idempotent
// repeats exiting 0.
func TestAdminCLIOperations(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	base := []string{"MIO_DATABASE_URL=" + env.OwnerURL, "MIO_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key), "USER=ops"}
	run := func(args ...string) map[string]any {
		t.Helper()
		r := runMio(t, base, append([]string{"admin"}, args...)...)
		require.Zero(t, r.code, "%v: %s", args, r.stderr)
		var m map[string]any
		if strings.HasPrefix(strings.TrimSpace(r.stdout), "{") {
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), r.stdout)
		}
		return m
	}
	tenant := run("tenant", "create", "--name", "acme")["id"].(string)
	acct := run("account", "create", "--tenant", tenant, "--channel", "slack", "--webhook-secret-env", "USER")["id"].(string)

	m := run("account", "update", acct, "--rate-limit", "2", "--burst", "4", "--max-attempts", "3", "--api-base-url", "https://slack.example.com/api")
	require.EqualValues(t, 2, m["rate_limit_per_sec"])
	require.EqualValues(t, 3, m["max_attempts"])
	m = run("account", "update", acct, "--rate-limit", "default")
	require.Nil(t, m["rate_limit_per_sec"])
	require.EqualValues(t, 4, m["rate_limit_burst"])
	r := runMio(t, base, "admin", "account", "update", acct, "--max-attempts", "0")
	require.Equal(t, 2, r.code, "bad input is a usage error")

	m = run("account", "rotate-secret", acct, "--webhook-secret-env", "MIO_MASTER_KEY", "--grace", "1h")
	require.NotEmpty(t, m["webhook_secret_prev_until"])

	tok := run("token", "create", "--tenant", tenant, "--name", "agent", "--roles", "consume")["id"].(string)
	require.Equal(t, true, run("token", "revoke", tok, "--tenant", tenant)["changed"])
	require.Equal(t, false, run("token", "revoke", tok, "--tenant", tenant)["changed"], "a repeat is a no-op, exit 0")
	r = runMio(t, base, "admin", "token", "list", "--tenant", tenant)
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, `"revoked_at"`)

	adm := run("admin-token", "create", "--name", "ops", "--roles", "viewer,operator", "--ttl", "24h")
	require.Contains(t, adm["token"], "mioadm_")
	require.NotEmpty(t, adm["expires_at"])
	require.Len(t, run("admin-token", "list")["items"], 1)
	require.Equal(t, true, run("admin-token", "revoke", adm["id"].(string))["changed"])
	require.Equal(t, false, run("admin-token", "revoke", adm["id"].(string))["changed"])

	require.Equal(t, true, run("tenant", "disable", tenant)["changed"])
	require.Equal(t, "disabled", run("tenant", "show", tenant)["status"])

	r = runMio(t, base, "admin", "consumer", "list")
	require.Zero(t, r.code, r.stderr)
	r = runMio(t, base, "admin", "consumer", "delete", "nope", "--tenant", tenant)
	require.Equal(t, 1, r.code, "no such consumer")

	audit := run("audit", "list", "--limit", "100")["items"].([]any)
	actions := map[string]int{}
	for _, e := range audit {
		e := e.(map[string]any)
		require.Equal(t, "cli:"+currentUser(t, "ops"), e["actor"])
		actions[e["action"].(string)]++
	}
	require.Equal(t, map[string]int{"tenant.create": 1, "account.create": 1, "account.update": 2,
		"account.rotate_webhook_secret": 1, "api_token.create": 1, "api_token.revoke": 1,
		"admin_token.create": 1, "admin_token.revoke": 1, "tenant.disable": 1}, actions)
}

// currentUser is the OS user name the CLI audits as (the USER variable
// when the OS has no name for the process).
func currentUser(t *testing.T, fallback string) string {
	t.Helper()
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return fallback
}

// TestAdminFindsDevDatabase: without a database URL, mio admin reads
// the one in $MIO_DATA_DIR/dev.json.
func TestAdminFindsDevDatabase(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	dir := t.TempDir()
	b, err := json.Marshal(map[string]string{"database_url": env.OwnerURL})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dev.json"), b, 0o600))
	r := runMio(t, []string{"MIO_DATA_DIR=" + dir}, "admin", "tenant", "create", "--name", "dev")
	require.Zero(t, r.code, r.stderr)
	r = runMio(t, []string{"MIO_DATA_DIR=" + t.TempDir()}, "admin", "tenant", "list")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "dev.json")
}

// TestAdminCLITail: `mio admin inbox tail` prints the tenant's messages received
// after it went live, one JSON object per line, and only those.
func TestAdminCLITail(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	f := newWebhookFixture(t, env, "tail")
	key, err := base64.StdEncoding.DecodeString(f.masterKey)
	require.NoError(t, err)
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	srv := startServe(t, env.OwnerURL, key, addr)
	t.Cleanup(func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() })
	client := &http.Client{Timeout: 10 * time.Second}
	status, err := f.send(client, "http://"+addr, "before-tail", "before the tail")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)

	tail := exec.Command(mioBin, "admin", "inbox", "tail", "--tenant", f.tenant.String())
	tail.Env = append(baseEnv(), "MIO_DATABASE_URL="+env.OwnerURL)
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	tail.Stdout, tail.Stderr = stdout, stderr
	require.NoError(t, tail.Start())
	t.Cleanup(func() { _ = tail.Process.Kill(); _ = tail.Wait() })
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "live") }, 20*time.Second, 10*time.Millisecond, stderr.String())

	for i := range 3 {
		status, err := f.send(client, "http://"+addr, fmt.Sprint("tail-", i), fmt.Sprint("tailed ", i))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
	}
	var texts []string
	require.Eventually(t, func() bool {
		texts = texts[:0]
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			var m struct {
				Envelope struct{ Text string } `json:"envelope"`
			}
			if line != "" && json.Unmarshal([]byte(line), &m) == nil {
				texts = append(texts, m.Envelope.Text)
			}
		}
		return len(texts) >= 3
	}, 20*time.Second, 20*time.Millisecond, "stdout: %s\nstderr: %s", stdout, stderr)
	require.ElementsMatch(t, []string{"tailed 0", "tailed 1", "tailed 2"}, texts, "messages from then on, once each, not the earlier one")

	require.NoError(t, tail.Process.Signal(os.Interrupt))
	require.NoError(t, tail.Wait(), "Ctrl-C ends the tail cleanly: %s", stderr.String())
}

// TestAdminChannelTypes: mio admin channel-types prints the registry's
// channels as JSON, without a database.
func TestAdminChannelTypes(t *testing.T) {
	t.Parallel()
	r := runMio(t, nil, "admin", "channel-types")
	require.Zero(t, r.code, r.stderr)
	var out struct {
		Items []struct {
			Slug         string   `json:"slug"`
			DisplayName  string   `json:"display_name"`
			Capabilities []string `json:"capabilities"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	var slugs []string
	for _, it := range out.Items {
		slugs = append(slugs, it.Slug)
		require.NotEmpty(t, it.DisplayName, it.Slug)
	}
	require.ElementsMatch(t, builtin.Registry(builtin.Options{}).Types(), slugs)
}
