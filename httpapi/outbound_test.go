package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/groupcommit"
	"github.com/miohq/mio/httpapi"
	"github.com/miohq/mio/httpapi/openapi"
	"github.com/miohq/mio/httpapi/openapi/openapitest"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/outbox"
	"github.com/miohq/mio/workers"
)

// outTenant is one tenant of the outbound API tests.
type outTenant struct {
	id       uuid.UUID
	account  uuid.UUID
	disabled uuid.UUID
	produce  string // token with produce
	read     string // token with read only
	consume  string // token with consume only
}

type outAPI struct {
	env   *dbtest.Env
	owner *pgxpool.Pool
	pub   *httptest.Server
	adm   *httptest.Server
	a, b  outTenant
}

func newOutAPI(t *testing.T) *outAPI {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	svc := admin.New(env.Pool, nil, "http://mio.test")
	o := &outAPI{env: env, owner: env.OwnerPool(t)}
	mk := func(name string) outTenant {
		tn, _, err := svc.TenantCreate(ctx, name)
		require.NoError(t, err)
		ot := outTenant{id: tn.ID}
		for _, st := range []string{"active", "disabled"} {
			a, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tn.ID, ChannelType: "webhook"})
			require.NoError(t, err)
			if st == "active" {
				ot.account = a.ID
			} else {
				ot.disabled = a.ID
				_, err = svc.AccountSetStatus(ctx, tn.ID, a.ID, db.AccountDisabled)
				require.NoError(t, err)
			}
		}
		for _, r := range []db.Role{db.RoleProduce, db.RoleRead, db.RoleConsume} {
			tok, _, err := svc.TokenCreate(ctx, tn.ID, string(r), []db.Role{r})
			require.NoError(t, err)
			switch r {
			case db.RoleProduce:
				ot.produce = tok
			case db.RoleRead:
				ot.read = tok
			default:
				ot.consume = tok
			}
		}
		return ot
	}
	o.a, o.b = mk("a"), mk("b")
	river, err := workers.NewClient(env.Pool, nil, workers.Config{})
	require.NoError(t, err)
	// Sends and stream appends are group-committed, as in mio serve.
	sender := outbox.New(env.Pool, river)
	t.Cleanup(sender.StartGroupCommit(groupcommit.Config{}))
	t.Cleanup(sender.StartAppendGroupCommit(groupcommit.Config{}))
	api := httpapi.New(httpapi.Deps{Pool: env.Pool, Metrics: metrics.New(), Outbox: sender})
	o.pub = httptest.NewServer(openapitest.Handler(t, openapi.Public, api.PublicHandler()))
	t.Cleanup(o.pub.Close)
	o.adm = httptest.NewServer(openapitest.Handler(t, openapi.Admin, api.AdminHandler()))
	t.Cleanup(o.adm.Close)
	return o
}

func (o *outAPI) do(t testing.TB, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	}
	return resp.StatusCode, m
}

func (o *outAPI) send(t testing.TB, tn outTenant, body string) (int, map[string]any) {
	t.Helper()
	return o.do(t, http.MethodPost, o.pub.URL+"/v1/outbound", tn.produce, body)
}

// counts returns the outbox rows, events and dispatch jobs in the
// database (all tenants).
func (o *outAPI) counts(t testing.TB) [3]int {
	t.Helper()
	var c [3]int
	require.NoError(t, o.owner.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM mio.outbox), (SELECT count(*) FROM mio.outbox_events),
		(SELECT count(*) FROM river.river_job WHERE kind = 'mio.dispatch')`).Scan(&c[0], &c[1], &c[2]))
	return c
}

func cmd(key string, account uuid.UUID, extra string) string {
	return fmt.Sprintf(`{"idempotency_key":%q,"account_id":%q,"conversation_id":"c-1","text":"hello"%s}`, key, account, extra)
}

func TestOutboundPostIdempotent(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	status, m := o.send(t, o.a, cmd("k-1", o.a.account, ""))
	require.Equal(t, http.StatusAccepted, status, m)
	require.Equal(t, "queued", m["handoff_state"])
	id := m["id"].(string)
	require.Equal(t, [3]int{1, 1, 1}, o.counts(t), "row, first event and dispatch job")

	status, m = o.send(t, o.a, cmd("k-1", o.a.account, ""))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, id, m["id"], "same key: same id")
	require.Equal(t, [3]int{1, 1, 1}, o.counts(t), "nothing new")

	status, m = o.send(t, o.a, cmd("k-1", o.a.account, `,"thread_id":"other"`))
	require.Equal(t, http.StatusConflict, status, m)

	// Another tenant may use the same key.
	status, _ = o.send(t, o.b, cmd("k-1", o.b.account, ""))
	require.Equal(t, http.StatusAccepted, status)

	status, m = o.do(t, http.MethodGet, o.pub.URL+"/v1/outbound/"+id, o.a.read, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "queued", m["handoff_state"])
	require.Equal(t, "unknown", m["provider_state"])
	require.EqualValues(t, 1, m["attempt"])
	require.EqualValues(t, 0, m["attempts"])
	ev := m["events"].([]any)
	require.Len(t, ev, 1)
	require.Equal(t, "queued", ev[0].(map[string]any)["event"])
}

// TestOutboundBatch: POST /v1/outbound/batch answers each command as
// POST /v1/outbound would alone, in one transaction; a batch that is not
// one is refused whole with nothing written.
func TestOutboundBatch(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	status, m := o.send(t, o.a, cmd("prior", o.a.account, ""))
	require.Equal(t, http.StatusAccepted, status, m)
	prior := m["id"]
	batch := func(cmds ...string) string { return `{"commands":[` + strings.Join(cmds, ",") + `]}` }
	url := o.pub.URL + "/v1/outbound/batch"
	status, m = o.do(t, http.MethodPost, url, o.a.produce, batch(
		cmd("n-1", o.a.account, ""),
		cmd("prior", o.a.account, ""),
		cmd("prior", o.a.account, `,"thread_id":"other"`),
		cmd("n-2", o.a.disabled, ""),
		cmd("n-3", o.b.account, ""),
		`{"account_id":"`+o.a.account.String()+`","conversation_id":"c-1","text":"no key"}`,
		cmd("n-4", o.a.account, ""),
	))
	require.Equal(t, http.StatusOK, status, m)
	items := m["items"].([]any)
	require.Len(t, items, 7)
	want := []float64{202, 200, 409, 400, 400, 400, 202}
	for i, it := range items {
		item := it.(map[string]any)
		require.EqualValues(t, i, item["index"])
		require.Equal(t, want[i], item["status"], "item %d: %v", i, item)
		if want[i] >= 400 {
			require.NotEmpty(t, item["error"].(map[string]any)["message"], "item %d", i)
			require.Nil(t, item["id"], "item %d", i)
		} else {
			require.Equal(t, "queued", item["handoff_state"], "item %d", i)
		}
	}
	require.Equal(t, prior, items[1].(map[string]any)["id"], "replay: the first message")
	require.Contains(t, items[5].(map[string]any)["error"].(map[string]any)["message"], "idempotency_key is required")
	require.Equal(t, [3]int{3, 3, 2}, o.counts(t), "prior, n-1 and n-4; the batch's two share a dispatch job")

	// The sends are the tenant's, readable one by one.
	status, m = o.do(t, http.MethodGet, o.pub.URL+"/v1/outbound/"+items[6].(map[string]any)["id"].(string), o.a.read, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Equal(t, "n-4", m["idempotency_key"])

	tooMany := make([]string, outbox.MaxBatch+1)
	for i := range tooMany {
		tooMany[i] = cmd(fmt.Sprintf("many-%d", i), o.a.account, "")
	}
	for name, body := range map[string]string{
		"empty":     `{"commands":[]}`,
		"null item": batch(cmd("x-1", o.a.account, ""), "null"),
		"too many":  batch(tooMany...),
		"not JSON":  `{"commands":`,
		"unknown":   `{"commands":[],"extra":1}`,
	} {
		status, m = o.do(t, http.MethodPost, url, o.a.produce, body)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", name, m)
	}
	status, _ = o.do(t, http.MethodPost, url, o.a.read, batch(cmd("x-2", o.a.account, "")))
	require.Equal(t, http.StatusForbidden, status, "read token cannot send")
	require.Equal(t, [3]int{3, 3, 2}, o.counts(t), "nothing written by refused batches")
}

func TestOutboundBadInput(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	status, m := o.send(t, o.a, cmd("orig", o.a.account, ""))
	require.Equal(t, http.StatusAccepted, status)
	orig := m["id"].(string)
	before := o.counts(t)
	acct := o.a.account
	cases := []struct {
		name   string
		body   string
		status int
	}{
		{"unknown field", cmd("x1", acct, `,"colour":"red"`), 400},
		{"not JSON", `{"idempotency_key":`, 400},
		{"trailing data", cmd("x2", acct, "") + `{}`, 400},
		{"no idempotency key", fmt.Sprintf(`{"account_id":%q,"conversation_id":"c","text":"t"}`, acct), 400},
		{"no account", `{"idempotency_key":"x3","conversation_id":"c","text":"t"}`, 400},
		{"unknown account", cmd("x4", uuid.New(), ""), 400},
		{"another tenant's account", cmd("x5", o.b.account, ""), 400},
		{"disabled account", cmd("x6", o.a.disabled, ""), 400},
		{"no conversation", fmt.Sprintf(`{"idempotency_key":"x7","account_id":%q,"text":"t"}`, acct), 400},
		{"empty message", fmt.Sprintf(`{"idempotency_key":"x8","account_id":%q,"conversation_id":"c"}`, acct), 400},
		{"rich content unknown field", cmd("x9", acct, `,"rich_content":{"title":"t","colour":1}`), 400},
		{"rich content bad block", cmd("x10", acct, `,"rich_content":{"blocks":[{"type":"video"}]}`), 400},
		{"attachment not a URL", cmd("x11", acct, `,"attachments":[{"url":"file:///etc/passwd"}]`), 400},
		{"edit of unknown message", cmd("x12", acct, fmt.Sprintf(`,"edit_of":%q`, uuid.New())), 400},
		{"edit of another conversation", strings.Replace(cmd("x13", acct, fmt.Sprintf(`,"edit_of":%q`, orig)), `"c-1"`, `"c-2"`, 1), 400},
		{"edit_of not a uuid", cmd("x14", acct, `,"edit_of":"nope"`), 400},
		{"control characters", strings.Replace(cmd("x17", acct, ""), `"x17"`, `"x\u0001"`, 1), 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, m := o.send(t, o.a, c.body)
			require.Equal(t, c.status, status, m)
			msg := m["error"].(map[string]any)["message"].(string)
			require.NotEmpty(t, msg)
		})
	}
	req, _ := http.NewRequest(http.MethodPost, o.pub.URL+"/v1/outbound", strings.NewReader(cmd("x15", acct, "")))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+o.a.produce)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
	// A bad select is a 400 whose message names the field.
	for field, rich := range map[string]string{
		"rich_content.selects[0].action_id":        `{"selects":[{"options":[{"label":"EU","value":"eu"}]}]}`,
		"rich_content.selects[0].options[1].value": `{"selects":[{"action_id":"region","options":[{"label":"EU","value":"eu"},{"label":"US"}]}]}`,
	} {
		status, m := o.send(t, o.a, cmd("x18", acct, `,"rich_content":`+rich))
		require.Equal(t, http.StatusBadRequest, status, m)
		require.Contains(t, m["error"].(map[string]any)["message"], field)
	}
	require.Equal(t, before, o.counts(t), "nothing written")
	status, m = o.send(t, o.a, cmd("x19", acct, `,"rich_content":{"selects":[{"action_id":"region","placeholder":"Pick a region",`+
		`"options":[{"label":"EU","value":"eu"},{"label":"US","value":"us"}]}]}`))
	require.Equal(t, http.StatusAccepted, status, m)

	// An edit of a message of the same conversation is fine.
	status, m = o.send(t, o.a, cmd("x16", acct, fmt.Sprintf(`,"edit_of":%q`, orig)))
	require.Equal(t, http.StatusAccepted, status, m)
}

func TestOutboundRoles(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	status, _ := o.do(t, http.MethodPost, o.pub.URL+"/v1/outbound", o.a.consume, cmd("r1", o.a.account, ""))
	require.Equal(t, http.StatusForbidden, status)
	status, _ = o.do(t, http.MethodPost, o.pub.URL+"/v1/outbound", o.a.read, cmd("r1", o.a.account, ""))
	require.Equal(t, http.StatusForbidden, status)
	status, _ = o.do(t, http.MethodPost, o.pub.URL+"/v1/outbound", "", cmd("r1", o.a.account, ""))
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = o.do(t, http.MethodGet, o.pub.URL+"/v1/outbound", o.a.consume, "")
	require.Equal(t, http.StatusForbidden, status)
}

// TestOutboundTenantIsolation: tenant B can neither read, list nor
// resend tenant A's messages.
func TestOutboundTenantIsolation(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	_, m := o.send(t, o.a, cmd("iso", o.a.account, ""))
	id := m["id"].(string)
	_, err := o.owner.Exec(context.Background(), `UPDATE mio.outbox SET handoff_state = 'dead', dead_at = now() WHERE id = $1`, id)
	require.NoError(t, err)

	status, _ := o.do(t, http.MethodGet, o.pub.URL+"/v1/outbound/"+id, o.b.read, "")
	require.Equal(t, http.StatusNotFound, status)
	status, _ = o.do(t, http.MethodPost, o.pub.URL+"/v1/outbound/"+id+"/resend", o.b.produce, "")
	require.Equal(t, http.StatusNotFound, status)
	status, m = o.do(t, http.MethodGet, o.pub.URL+"/v1/outbound", o.b.read, "")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, m["items"])

	status, m = o.do(t, http.MethodGet, o.pub.URL+"/v1/outbound/"+id, o.a.read, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "dead", m["handoff_state"], "B's resend changed nothing")
}

func TestOutboundResend(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	_, m := o.send(t, o.a, cmd("rs", o.a.account, ""))
	id := m["id"].(string)
	status, _ := o.do(t, http.MethodPost, o.pub.URL+"/v1/outbound/"+id+"/resend", o.a.produce, "")
	require.Equal(t, http.StatusConflict, status, "still queued")

	_, err := o.owner.Exec(context.Background(),
		`UPDATE mio.outbox SET handoff_state = 'dead', attempts = 5, attempt_no = 5, dead_at = now(), last_error = 'gone' WHERE id = $1`, id)
	require.NoError(t, err)
	status, m = o.do(t, http.MethodPost, o.pub.URL+"/v1/outbound/"+id+"/resend", o.a.produce, "")
	require.Equal(t, http.StatusAccepted, status, m)
	require.EqualValues(t, 6, m["attempt"], "a new series continues the attempt numbers: new idempotency keys")

	status, m = o.do(t, http.MethodGet, o.pub.URL+"/v1/outbound/"+id, o.a.read, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "queued", m["handoff_state"])
	require.EqualValues(t, 2, m["series"])
	require.EqualValues(t, 0, m["attempts"])
	ev := m["events"].([]any)
	require.Equal(t, "resend", ev[len(ev)-1].(map[string]any)["event"])
	require.Equal(t, 2, o.counts(t)[2], "a new dispatch job")
}

// TestOutboundFailClosed: when the dispatch job cannot be inserted the
// API answers 503 and writes nothing.
func TestOutboundFailClosed(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	_, err := o.owner.Exec(context.Background(), `REVOKE INSERT ON river.river_job FROM mio_runtime`)
	require.NoError(t, err)
	status, m := o.send(t, o.a, cmd("fc", o.a.account, ""))
	require.Equal(t, http.StatusServiceUnavailable, status, m)
	require.Equal(t, [3]int{0, 0, 0}, o.counts(t))
}

func TestOutboundList(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	var ids []string
	for i := range 5 {
		body := strings.Replace(cmd(fmt.Sprintf("l%d", i), o.a.account, ""), `"c-1"`, fmt.Sprintf(`"conv-%d"`, i%2), 1)
		_, m := o.send(t, o.a, body)
		ids = append(ids, m["id"].(string))
	}
	var got []string
	url := o.pub.URL + "/v1/outbound?limit=2"
	for page := 0; page < 5; page++ {
		status, m := o.do(t, http.MethodGet, url, o.a.read, "")
		require.Equal(t, http.StatusOK, status, m)
		for _, it := range m["items"].([]any) {
			got = append(got, it.(map[string]any)["id"].(string))
		}
		next, _ := m["next_cursor"].(string)
		if next == "" {
			break
		}
		url = o.pub.URL + "/v1/outbound?limit=2&cursor=" + next
	}
	require.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, got, "newest first, every row once")

	status, m := o.do(t, http.MethodGet, o.pub.URL+"/v1/outbound?conversation_id=conv-1&state=queued&account_id="+o.a.account.String(), o.a.read, "")
	require.Equal(t, http.StatusOK, status)
	require.Len(t, m["items"], 2)
	for _, bad := range []string{"state=lost", "limit=0", "cursor=zz", "account_id=x", "colour=red"} {
		status, _ := o.do(t, http.MethodGet, o.pub.URL+"/v1/outbound?"+bad, o.a.read, "")
		require.Equal(t, http.StatusBadRequest, status, bad)
	}
}

// TestAdminDeadLetters: list, show, requeue and discard over the admin
// API with admin tokens (viewer reads, operator acts).
func TestAdminDeadLetters(t *testing.T) {
	t.Parallel()
	o := newOutAPI(t)
	ctx := context.Background()
	token := func(roles ...db.AdminRole) string {
		tok, hash := db.NewAdminTokenSecret()
		_, err := db.AdminTokenInsert(ctx, o.env.Pool, "t", roles, hash, nil)
		require.NoError(t, err)
		return tok
	}
	viewer, operator := token("viewer"), token("operator")
	var dead []string
	for i := range 2 {
		_, m := o.send(t, o.a, cmd(fmt.Sprintf("d%d", i), o.a.account, ""))
		dead = append(dead, m["id"].(string))
	}
	_, err := o.owner.Exec(ctx, `UPDATE mio.outbox SET handoff_state = 'dead', attempts = 1, dead_at = now(), last_error = 'HTTP 400' WHERE id = ANY($1)`, dead)
	require.NoError(t, err)

	base := o.adm.URL + "/admin/v1/dead-letters"
	status, _ := o.do(t, http.MethodGet, base, "", "")
	require.Equal(t, http.StatusUnauthorized, status)
	status, m := o.do(t, http.MethodGet, base+"?kind=outbound", viewer, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Len(t, m["items"], 2)
	item := m["items"].([]any)[0].(map[string]any)
	require.Equal(t, "outbound", item["kind"])
	require.Equal(t, "HTTP 400", item["last_error"])
	require.Equal(t, "webhook", item["channel_type"])

	status, m = o.do(t, http.MethodGet, base+"/"+dead[0], viewer, "")
	require.Equal(t, http.StatusOK, status, m)
	require.Len(t, m["items"], 1)

	status, _ = o.do(t, http.MethodPost, base+"/"+dead[0]+"/requeue", viewer, "")
	require.Equal(t, http.StatusForbidden, status, "a viewer cannot requeue")
	status, m = o.do(t, http.MethodPost, base+"/"+dead[0]+"/requeue", operator, "")
	require.Equal(t, http.StatusOK, status, m)
	require.EqualValues(t, 1, m["items"])
	status, m = o.do(t, http.MethodPost, base+"/"+dead[0]+"/requeue", operator, "")
	require.Equal(t, http.StatusOK, status, "no longer a dead letter: a no-op")
	require.EqualValues(t, 0, m["items"])
	status, _ = o.do(t, http.MethodPost, base+"/"+uuid.NewString()+"/requeue", operator, "")
	require.Equal(t, http.StatusNotFound, status, "names nothing")

	status, _ = o.do(t, http.MethodPost, base+"/"+dead[1]+"/discard", operator, "")
	require.Equal(t, http.StatusOK, status)
	status, m = o.do(t, http.MethodGet, base, operator, "")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, m["items"])

	// One audit row per change, none for the no-op or the refusals.
	audits := map[string]int{}
	rows, err := o.owner.Query(ctx, `SELECT action, actor FROM mio.audit_log WHERE action LIKE 'dead_letter.%'`)
	require.NoError(t, err)
	for rows.Next() {
		var action, actor string
		require.NoError(t, rows.Scan(&action, &actor))
		require.Contains(t, actor, "admin:")
		audits[action]++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]int{"dead_letter.requeue": 1, "dead_letter.discard": 1}, audits)

	// The requeued message is queued again, as a new series.
	var state string
	var series int
	require.NoError(t, o.owner.QueryRow(ctx, `SELECT handoff_state, series FROM mio.outbox WHERE id = $1`, dead[0]).Scan(&state, &series))
	require.Equal(t, "queued", state)
	require.Equal(t, 2, series)
	for _, bad := range []string{"?kind=x", "?tenant_id=x", "?limit=0", "?channel_type=fax"} {
		status, _ := o.do(t, http.MethodGet, base+bad, viewer, "")
		require.Equal(t, http.StatusBadRequest, status, bad)
	}
}
