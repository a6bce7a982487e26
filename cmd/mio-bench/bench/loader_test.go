package bench

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestRawConn: the raw load generator reads answers with a length, chunked
// answers and answers that close the connection, keeps one connection
// alive across requests, redials after a close, and reports the status
// and the body the server saw.
func TestRawConn(t *testing.T) {
	var conns atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /length", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Test") != "yes" || string(b) != `{"n":1}` {
			http.Error(w, "bad request "+string(b), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	mux.HandleFunc("POST /chunked", func(w http.ResponseWriter, _ *http.Request) {
		for i := range 3 {
			fmt.Fprintf(w, "part %d;", i)
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("POST /close", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusTeapot)
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	var c rawConn
	defer c.close()
	req := func(path string) *loadRequest {
		return &loadRequest{method: http.MethodPost, url: srv.URL + path, body: []byte(`{"n":1}`), header: [][2]string{{"X-Test", "yes"}}}
	}
	for i, step := range []struct {
		path   string
		status int
		conns  int64
	}{
		{"/length", http.StatusAccepted, 1},
		{"/chunked", http.StatusOK, 1},
		{"/length", http.StatusAccepted, 1},
		{"/close", http.StatusTeapot, 1},
		{"/length", http.StatusAccepted, 2}, // redialled
	} {
		status, err := c.do(req(step.path), 5*time.Second)
		if err != nil {
			t.Fatalf("step %d %s: %v", i, step.path, err)
		}
		if status != step.status {
			t.Fatalf("step %d %s: status %d, want %d", i, step.path, status, step.status)
		}
		if got := conns.Load(); got != step.conns {
			t.Fatalf("step %d %s: %d connections, want %d", i, step.path, got, step.conns)
		}
	}
}
