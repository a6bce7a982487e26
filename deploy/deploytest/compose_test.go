package deploytest

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
)

// loadCompose loads deploy/compose.yaml as `docker compose` would
// (schema validation, interpolation, merge keys), with env as the only
// environment and the given profiles.
func loadCompose(t *testing.T, env []string, profiles ...string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{filepath.Join(repoRoot, "deploy", "compose.yaml")},
		cli.WithEnv(env), cli.WithProfiles(profiles), cli.WithDiscardEnvFile)
	require.NoError(t, err)
	return opts.LoadProject(context.Background())
}

// TestCompose: PostgreSQL 16, a one-shot migration the roles wait for,
// the api and worker roles, NATS and the bridge only under the nats
// profile; MIO containers hardened and configured only with settings MIO
// reads, the master key from a secret.
func TestCompose(t *testing.T) {
	known := configEnvNames(t)
	env := []string{"MIO_MASTER_KEY=c2VjcmV0LWtleS1ieXRlcy1mb3ItdGVzdHMtb25seS0wMTI="}

	p, err := loadCompose(t, env)
	require.NoError(t, err)
	require.Equal(t, "mio", p.Name)
	require.ElementsMatch(t, []string{"postgres", "migrate", "api", "worker"}, p.ServiceNames())

	pg := p.Services["postgres"]
	require.True(t, strings.HasPrefix(pg.Image, "postgres:16"), pg.Image)
	require.NotNil(t, pg.HealthCheck)

	migrate := p.Services["migrate"]
	require.Equal(t, types.ShellCommand{"migrate", "up"}, migrate.Command)
	require.Equal(t, "no", migrate.Restart)
	require.Equal(t, types.ServiceConditionHealthy, migrate.DependsOn["postgres"].Condition)

	for _, role := range []string{"api", "worker"} {
		s := p.Services[role]
		require.Equal(t, types.ShellCommand{"serve", "--role", role}, s.Command)
		require.Equal(t, types.ServiceConditionCompletedSuccessfully, s.DependsOn["migrate"].Condition, role)
	}
	api := p.Services["api"]
	require.True(t, slices.ContainsFunc(api.Ports, func(pc types.ServicePortConfig) bool {
		return pc.Target == 8080 && pc.Published == "8080"
	}), "the public listener is published")
	for _, pc := range api.Ports {
		if pc.Target == 9090 {
			require.Equal(t, "127.0.0.1", pc.HostIP, "the admin listener stays on loopback")
		}
	}

	for _, name := range []string{"migrate", "api", "worker"} {
		checkMIOService(t, p.Services[name], known)
	}
	require.Equal(t, api.Volumes[0].Source, p.Services["worker"].Volumes[0].Source, "api and worker share the file blob store")

	t.Run("NATSProfile", func(t *testing.T) {
		p, err := loadCompose(t, env, "nats")
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"postgres", "migrate", "api", "worker", "nats", "bridge"}, p.ServiceNames())
		bridge := p.Services["bridge"]
		require.Equal(t, types.ShellCommand{"serve", "--role", "bridge"}, bridge.Command)
		require.Equal(t, "nats://nats:4222", *bridge.Environment["MIO_NATS_URL"])
		checkMIOService(t, bridge, known)
	})

	t.Run("Interpolation", func(t *testing.T) {
		p, err := loadCompose(t, append(env, "MIO_IMAGE=registry.example.com/mio:v1", "POSTGRES_PASSWORD=pw"))
		require.NoError(t, err)
		require.Equal(t, "registry.example.com/mio:v1", p.Services["api"].Image)
		require.Equal(t, "postgres://mio:pw@postgres:5432/mio?sslmode=disable", *p.Services["worker"].Environment["MIO_DATABASE_URL"])
	})
}

// checkMIOService: a MIO container runs the image as a non-root user on a
// read-only root with no capabilities, and its environment holds only
// settings config/config.go reads, the master key only as a file.
func checkMIOService(t *testing.T, s types.ServiceConfig, known map[string]bool) {
	t.Helper()
	require.Equal(t, "65532:65532", s.User, s.Name)
	require.True(t, s.ReadOnly, s.Name)
	require.Equal(t, []string{"ALL"}, s.CapDrop, s.Name)
	require.NotNil(t, s.Build, s.Name)
	for name := range s.Environment {
		require.True(t, known[strings.TrimSuffix(name, "_FILE")], "%s: %s is not a MIO setting (config/config.go)", s.Name, name)
	}
	require.NotContains(t, s.Environment, "MIO_MASTER_KEY", s.Name)
	require.Equal(t, "/run/secrets/mio_master_key", *s.Environment["MIO_MASTER_KEY_FILE"], s.Name)
	require.True(t, slices.ContainsFunc(s.Secrets, func(r types.ServiceSecretConfig) bool { return r.Source == "mio_master_key" }), s.Name)
}
