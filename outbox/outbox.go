// Package outbox is the send path: it accepts agents' replies
// (SendCommands), checks them, makes them idempotent by the tenant's
// idempotency key, and writes each as an outbox row with its first event
// and its River dispatch job in one transaction; it starts resends and
// reads messages back with their timelines. Dispatching the rows to the
// platforms is the workers' job (workers/dispatch.go); the row, not the
// job, is the truth (docs/architecture.md, "Outbound").
//
// Every write comes as a pair: Send opens its own tenant transaction,
// SendTx works in the caller's, so a send can commit together with other
// writes. Errors callers branch on are typed (ValidationError,
// ErrKeyConflict, ErrNotFound, InProgressError, ErrEnqueue); database
// errors pass through wrapped.
//
// Internal to MIO; not a stable API.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/groupcommit"
	"github.com/miohq/mio/jobs"
)

var (
	// ErrAccountNotFound: the command's account is not one of the
	// tenant's (another tenant's accounts are not seen). Wrapped in a
	// ValidationError.
	ErrAccountNotFound = errors.New("no such account")
	// ErrAccountDisabled: the command's account is not active. Wrapped in
	// a ValidationError.
	ErrAccountDisabled = errors.New("account not active")
	// ErrKeyConflict: the tenant already used the idempotency key for a
	// different command.
	ErrKeyConflict = errors.New("idempotency_key was already used for a different command")
	// ErrNotFound: no such outbound message in the tenant.
	ErrNotFound = errors.New("no such outbound message")
	// ErrEnqueue: the dispatch job or the outbox row could not be
	// written; with Send and Resend nothing was, and a retry may succeed.
	ErrEnqueue = errors.New("could not enqueue")
	// ErrNotConfigured: the Service has no River client to enqueue with.
	ErrNotConfigured = errors.New("outbound dispatch is not configured")
)

// Service sends, resends and reads outbound messages.
type Service struct {
	pool  *pgxpool.Pool
	river *river.Client[pgx.Tx]
	// group, when started (StartGroupCommit), commits concurrent Sends
	// together.
	group *groupcommit.Committer[sendRequest, *Sent]
	// appends, when started (StartAppendGroupCommit), commits concurrent
	// Appends together.
	appends *groupcommit.Committer[db.StreamAppend, bool]
	// readKeysUntil (Unix ns): until then group commit reads a group's
	// idempotency keys before writing it; after, it writes first and
	// lets the keys' unique index find replays (commitRequests).
	readKeysUntil atomic.Int64
}

// New returns a Service on pool. client inserts the dispatch jobs (an
// insert-only client is enough); without one the Service only reads, and
// Send and Resend fail with ErrNotConfigured once their input is checked.
func New(pool *pgxpool.Pool, client *river.Client[pgx.Tx]) *Service {
	return &Service{pool: pool, river: client}
}

// Sent is what a send did.
type Sent struct {
	// ID is the outbound message's id.
	ID uuid.UUID
	// HandoffState is queued for a new message, the message's current
	// state for a replay.
	HandoffState db.HandoffState
	// Replayed: the tenant had already sent this command under this
	// idempotency key; nothing was written and ID is the earlier message.
	Replayed bool
}

// Send checks cmd and, in one transaction of the tenant, writes the
// outbox row, its first event and its dispatch job. With group commit
// started the transaction is shared with concurrent sends (of any
// tenant, each under its own tenant setting); a send refused for its own
// reasons never fails the others. The same command
// sent again under the same idempotency key is answered with the first
// message (Sent.Replayed); a different one is ErrKeyConflict. A bad
// command is a *ValidationError, checked before anything is read.
func (s *Service) Send(ctx context.Context, tenantID uuid.UUID, cmd *envelope.SendCommand) (*Sent, error) {
	c, err := s.newCommand(cmd)
	if err != nil {
		return nil, err
	}
	if s.group != nil {
		return s.group.Do(ctx, sendRequest{tenantID: tenantID, cmd: c})
	}
	var sent *Sent
	err = db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		sent, err = s.sendOne(ctx, tx, tenantID, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sent, nil
}

// SendTx is Send in transaction tx, which must be scoped to tenantID
// (db.BeginTenant). A replay leaves tx as it was. On an error the caller
// rolls tx back; nothing is committed before the caller commits.
func (s *Service) SendTx(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, cmd *envelope.SendCommand) (*Sent, error) {
	c, err := s.newCommand(cmd)
	if err != nil {
		return nil, err
	}
	return s.sendOne(ctx, tx, tenantID, c)
}

// newCommand checks cmd, then that the Service can enqueue.
func (s *Service) newCommand(cmd *envelope.SendCommand) (*command, error) {
	c, err := newCommand(cmd)
	if err == nil && s.river == nil {
		err = ErrNotConfigured
	}
	return c, err
}

// EnqueueTx writes rows as they are — no checks: Send makes them — in
// transaction tx (scoped to tenantID): the dispatch jobs in one insert,
// then the queued rows with their first events in another. Rows of one
// account share a job, up to JobGroupRows of them (jobs.DispatchArgs.More):
// River's job row was a third of the database time of a send. It fills
// in each row's JobID (and ID when unset) and returns the rows inserted.
// A row whose idempotency key the tenant already used is not inserted;
// its job is, and names it: a caller that got fewer rows than it gave
// rolls tx back or deletes the jobs no inserted row shares (Send does).
// Benchmarks and tests use it to enqueue in bulk.
func (s *Service) EnqueueTx(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, rows []db.OutboxNew) ([]db.OutboxInserted, error) {
	if err := s.insertJobs(ctx, tx, []db.SendInsert{{TenantID: tenantID, Rows: rows}}); err != nil {
		return nil, err
	}
	ins, err := db.OutboxInsertBatch(ctx, tx, tenantID, rows)
	if err != nil {
		return nil, fmt.Errorf("insert outbox: %w", err)
	}
	return ins, nil
}

// insertJobs inserts the dispatch jobs of every tenant's rows in one
// River insert and fills in each row's JobID (and ID when unset).
func (s *Service) insertJobs(ctx context.Context, tx pgx.Tx, sets []db.SendInsert) error {
	var params []river.InsertManyParams
	var owners [][]*db.OutboxNew // each job's rows
	for _, set := range sets {
		for _, members := range jobGroups(set.Rows) {
			args := jobs.DispatchArgs{TenantID: set.TenantID, OutboxID: set.Rows[members[0]].ID, AccountID: set.Rows[members[0]].AccountID}
			rows := []*db.OutboxNew{&set.Rows[members[0]]}
			for _, i := range members[1:] {
				args.More = append(args.More, set.Rows[i].ID)
				rows = append(rows, &set.Rows[i])
			}
			// The job's run continues the trace of its first row's request.
			params = append(params, river.InsertManyParams{Args: args, InsertOpts: jobs.TraceOpts(set.Rows[members[0]].Traceparent)})
			owners = append(owners, rows)
		}
	}
	if len(params) == 0 {
		return nil
	}
	res, err := s.river.InsertManyTx(ctx, tx, params)
	if err != nil {
		return fmt.Errorf("enqueue dispatch: %w", err)
	}
	for g, rows := range owners {
		for _, r := range rows {
			r.JobID = res[g].Job.ID
		}
	}
	return nil
}

// JobGroupRows is the most rows one dispatch job is inserted for. A job
// claims its rows together (with up to DispatchConfig.Extras more), so
// this is about the rows one job run sends at once. 64 rather than 16:
// River's insert, fetch and completion of a job cost PostgreSQL as much
// as a few sends' rows, and at 16 a bulk of 50,000 sends made 3,700 jobs (`mio-bench dispatch`, interleaved: 0.48 /
// 0.48 / 0.48 × River at 16, 0.55 / 0.52 / 0.52 at 64; PostgreSQL 88–93
// against 80–83 µs a send). A group commit of POST /v1/outbound holds
// ~15 sends, so only batches and bulk enqueues make bigger groups.
const JobGroupRows = 64

// jobGroups assigns rows IDs where unset and splits them into the groups
// that share a dispatch job: rows of one account, in their order, at most
// JobGroupRows each. It returns the groups as indexes into rows.
func jobGroups(rows []db.OutboxNew) [][]int {
	var groups [][]int
	open := map[uuid.UUID]int{} // account -> its group still taking rows
	for i := range rows {
		if rows[i].ID == uuid.Nil {
			rows[i].ID = db.NewOutboxID()
		}
		g, ok := open[rows[i].AccountID]
		if !ok || len(groups[g]) == JobGroupRows {
			g = len(groups)
			groups = append(groups, nil)
			open[rows[i].AccountID] = g
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}
