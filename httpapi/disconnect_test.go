package httpapi_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/metrics"
)

// logBuffer collects a server's log lines, written from its goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestClientDisconnectIsNotADatabaseOutage: a long-poll pull whose client
// hangs up while the pull is inside the database is logged at debug as a
// client disconnect, not as "database unavailable"; a real outage still
// is, with 503.
func TestClientDisconnectIsNotADatabaseOutage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var logs logBuffer
	m := metrics.New()
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: m, Logger: logs.logger(),
		Consumers: consume.New(b.env.Pool, b.hub, nil, nil, consume.Options{})})
	srv := httptest.NewServer(api.PublicHandler())
	t.Cleanup(srv.Close)
	token, _, err := b.svc.TokenCreate(ctx, b.tenant, "agent", []db.Role{db.RoleConsume})
	require.NoError(t, err)
	request := func(ctx context.Context, method, path, body string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultClient.Do(req)
	}
	resp, err := request(ctx, http.MethodPut, "/v1/consumers/agent", `{}`)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	// Hold the pull inside the database: the consumers table is locked.
	owner := b.env.OwnerPool(t)
	tx, err := owner.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `LOCK TABLE mio.consumers IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	cctx, hangUp := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		resp, err := request(cctx, http.MethodPost, "/v1/consumers/agent/pull", `{"batch":1,"wait":"30s"}`)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		err := owner.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'mio.consumers'::regclass AND NOT granted)`).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond, "the pull waits on the lock")
	hangUp()
	require.Error(t, <-done)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "client disconnected") }, 10*time.Second, 10*time.Millisecond,
		"logs:\n%s", logs.String())
	out := logs.String()
	require.NotContains(t, out, "database unavailable")
	require.Contains(t, out, `level=DEBUG msg="client disconnected" method=POST path=/v1/consumers/agent/pull`)
	require.NoError(t, tx.Rollback(ctx))
	// The hung-up pull is counted with the 4xx (a series exists only once
	// observed), not as a success.
	require.Eventually(t, func() bool {
		return m.HTTPRequestDuration.DeleteLabelValues("/v1/consumers/{name}/pull", "POST", "4xx")
	}, 10*time.Second, 10*time.Millisecond)
	require.False(t, m.HTTPRequestDuration.DeleteLabelValues("/v1/consumers/{name}/pull", "POST", "2xx"))

	// A real outage: the pool is closed.
	closed, err := db.Open(ctx, b.env.OwnerURL, db.PoolOptions{MaxConns: 1, RuntimeRole: dbtest.RuntimeRole})
	require.NoError(t, err)
	closed.Close()
	var outageLogs logBuffer
	down := httptest.NewServer(httpapi.New(httpapi.Deps{Pool: closed, Metrics: metrics.New(), Logger: outageLogs.logger(),
		Consumers: consume.New(closed, b.hub, nil, nil, consume.Options{})}).PublicHandler())
	t.Cleanup(down.Close)
	req, err := http.NewRequest(http.MethodPost, down.URL+"/v1/consumers/agent/pull", strings.NewReader(`{"batch":1}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, outageLogs.String(), `level=WARN msg="database unavailable"`)
	require.NotContains(t, outageLogs.String(), "client disconnected")
}
