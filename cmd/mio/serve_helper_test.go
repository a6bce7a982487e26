package main

import (
	"encoding/base64"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// startServe starts `mio serve` on database url with master key key,
// listening on addr (admin on a free port), with extraEnv added to its
// environment, and waits until it is ready.
func startServe(t *testing.T, url string, key []byte, addr string, extraEnv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(mioBin, "serve")
	cmd.Env = append(baseEnv(), "MIO_DATABASE_URL="+url, "MIO_MASTER_KEY="+base64.StdEncoding.EncodeToString(key),
		"MIO_HTTP_ADDR="+addr, "MIO_ADMIN_ADDR=127.0.0.1:0", "MIO_LOG_LEVEL=error")
	cmd.Env = append(cmd.Env, extraEnv...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	waitReady(t, "http://"+addr, out)
	return cmd
}
