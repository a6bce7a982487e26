package httpapi_test

import (
	"io"
	"net/http"
	"testing"
)

func io_pipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
