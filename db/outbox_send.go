package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// SendLookup is what a group of one tenant's sends reads before it
// writes: the outbound messages already holding its idempotency keys, its
// accounts, and the messages it edits.
type SendLookup struct {
	TenantID   uuid.UUID
	Keys       []string // none: not read
	AccountIDs []uuid.UUID
	EditIDs    []uuid.UUID // none: not read
}

// SendLookupResult is a SendLookup's answer, in no particular order.
type SendLookupResult struct {
	Priors   []*Outbound
	Accounts []*Account
	Edited   []*Outbound
}

// SendInsert is one tenant's rows for SendTx.Commit.
type SendInsert struct {
	TenantID uuid.UUID
	Rows     []OutboxNew
}

// SendTx is a transaction of outbound sends in three network round
// trips, where a pgx.Tx takes one per statement (six for a send: BEGIN,
// keys, accounts, jobs, rows, COMMIT). BeginSendTx sends BEGIN with every
// tenant's lookups; the caller inserts the dispatch jobs through Tx
// (River's InsertManyTx: one); Commit sends the rows' inserts with the
// COMMIT. Under load each round trip waits for the server process and
// then for this one to be scheduled again, so the transaction's
// statements, not its work, set how long the sends of a group wait
// (mio-bench produce).
//
// The rows are inserted with OutboxInsertBatchStrict: a key taken since
// it was read fails the transaction with ErrConflict and nothing is
// written; the caller then does the group on a path that reads the
// winner back. A SendTx is used by one goroutine; Rollback releases it
// and may always be deferred.
type SendTx struct {
	conn *pgxpool.Conn
	tx   connTx
}

// BeginSendTx begins a send transaction on a connection of pool and
// answers lookups, each under its tenant's setting, in one round trip.
func BeginSendTx(ctx context.Context, pool *pgxpool.Pool, lookups []SendLookup) (*SendTx, []SendLookupResult, error) {
	results := make([]SendLookupResult, len(lookups))
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	for i, l := range lookups {
		if l.TenantID == uuid.Nil {
			return nil, nil, ErrNoTenant
		}
		r := &results[i]
		b.Queue("SELECT set_config('app.current_tenant_id', $1, true)", l.TenantID.String())
		// Arguments in dbsqlc's order (its generated calls'); TestSendTx
		// round-trips every column.
		if len(l.Keys) > 0 {
			b.Queue(dbsqlc.OutboxGetByKeys, l.Keys, l.TenantID).Query(func(rows pgx.Rows) error {
				var err error
				r.Priors, err = collectOutbounds(rows)
				return err
			})
		}
		if len(l.AccountIDs) > 0 {
			b.Queue(dbsqlc.AccountGetMany, l.TenantID, l.AccountIDs).Query(func(rows pgx.Rows) error {
				as, err := pgx.CollectRows(rows, pgx.RowToStructByPos[dbsqlc.MioAccount])
				r.Accounts = make([]*Account, len(as))
				for k, a := range as {
					r.Accounts[k] = accountFrom(a)
				}
				return err
			})
		}
		if len(l.EditIDs) > 0 {
			b.Queue(dbsqlc.OutboxGetMany, l.TenantID, l.EditIDs).Query(func(rows pgx.Rows) error {
				var err error
				r.Edited, err = collectOutbounds(rows)
				return err
			})
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	t := &SendTx{conn: conn, tx: connTx{conn.Conn()}}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		t.Rollback()
		return nil, nil, fmt.Errorf("send lookups: %w", translate(err))
	}
	return t, results, nil
}

// Tx is the open transaction for statements in between (River's job
// insert). It cannot commit, roll back or open a savepoint: SendTx owns
// the transaction.
func (t *SendTx) Tx() pgx.Tx { return t.tx }

// Commit inserts each tenant's rows with their first events, under the
// tenant's setting, and commits, in one round trip; it returns the rows
// inserted per SendInsert — all of them, or an error and nothing
// committed (ErrConflict: an idempotency key already held).
func (t *SendTx) Commit(ctx context.Context, inserts []SendInsert) ([][]OutboxInserted, error) {
	if t.conn == nil {
		return nil, errSendTxDone
	}
	results := make([][]OutboxInserted, len(inserts))
	b := &pgx.Batch{}
	for i, in := range inserts {
		if len(in.Rows) == 0 {
			continue
		}
		b.Queue("SELECT set_config('app.current_tenant_id', $1, true)", in.TenantID.String())
		p := outboxInsertParams(in.TenantID, in.Rows)
		b.Queue(dbsqlc.OutboxInsertBatchStrict, p.Ids, p.AccountIds, p.ChannelTypes, p.ConversationIds, p.ThreadIds,
			p.IdempotencyKeys, p.RequestSha256s, p.Texts, p.RichContents, p.Attachments, p.EditOfs, p.JobIds, p.Traceparents,
			p.TenantID).Query(func(rows pgx.Rows) error {
			var err error
			results[i], err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutboxInserted, error) {
				var o OutboxInserted
				err := row.Scan(&o.ID, &o.CreatedAt)
				return o, err
			})
			return err
		})
	}
	b.Queue("COMMIT")
	err := t.conn.SendBatch(ctx, b).Close()
	if err != nil {
		t.Rollback()
		return nil, fmt.Errorf("send commit: %w", translate(err))
	}
	t.conn.Release()
	t.conn = nil
	return results, nil
}

// Rollback ends the transaction unless Commit did, and releases the
// connection; it is a no-op after either.
func (t *SendTx) Rollback() {
	if t.conn == nil {
		return
	}
	abandon(t.conn)
	t.conn.Release()
	t.conn = nil
}

var errSendTxDone = errors.New("db: send transaction already ended")

func collectOutbounds(rows pgx.Rows) ([]*Outbound, error) {
	rs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[dbsqlc.MioOutbox])
	return outboundsFrom(rs, err)
}

// connTx is a pgx.Tx over a connection whose transaction its owner (a
// SendTx) began with a pipelined BEGIN and ends with a pipelined COMMIT;
// it runs statements in that transaction and refuses to end it.
type connTx struct{ conn *pgx.Conn }

var errTxOwned = errors.New("db: this transaction is committed or rolled back by its SendTx")

func (t connTx) Begin(context.Context) (pgx.Tx, error) { return nil, errTxOwned }
func (t connTx) Commit(context.Context) error          { return errTxOwned }
func (t connTx) Rollback(context.Context) error        { return errTxOwned }
func (t connTx) Conn() *pgx.Conn                       { return t.conn }

// LargeObjects is not supported: the zero LargeObjects fails its calls.
func (t connTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (t connTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	return t.conn.CopyFrom(ctx, table, columns, src)
}

func (t connTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.conn.SendBatch(ctx, b)
}

func (t connTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}

func (t connTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.conn.Exec(ctx, sql, args...)
}

func (t connTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.conn.Query(ctx, sql, args...)
}

func (t connTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.conn.QueryRow(ctx, sql, args...)
}
