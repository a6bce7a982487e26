package deploytest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/stretchr/testify/require"
)

// repoRoot is the MIO checkout this module lives in.
const repoRoot = "../.."

// TestDockerfile parses the Dockerfile with buildkit's own parser and
// checks what can be checked without a daemon: a multi-stage static build
// stamped with version and commit, a final stage running as a numeric
// non-root user, no ADD from a URL, the binary where ENTRYPOINT finds it.
func TestDockerfile(t *testing.T) {
	f, err := os.Open(filepath.Join(repoRoot, "Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	res, err := parser.Parse(f)
	require.NoError(t, err)
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(stages), 2, "multi-stage build")
	require.NotEmpty(t, metaArgs)

	build, final := stages[0], stages[len(stages)-1]
	require.Equal(t, "build", build.Name)

	var buildCmd string
	for _, c := range build.Commands {
		if r, ok := c.(*instructions.RunCommand); ok {
			line := strings.Join(r.CmdLine, " ")
			if strings.Contains(line, "go build") {
				buildCmd = line
			}
		}
	}
	require.NotEmpty(t, buildCmd, "the build stage runs go build")
	for _, want := range []string{"CGO_ENABLED=0", "-X main.version=${VERSION}", "-X main.commit=${COMMIT}", "-o /out/mio", "./cmd/mio"} {
		require.Contains(t, buildCmd, want)
	}

	require.True(t, strings.HasPrefix(final.BaseName, "gcr.io/distroless/static"), "minimal runtime with CA certificates: %s", final.BaseName)
	var (
		user       string
		entrypoint *instructions.EntrypointCommand
		cmd        *instructions.CmdCommand
		binary     bool
	)
	for _, s := range stages {
		for _, c := range s.Commands {
			if a, ok := c.(*instructions.AddCommand); ok {
				for _, src := range a.SourcePaths {
					require.NotContains(t, src, "://", "ADD from a URL: %s", a)
				}
			}
		}
	}
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entrypoint = c
		case *instructions.CmdCommand:
			cmd = c
		case *instructions.CopyCommand:
			if c.From == "build" && slices.Contains(c.SourcePaths, "/out/mio") {
				require.Equal(t, "/usr/local/bin/mio", c.DestPath, "the binary on PATH")
				binary = true
			}
		case *instructions.RunCommand:
			t.Fatalf("the runtime stage has no shell: RUN %s", strings.Join(c.CmdLine, " "))
		}
	}
	require.True(t, binary, "the final stage copies the binary from the build stage")
	uid, _, _ := strings.Cut(user, ":")
	require.NotEmpty(t, uid, "USER is set")
	require.NotEqual(t, "0", uid)
	require.NotEqual(t, "root", uid)
	require.Regexp(t, `^[0-9]+$`, uid, "numeric so that runAsNonRoot can verify it")

	require.NotNil(t, entrypoint)
	require.False(t, entrypoint.PrependShell, "exec form")
	require.Equal(t, []string{"mio"}, []string(entrypoint.CmdLine))
	require.NotNil(t, cmd)
	require.False(t, cmd.PrependShell, "exec form")
	require.Equal(t, []string{"serve"}, []string(cmd.CmdLine))
}

// TestDockerignore: the build context leaves out the repository's history,
// local state and binaries, but not what the build needs.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	require.NoError(t, err)
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	for _, p := range []string{".git", ".mio", "bin"} {
		require.Contains(t, patterns, p)
	}
	for _, p := range patterns {
		for _, needed := range []string{"go.mod", "go.sum", "cmd", "migrations"} {
			require.NotEqual(t, needed, strings.TrimPrefix(p, "/"))
		}
		require.NotEqual(t, "*.sql", p, "migrations are embedded")
	}
}
