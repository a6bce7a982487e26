package jobs_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/jobs"
)

// TestKinds pins what River stores of each job — kind, JSON arguments,
// queue — so that jobs already queued keep running after a change.
func TestKinds(t *testing.T) {
	t.Parallel()
	tenant := uuid.MustParse("00000000-0000-0000-0000-00000000000a")
	row := uuid.MustParse("00000000-0000-0000-0000-00000000000b")
	account := uuid.MustParse("00000000-0000-0000-0000-00000000000c")
	cases := []struct {
		name string
		args interface {
			river.JobArgs
			river.JobArgsWithInsertOpts
		}
		kind  string
		json  string
		queue string
	}{
		{"dispatch", jobs.DispatchArgs{TenantID: tenant, OutboxID: row, AccountID: account}, "mio.dispatch",
			`{"tenant_id":"00000000-0000-0000-0000-00000000000a","outbox_id":"00000000-0000-0000-0000-00000000000b","account_id":"00000000-0000-0000-0000-00000000000c"}`,
			"dispatch"},
		{"dispatch of a group", jobs.DispatchArgs{TenantID: tenant, OutboxID: row, AccountID: account, More: []uuid.UUID{tenant, account}}, "mio.dispatch",
			`{"tenant_id":"00000000-0000-0000-0000-00000000000a","outbox_id":"00000000-0000-0000-0000-00000000000b","account_id":"00000000-0000-0000-0000-00000000000c","more":"00000000-0000-0000-0000-00000000000a,00000000-0000-0000-0000-00000000000c"}`,
			"dispatch"},
		{"dispatch without account", jobs.DispatchArgs{TenantID: tenant, OutboxID: row}, "mio.dispatch",
			`{"tenant_id":"00000000-0000-0000-0000-00000000000a","outbox_id":"00000000-0000-0000-0000-00000000000b"}`,
			"dispatch"},
		{"enrich", jobs.EnrichArgs{TenantID: tenant, MessageID: row}, "mio.enrich",
			`{"tenant_id":"00000000-0000-0000-0000-00000000000a","message_id":"00000000-0000-0000-0000-00000000000b"}`,
			"enrich"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.kind, c.args.Kind())
			b, err := json.Marshal(c.args)
			require.NoError(t, err)
			require.JSONEq(t, c.json, string(b))
			require.Equal(t, c.queue, c.args.InsertOpts().Queue)
		})
	}
}

// TestIDList: a dispatch job's other rows round-trip through one string;
// jobs queued by a version that stored them as an array still decode;
// anything else is refused.
func TestIDList(t *testing.T) {
	t.Parallel()
	a := uuid.MustParse("0194a1b2-0000-7000-8000-00000000000a")
	b := uuid.MustParse("0194a1b2-0000-7000-8000-00000000000b")
	for _, in := range []string{
		`{"tenant_id":"00000000-0000-0000-0000-00000000000a","outbox_id":"00000000-0000-0000-0000-00000000000b","more":"0194a1b2-0000-7000-8000-00000000000a,0194a1b2-0000-7000-8000-00000000000b"}`,
		`{"tenant_id":"00000000-0000-0000-0000-00000000000a","outbox_id":"00000000-0000-0000-0000-00000000000b","more":["0194a1b2-0000-7000-8000-00000000000a","0194a1b2-0000-7000-8000-00000000000b"]}`,
	} {
		var args jobs.DispatchArgs
		require.NoError(t, json.Unmarshal([]byte(in), &args))
		require.Equal(t, jobs.IDList{a, b}, args.More)
	}
	var args jobs.DispatchArgs
	require.NoError(t, json.Unmarshal([]byte(`{"more":""}`), &args))
	require.Empty(t, args.More)
	out, err := json.Marshal(jobs.DispatchArgs{More: jobs.IDList{a}})
	require.NoError(t, err)
	require.Contains(t, string(out), `"more":"0194a1b2-0000-7000-8000-00000000000a"`)
	for _, bad := range []string{`{"more":"x"}`, `{"more":"0194a1b2-0000-7000-8000-00000000000a,"}`, `{"more":7}`, `{"more":["x"]}`} {
		require.Error(t, json.Unmarshal([]byte(bad), &args), bad)
	}
}
