package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db/dbtest"
)

// TestAdminAccountCreateShowsCliqMapping: creating a Zoho Cliq account
// prints the payload mapping in force (defaults merged with the
// account's overrides) and where the defaults come from, since Cliq's
// webhook bot payload could not be confirmed against live traffic.
func TestAdminAccountCreateShowsCliqMapping(t *testing.T) {
	t.Parallel()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	base := []string{"MIO_DATABASE_URL=" + env.OwnerURL, "MIO_MASTER_KEY=" + base64.StdEncoding.EncodeToString(key)}
	r := runMio(t, base, "admin", "tenant", "create", "--name", "cliq")
	require.Zero(t, r.code, r.stderr)
	var tenant struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tenant))

	settings := filepath.Join(t.TempDir(), "settings.json")
	require.NoError(t, os.WriteFile(settings, []byte(`{"field_paths":{"text":["params.message_details.message.text"]}}`), 0o600))
	r = runMio(t, append(base, "CLIQ_TOKEN=shared-token"), "admin", "account", "create", "--tenant", tenant.ID,
		"--channel", "zoho_cliq", "--settings-file", settings, "--webhook-secret-env", "CLIQ_TOKEN")
	require.Zero(t, r.code, r.stderr)
	require.NotContains(t, r.stdout, "shared-token")
	var acct struct {
		Config struct {
			Source          string              `json:"source"`
			Mode            string              `json:"mode"`
			MessageHandlers []string            `json:"message_handlers"`
			FieldPaths      map[string][]string `json:"field_paths"`
		} `json:"config_in_force"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &acct), r.stdout)
	require.Contains(t, acct.Config.Source, "not confirmed against live Cliq")
	require.Equal(t, "token", acct.Config.Mode)
	require.Contains(t, acct.Config.MessageHandlers, "message_handler")
	require.Equal(t, []string{"params.message_details.message.text"}, acct.Config.FieldPaths["text"], "the override")
	require.Equal(t, []string{"chat.id", "params.chat.id"}, acct.Config.FieldPaths["conversation_id"], "a default")
}
