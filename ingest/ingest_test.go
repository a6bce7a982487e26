package ingest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/ingest"
)

type bundle struct {
	env     *dbtest.Env
	tenants []uuid.UUID
	account map[uuid.UUID]uuid.UUID
}

func setup(t *testing.T, tenants int) *bundle {
	t.Helper()
	ctx := context.Background()
	b := &bundle{env: dbtest.New(t), account: map[uuid.UUID]uuid.UUID{}}
	for range tenants {
		tn, err := db.TenantInsert(ctx, b.env.Pool, uuid.Nil, "t-"+uuid.NewString())
		require.NoError(t, err)
		require.NoError(t, db.InTenantTx(ctx, b.env.Pool, tn.ID, func(tx pgx.Tx) error {
			a, err := db.AccountInsert(ctx, tx, &db.AccountInsertParams{TenantID: tn.ID, ChannelType: "webhook", DisplayName: "w"})
			b.account[tn.ID] = a.ID
			return err
		}))
		b.tenants = append(b.tenants, tn.ID)
	}
	return b
}

func (b *bundle) row(tenant uuid.UUID, source string) db.InboxRow {
	return db.InboxRow{ID: uuid.New(), AccountID: b.account[tenant], ChannelType: "webhook", SourceMessageID: source,
		ConversationID: "c", State: db.InboxReady, Envelope: []byte(`{"text":"x"}`), ReceivedAt: time.Now()}
}

func (b *bundle) count(t *testing.T, tenant uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, db.InTenantTx(context.Background(), b.env.Pool, tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), "SELECT count(*) FROM mio.inbox").Scan(&n)
	}))
	return n
}

// A batch shared by several tenants and a poisoned request: the poisoned
// request fails alone; every other request commits.
func TestBatchFailureIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t, 2)
	// A long window makes all requests share one transaction.
	in := ingest.New(b.env.Pool, ingest.Config{Window: 50 * time.Millisecond, Flushers: 1, MaxBatch: 64})
	in.Start()
	defer in.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 21)
	for i := range 20 {
		tenant := b.tenants[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = in.Ingest(ctx, &ingest.Request{TenantID: tenant, Messages: []db.InboxRow{b.row(tenant, uuid.NewString())}})
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		bad := b.row(b.tenants[0], "poison")
		bad.State = "bogus" // violates the state CHECK constraint
		_, errs[20] = in.Ingest(ctx, &ingest.Request{TenantID: b.tenants[0], Messages: []db.InboxRow{bad}})
	}()
	wg.Wait()
	for i := range 20 {
		require.NoError(t, errs[i], "request %d must not fail with its batch-mate", i)
	}
	require.Error(t, errs[20])
	require.False(t, db.IsUnavailable(errs[20]), "a rejected row is not an outage")
	require.Equal(t, 10, b.count(t, b.tenants[0]))
	require.Equal(t, 10, b.count(t, b.tenants[1]))
}

func TestDuplicatesInOneBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	in := ingest.New(b.env.Pool, ingest.Config{Window: 20 * time.Millisecond, Flushers: 1})
	in.Start()
	defer in.Stop()
	tenant := b.tenants[0]
	var wg sync.WaitGroup
	results := make([]*ingest.Result, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := in.Ingest(context.Background(), &ingest.Request{TenantID: tenant, Messages: []db.InboxRow{b.row(tenant, "same")}})
			require.NoError(t, err)
			results[i] = r
		}()
	}
	wg.Wait()
	inserted, dups := 0, 0
	for _, r := range results {
		inserted += len(r.Inserted)
		dups += r.Duplicates
	}
	require.Equal(t, 1, inserted)
	require.Equal(t, 9, dups)
	require.Equal(t, 1, b.count(t, tenant))
}

func TestExpiredRequestNotWritten(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	in := ingest.New(b.env.Pool, ingest.Config{})
	// Not started: the request waits in the queue past its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := in.Ingest(ctx, &ingest.Request{TenantID: b.tenants[0], Messages: []db.InboxRow{b.row(b.tenants[0], "late")}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	in.Start()
	in.Stop()
	require.Zero(t, b.count(t, b.tenants[0]), "a request whose caller gave up before its batch began is never written")
}
