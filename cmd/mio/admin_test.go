package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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

	r = runMio(t, base, "admin", "account", "list", "--tenant", tenant.ID)
	require.Zero(t, r.code, r.stderr)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Len(t, list, 3)

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
