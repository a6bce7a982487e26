package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/consume"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
	"github.com/miohq/mio/metrics"
)

// TestPutConsumerCreateOnly: PUT /v1/consumers/{name} with If-None-Match:
// * creates a consumer (201) and never changes one that exists (412) —
// also when a PUT configuring it runs at the same moment: the configured
// settings always survive, whichever commits first.
func TestPutConsumerCreateOnly(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	api := httpapi.New(httpapi.Deps{Pool: b.env.Pool, Metrics: metrics.New(),
		Consumers: consume.New(b.env.Pool, b.hub, nil, nil, consume.Options{})})
	srv := httptest.NewServer(openapitest.Handler(t, openapi.Public, api.PublicHandler()))
	t.Cleanup(srv.Close)
	token, _, err := b.svc.TokenCreate(ctx, b.tenant, "agent", []db.Role{db.RoleConsume})
	require.NoError(t, err)
	put := func(name, ifNoneMatch, body string) (int, map[string]any) {
		req, err := http.NewRequest(http.MethodPut, srv.URL+"/v1/consumers/"+name, strings.NewReader(body))
		if err != nil {
			return 0, map[string]any{"error": err.Error()}
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, map[string]any{"error": err.Error()}
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	const (
		defaults   = `{"deliver_policy":"new","ordering":"conversation"}` // what an agent's first pull creates
		configured = `{"deliver_policy":"new","ack_wait":"2m","max_deliver":7,"ordering":"none","filter":{"channel_types":["webhook"]}}`
	)
	// holds: the consumer has the configured settings.
	holds := func(t *testing.T, name string, m map[string]any) {
		t.Helper()
		require.Equal(t, "2m0s", m["ack_wait"], "%s: %v", name, m)
		require.EqualValues(t, 7, m["max_deliver"], "%s: %v", name, m)
		require.Equal(t, "none", m["ordering"], "%s: %v", name, m)
		require.Equal(t, []any{"webhook"}, m["filter"].(map[string]any)["channel_types"], "%s: %v", name, m)
	}
	get := func(name string) map[string]any {
		var m map[string]any
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/consumers/"+name, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		return m
	}

	st, m := put("fresh", "*", defaults)
	require.Equal(t, http.StatusCreated, st, m)
	require.Equal(t, "conversation", m["ordering"])

	st, m = put("configured", "", configured)
	require.Equal(t, http.StatusCreated, st, m)
	st, m = put("configured", "*", defaults)
	require.Equal(t, http.StatusPreconditionFailed, st, m)
	require.Equal(t, "precondition_failed", m["error"].(map[string]any)["code"])
	holds(t, "configured", get("configured"))

	st, m = put("fresh", `"v1"`, defaults)
	require.Equal(t, http.StatusBadRequest, st, m)

	// The race: a PUT configuring the consumer and the create-only call
	// an agent's first pull makes, released together.
	for i := range 20 {
		name := fmt.Sprintf("race-%d", i)
		var (
			wg          sync.WaitGroup
			start       = make(chan struct{})
			stPut, stIf int
			mPut, mIf   map[string]any
		)
		wg.Add(2)
		go func() { defer wg.Done(); <-start; stPut, mPut = put(name, "", configured) }()
		go func() { defer wg.Done(); <-start; stIf, mIf = put(name, "*", defaults) }()
		close(start)
		wg.Wait()
		require.Contains(t, []int{http.StatusOK, http.StatusCreated}, stPut, "%s: the configuring PUT: %v", name, mPut)
		require.Contains(t, []int{http.StatusCreated, http.StatusPreconditionFailed}, stIf, "%s: the create-only PUT: %v", name, mIf)
		require.NotEqual(t, stPut == http.StatusCreated, stIf == http.StatusCreated, "%s: exactly one created it", name)
		holds(t, name, get(name))
	}
}
