package config

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, rest, err := Load("test", nil, envMap(nil), io.Discard)
	require.NoError(t, err)
	require.Empty(t, rest)
	require.Equal(t, ":8080", c.HTTPAddr)
	require.Equal(t, "127.0.0.1:9090", c.AdminAddr)
	require.Equal(t, "http://localhost:8080", c.PublicURL)
	require.True(t, c.PublicURLDerived)
	require.Equal(t, "./.mio", c.DataDir)
	require.Equal(t, "file://./.mio/blobs", c.BlobURL)
	require.Equal(t, "dev", c.Env)
	require.Equal(t, "all", c.Role)
	require.Equal(t, 20*time.Second, c.ShutdownTimeout)
	require.Equal(t, 2500*time.Millisecond, c.WebhookDeadline)
	require.Equal(t, int64(1<<20), c.WebhookMaxBody)
	require.Equal(t, "mio_runtime", c.DBRuntimeRole)
}

func TestLoadPrecedence(t *testing.T) {
	t.Parallel()
	env := envMap(map[string]string{"MIO_HTTP_ADDR": ":7000", "DATABASE_URL": "postgres://a@b/c", "MIO_ROLE": "api"})
	c, _, err := Load("test", []string{"--role", "worker"}, env, io.Discard)
	require.NoError(t, err)
	require.Equal(t, ":7000", c.HTTPAddr, "env over default")
	require.Equal(t, "worker", c.Role, "flag over env")
	require.Equal(t, "postgres://a@b/c", c.DatabaseURL, "DATABASE_URL accepted")

	c, _, err = Load("test", nil, envMap(map[string]string{"MIO_DATABASE_URL": "postgres://x@y/z", "DATABASE_URL": "postgres://a@b/c"}), io.Discard)
	require.NoError(t, err)
	require.Equal(t, "postgres://x@y/z", c.DatabaseURL, "MIO_DATABASE_URL wins over DATABASE_URL")
}

// TestFromFlags: the settings given as flags, and only those, come back
// as environment entries under their primary names, so that a command
// starting another mio process (mio-bench's server) can pass them on.
func TestFromFlags(t *testing.T) {
	t.Parallel()
	env := envMap(map[string]string{"MIO_ROLE": "api", "DATABASE_URL": "postgres://a@b/c"})
	c, _, err := Load("test", []string{"--ingest-flushers", "3", "--outbound-window", "1ms"}, env, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 3, c.IngestFlushers)
	require.ElementsMatch(t, []string{"MIO_INGEST_FLUSHERS=3", "MIO_OUTBOUND_WINDOW=1ms"}, c.FromFlags)
	c, _, err = Load("test", nil, env, io.Discard)
	require.NoError(t, err)
	require.Empty(t, c.FromFlags, "the environment's settings are not flags")
}

func TestLoadOnly(t *testing.T) {
	t.Parallel()
	env := envMap(map[string]string{"MIO_ARCHIVE_INTERVAL": "5m"})
	c, rest, err := LoadOnly("test", []string{"--database-url", "postgres://a@b/c", "x"}, env, io.Discard, nil, "database-url")
	require.NoError(t, err)
	require.Equal(t, []string{"x"}, rest)
	require.Equal(t, "postgres://a@b/c", c.DatabaseURL)
	require.Equal(t, 5*time.Minute, c.ArchiveInterval, "the environment still supplies every setting")

	_, _, err = LoadOnly("test", []string{"--archive-interval", "1m"}, env, io.Discard, nil, "database-url")
	require.ErrorContains(t, err, "archive-interval")
	require.Panics(t, func() { _, _, _ = LoadOnly("test", nil, env, io.Discard, nil, "no-such-flag") })
}

func TestLoadSecretFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600))
	c, _, err := Load("test", nil, envMap(map[string]string{"MIO_MASTER_KEY_FILE": keyFile}), io.Discard)
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdef0123456789abcdef", string(c.MasterKey))

	_, _, err = Load("test", nil, envMap(map[string]string{"MIO_MASTER_KEY_FILE": filepath.Join(dir, "missing")}), io.Discard)
	require.Error(t, err)
	require.Contains(t, err.Error(), "MIO_MASTER_KEY")
	require.NotContains(t, err.Error(), "\n")
}

func TestLoadInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		setting string
		want    string
	}{
		{"BadURL", []string{"--database-url", "mysql://x"}, nil, "MIO_DATABASE_URL", "postgres://"},
		{"BadDuration", []string{"--shutdown-timeout", "soon"}, nil, "MIO_SHUTDOWN_TIMEOUT", "Go duration"},
		{"BadRole", []string{"--role", "boss"}, nil, "MIO_ROLE", "all, api, worker, bridge"},
		{"BadEnvRole", nil, map[string]string{"MIO_ROLE": "boss"}, "MIO_ROLE", "all, api, worker, bridge"},
		{"BadAddr", []string{"--http-addr", "8080"}, nil, "MIO_HTTP_ADDR", "host:port"},
		{"BadEnv", nil, map[string]string{"MIO_ENV": "staging"}, "MIO_ENV", "dev, prod"},
		{"BadKey", nil, map[string]string{"MIO_MASTER_KEY": "short"}, "MIO_MASTER_KEY", "base64"},
		{"BadLevel", []string{"--log-level", "loud"}, nil, "MIO_LOG_LEVEL", "debug, info"},
		{"BadSize", []string{"--webhook-max-body", "lots"}, nil, "MIO_WEBHOOK_MAX_BODY", "1MiB"},
		{"BadBlob", []string{"--blob-url", "s3://bucket"}, nil, "MIO_BLOB_URL", "gs://"},
		{"BadBurst", []string{"--ingest-burst-flushers", "-1"}, nil, "MIO_INGEST_BURST_FLUSHERS", "from 0 to 256"},
		{"BadEnvBurst", nil, map[string]string{"MIO_OUTBOUND_BURST_FLUSHERS": "x"}, "MIO_OUTBOUND_BURST_FLUSHERS", "from 0 to 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Load("test", tc.args, envMap(tc.env), io.Discard)
			require.Error(t, err)
			msg := err.Error()
			require.Contains(t, msg, tc.setting)
			require.Contains(t, msg, tc.want)
			require.False(t, strings.Contains(msg, "\n"), "one line: %q", msg)
		})
	}
}

func TestSecretNotEchoed(t *testing.T) {
	t.Parallel()
	_, _, err := Load("test", nil, envMap(map[string]string{"MIO_MASTER_KEY": "sekrit-value"}), io.Discard)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "sekrit")
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"1024": 1024, "1KiB": 1024, "1MiB": 1 << 20, "2 MiB": 2 << 20} {
		got, err := ParseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := ParseBytes("-1")
	require.Error(t, err)
}
