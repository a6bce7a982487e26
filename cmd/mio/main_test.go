package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/miohq/mio/db/dbtest"
)

// mioBin is the mio binary built once for this package's tests: they run
// it as a user would.
var mioBin string

func TestMain(m *testing.M) {
	var after []func()
	if os.Getenv("MIO_DBTEST_SUPERVISOR") == "" {
		dir, err := os.MkdirTemp("", "mio-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		mioBin = filepath.Join(dir, "mio")
		out, err := exec.Command("go", "build", "-o", mioBin, ".").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build mio: %v\n%s", err, out)
			os.Exit(1)
		}
		// dbtest.Main exits: a deferred removal would never run (and
		// every run of this package left its 80 MB binary in $TMPDIR).
		after = append(after, func() { os.RemoveAll(dir) })
	}
	dbtest.Main(m, after...)
}

type result struct {
	code           int
	stdout, stderr string
}

// runMio runs the binary to completion with env (added to a clean
// environment) and a timeout.
func runMio(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mioBin, args...)
	cmd.Env = append(baseEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run mio: %v", err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// baseEnv is a minimal environment: no MIO_* or DATABASE_URL from the
// developer's shell leaks into the tests.
func baseEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
}
