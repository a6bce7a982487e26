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
			`{"tenant_id":"00000000-0000-0000-0000-00000000000a","outbox_id":"00000000-0000-0000-0000-00000000000b","account_id":"00000000-0000-0000-0000-00000000000c","more":["00000000-0000-0000-0000-00000000000a","00000000-0000-0000-0000-00000000000c"]}`,
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
