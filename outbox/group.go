package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/groupcommit"
)

// Sends of a group — one request's, a batch's, or concurrent requests'
// gathered by group commit — are checked and written with a fixed number
// of statements whatever their count: one read of the idempotency keys
// already used, one of the accounts, one of the edited messages (when
// any), one insert of the dispatch jobs and one of the rows with their
// first events. Group commit sends them in three round trips (a
// db.SendTx: the reads with the BEGIN, the jobs, the rows with the
// COMMIT), and reads the keys only after a replay (commitRequests); a
// batch and SendTx send them one by one in the caller's transaction.

// MaxBatch is the most commands SendBatch takes.
const MaxBatch = 500

// sendRequest is one Send waiting for group commit.
type sendRequest struct {
	tenantID uuid.UUID
	cmd      *command
}

// StartGroupCommit makes Send share transactions between concurrent
// calls (cfg tunes the window, batch size and flushers). Call it once,
// before serving; stop refuses new sends, commits what is queued and
// waits.
func (s *Service) StartGroupCommit(cfg groupcommit.Config) (stop func()) {
	cfg.Unavailable = db.IsUnavailable
	if cfg.Name == "" {
		cfg.Name = "outbound"
	}
	s.group = groupcommit.New(s.commitRequests, cfg)
	s.group.Start()
	return s.group.Stop
}

// readKeysAfterReplay is how long group commit reads idempotency keys
// before writing once a group held a replay or a refusal: a client
// retrying a burst of sends replays many, and each would otherwise cost
// its group a failed transaction (a refusal, a second plan).
const readKeysAfterReplay = 10 * time.Second

// errUnreadRefusal: a group written without reading its keys refused a
// command, which may be a replay (answered as one whatever its account
// or edit now say): the group is planned again with its keys read.
var errUnreadRefusal = errors.New("outbox: a command refused before its idempotency key was read")

// commitRequests is the group-commit Func: one transaction, each tenant's
// sends under its own tenant setting, in three round trips
// (commitPipelined).
//
// It does not read the group's idempotency keys first: agents' sends
// are almost all new, and the read cost a tenth of the transaction
// (mio-bench produce, pg_stat_statements). The rows' insert has no ON
// CONFLICT, so a key already used — a replay, a key taken meanwhile or
// twice in the group — fails the transaction whole, nothing written, and
// the group is done again by commitCareful, which answers those sends
// with the row holding the key. A group that refused a command without
// having read its keys is planned again with them (errUnreadRefusal).
// For readKeysAfterReplay after either, groups read their keys first. Every
// answer is as if the keys had been read: a send is answered new only if
// its row was inserted under the unique index.
func (s *Service) commitRequests(ctx context.Context, reqs []sendRequest) ([]groupcommit.Outcome[*Sent], error) {
	var order []uuid.UUID
	byTenant := map[uuid.UUID][]int{}
	for i, r := range reqs {
		if _, ok := byTenant[r.tenantID]; !ok {
			order = append(order, r.tenantID)
		}
		byTenant[r.tenantID] = append(byTenant[r.tenantID], i)
	}
	cmdsOf := make([][]*command, len(order))
	for n, tenant := range order {
		for _, i := range byTenant[tenant] {
			cmdsOf[n] = append(cmdsOf[n], reqs[i].cmd)
		}
	}
	outs := make([]groupcommit.Outcome[*Sent], len(reqs))
	readKeys := time.Now().UnixNano() < s.readKeysUntil.Load()
	got, err := s.commitPipelined(ctx, order, cmdsOf, readKeys)
	if errors.Is(err, errUnreadRefusal) || errors.Is(err, db.ErrConflict) {
		s.readKeysUntil.Store(time.Now().Add(readKeysAfterReplay).UnixNano())
	}
	if errors.Is(err, errUnreadRefusal) {
		got, err = s.commitPipelined(ctx, order, cmdsOf, true)
	}
	if errors.Is(err, db.ErrConflict) {
		got, err = s.commitCareful(ctx, order, cmdsOf)
	}
	if err != nil {
		return nil, err
	}
	for n, tenant := range order {
		for k, i := range byTenant[tenant] {
			outs[i] = got[n][k]
		}
	}
	return outs, nil
}

// commitPipelined sends the groups (cmdsOf[n]: tenant order[n]'s) in a
// db.SendTx: every lookup with the BEGIN, the jobs in one River insert,
// the rows with the COMMIT. Its answers are per tenant, per command.
// Without readKeys the idempotency keys are not read: a refused command
// fails it with errUnreadRefusal, a used key with db.ErrConflict, both
// before anything is written.
func (s *Service) commitPipelined(ctx context.Context, order []uuid.UUID, cmdsOf [][]*command, readKeys bool) ([][]groupcommit.Outcome[*Sent], error) {
	lookups := make([]db.SendLookup, len(order))
	for n, tenant := range order {
		l := db.SendLookup{TenantID: tenant}
		seen := map[uuid.UUID]bool{}
		for _, c := range cmdsOf[n] {
			if readKeys {
				l.Keys = append(l.Keys, c.IdempotencyKey)
			}
			if !seen[c.AccountID] {
				seen[c.AccountID] = true
				l.AccountIDs = append(l.AccountIDs, c.AccountID)
			}
			if c.EditOf != nil {
				l.EditIDs = append(l.EditIDs, *c.EditOf)
			}
		}
		lookups[n] = l
	}
	st, found, err := db.BeginSendTx(ctx, s.pool, lookups)
	if err != nil {
		return nil, err
	}
	defer st.Rollback()
	outs := make([][]groupcommit.Outcome[*Sent], len(order))
	inserts := make([]db.SendInsert, len(order))
	ats := make([][]int, len(order))
	for n, tenant := range order {
		var rows []db.OutboxNew
		outs[n], rows, ats[n] = plan(cmdsOf[n], byKey(found[n].Priors), accountsByID(found[n].Accounts), byID(found[n].Edited))
		inserts[n] = db.SendInsert{TenantID: tenant, Rows: rows}
		if !readKeys && len(rows) < len(cmdsOf[n]) {
			return nil, errUnreadRefusal
		}
	}
	if err := s.insertJobs(ctx, st.Tx(), inserts); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEnqueue, err)
	}
	ins, err := st.Commit(ctx, inserts)
	if err != nil {
		if errors.Is(err, db.ErrConflict) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrEnqueue, err)
	}
	for n := range order {
		rows := inserts[n].Rows
		if len(ins[n]) != len(rows) {
			return nil, fmt.Errorf("outbox: %d of %d rows inserted", len(ins[n]), len(rows))
		}
		for k, i := range ats[n] {
			outs[n][i].Res = &Sent{ID: rows[k].ID, HandoffState: db.HandoffQueued}
		}
	}
	return outs, nil
}

// commitCareful sends the groups in one ordinary tenant transaction,
// statement by statement (sendGroup).
func (s *Service) commitCareful(ctx context.Context, order []uuid.UUID, cmdsOf [][]*command) ([][]groupcommit.Outcome[*Sent], error) {
	outs := make([][]groupcommit.Outcome[*Sent], len(order))
	err := db.InTenantTx(ctx, s.pool, order[0], func(tx pgx.Tx) error {
		for n, tenant := range order {
			if n > 0 {
				if err := db.SetTenant(ctx, tx, tenant); err != nil {
					return err
				}
			}
			var err error
			if outs[n], err = s.sendGroup(ctx, tx, tenant, cmdsOf[n]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// BatchItem is one command's answer in SendBatch: Sent, or Err (a
// *ValidationError or ErrKeyConflict) when that command was refused and
// nothing of it written.
type BatchItem struct {
	Sent *Sent
	Err  error
}

// SendBatch checks and sends up to MaxBatch commands of one tenant in ONE
// transaction, answering each command on its own: a refused command
// (malformed, unknown account, idempotency key used for another
// command) is written nothing while the others commit. An error is
// returned only when the transaction itself fails (then nothing was
// written) or for an empty or oversized batch (a *ValidationError).
func (s *Service) SendBatch(ctx context.Context, tenantID uuid.UUID, cmds []*envelope.SendCommand) ([]BatchItem, error) {
	switch {
	case len(cmds) == 0:
		return nil, invalid("commands", "commands: want 1 to %d commands", MaxBatch)
	case len(cmds) > MaxBatch:
		return nil, invalid("commands", "commands: at most %d commands in one batch", MaxBatch)
	case s.river == nil:
		return nil, ErrNotConfigured
	}
	var items []BatchItem
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		items, err = s.SendManyTx(ctx, tx, tenantID, cmds)
		return err
	})
	if err != nil {
		return nil, err
	}
	for i := range items {
		if v := (*ValidationError)(nil); errors.As(items[i].Err, &v) && v.Field != "" {
			v.Field = fmt.Sprintf("commands[%d].%s", i, v.Field)
		}
	}
	return items, nil
}

// SendManyTx is SendBatch's checks and writes in the caller's transaction
// tx (scoped to tenantID), with no limit on the number of commands: one
// answer per command, a refused one written nothing. On an error the
// caller rolls tx back.
func (s *Service) SendManyTx(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, cmds []*envelope.SendCommand) ([]BatchItem, error) {
	items := make([]BatchItem, len(cmds))
	var valid []*command
	var at []int
	for i, cmd := range cmds {
		c, err := s.newCommand(cmd)
		if err != nil {
			items[i].Err = err
			continue
		}
		valid = append(valid, c)
		at = append(at, i)
	}
	if len(valid) == 0 {
		return items, nil
	}
	outs, err := s.sendGroup(ctx, tx, tenantID, valid)
	if err != nil {
		return nil, err
	}
	for k, o := range outs {
		items[at[k]] = BatchItem{Sent: o.Res, Err: o.Err}
	}
	return items, nil
}

// sendOne is sendGroup for one command.
func (s *Service) sendOne(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, c *command) (*Sent, error) {
	outs, err := s.sendGroup(ctx, tx, tenantID, []*command{c})
	if err != nil {
		return nil, err
	}
	return outs[0].Res, outs[0].Err
}

// sendGroup checks cmds of one tenant against the database and writes
// the ones that pass, in tx (scoped to tenantID). A command whose
// idempotency key the tenant already used is answered with that message
// (or ErrKeyConflict); one that fails its checks gets its
// *ValidationError; neither writes anything. The error return is for
// the transaction: after it the caller rolls tx back.
func (s *Service) sendGroup(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, cmds []*command) ([]groupcommit.Outcome[*Sent], error) {
	keys := make([]string, 0, len(cmds))
	for _, c := range cmds {
		keys = append(keys, c.IdempotencyKey)
	}
	priors, err := db.OutboxGetByKeys(ctx, tx, tenantID, keys)
	if err != nil {
		return nil, fmt.Errorf("outbox: idempotency keys: %w", err)
	}
	used := byKey(priors)
	var acctIDs, editIDs []uuid.UUID
	for _, c := range cmds {
		if used[c.IdempotencyKey] == nil {
			acctIDs = append(acctIDs, c.AccountID)
			if c.EditOf != nil {
				editIDs = append(editIDs, *c.EditOf)
			}
		}
	}
	accts, edited, err := lookups(ctx, tx, tenantID, acctIDs, editIDs)
	if err != nil {
		return nil, err
	}
	outs, rows, at := plan(cmds, used, accts, edited)
	if len(rows) == 0 {
		return outs, nil
	}
	ins, err := s.EnqueueTx(ctx, tx, tenantID, rows)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEnqueue, err)
	}
	inserted := make(map[uuid.UUID]bool, len(ins))
	for _, r := range ins {
		inserted[r.ID] = true
	}
	var lost []int // rows whose key was taken meanwhile
	for k, row := range rows {
		if inserted[row.ID] {
			outs[at[k]].Res = &Sent{ID: row.ID, HandoffState: db.HandoffQueued}
			continue
		}
		lost = append(lost, k)
	}
	if len(lost) == 0 {
		return outs, nil
	}
	// A concurrent send of the same key committed first (the insert waited
	// for it), or the key came twice in this group: drop the jobs no
	// inserted row shares (a shared job finds the row missing and goes on
	// with the others) and answer with the row that holds the key.
	shared := make(map[int64]bool, len(rows))
	for _, row := range rows {
		if inserted[row.ID] {
			shared[row.JobID] = true
		}
	}
	keys = keys[:0]
	for _, k := range lost {
		if job := rows[k].JobID; !shared[job] {
			shared[job] = true // once
			if _, err := s.river.JobDeleteTx(ctx, tx, job); err != nil {
				return nil, fmt.Errorf("outbox: drop the job of a duplicate send: %w", err)
			}
		}
		keys = append(keys, rows[k].IdempotencyKey)
	}
	if priors, err = db.OutboxGetByKeys(ctx, tx, tenantID, keys); err != nil {
		return nil, fmt.Errorf("outbox: idempotency keys: %w", err)
	}
	for _, p := range priors {
		used[p.IdempotencyKey] = p
	}
	for _, k := range lost {
		i := at[k]
		p := used[cmds[i].IdempotencyKey]
		if p == nil {
			return nil, fmt.Errorf("outbox: idempotency key %q neither inserted nor found", cmds[i].IdempotencyKey)
		}
		outs[i].Res, outs[i].Err = replay(p, cmds[i].hash)
	}
	return outs, nil
}

// plan answers the commands of a group that what was read settles — a
// replay of a used key (used: the tenant's messages by key), a refusal —
// and builds the rows of the others; at[k] is rows[k]'s command.
func plan(cmds []*command, used map[string]*db.Outbound, accts map[uuid.UUID]*db.Account, edited map[uuid.UUID]*db.Outbound) ([]groupcommit.Outcome[*Sent], []db.OutboxNew, []int) {
	outs := make([]groupcommit.Outcome[*Sent], len(cmds))
	var rows []db.OutboxNew
	var at []int
	for i, c := range cmds {
		if p := used[c.IdempotencyKey]; p != nil {
			outs[i].Res, outs[i].Err = replay(p, c.hash)
			continue
		}
		row, err := newRow(c, accts[c.AccountID], edited)
		if err != nil {
			outs[i].Err = err
			continue
		}
		rows = append(rows, *row)
		at = append(at, i)
	}
	return outs, rows, at
}

func byKey(os []*db.Outbound) map[string]*db.Outbound {
	m := make(map[string]*db.Outbound, len(os))
	for _, o := range os {
		m[o.IdempotencyKey] = o
	}
	return m
}

func accountsByID(as []*db.Account) map[uuid.UUID]*db.Account {
	m := make(map[uuid.UUID]*db.Account, len(as))
	for _, a := range as {
		m[a.ID] = a
	}
	return m
}

func byID(os []*db.Outbound) map[uuid.UUID]*db.Outbound {
	m := make(map[uuid.UUID]*db.Outbound, len(os))
	for _, o := range os {
		m[o.ID] = o
	}
	return m
}

// lookups reads the accounts and the edited messages a group's commands
// name.
func lookups(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, acctIDs, editIDs []uuid.UUID) (map[uuid.UUID]*db.Account, map[uuid.UUID]*db.Outbound, error) {
	accts := map[uuid.UUID]*db.Account{}
	if len(acctIDs) > 0 {
		as, err := db.AccountGetMany(ctx, tx, tenantID, acctIDs)
		if err != nil {
			return nil, nil, fmt.Errorf("outbox: accounts: %w", err)
		}
		accts = accountsByID(as)
	}
	edited := map[uuid.UUID]*db.Outbound{}
	if len(editIDs) > 0 {
		found, err := db.OutboxGetMany(ctx, tx, tenantID, editIDs)
		if err != nil {
			return nil, nil, fmt.Errorf("outbox: edited messages: %w", err)
		}
		edited = byID(found)
	}
	return accts, edited, nil
}

// replay answers a send whose idempotency key the tenant already used.
func replay(prior *db.Outbound, hash []byte) (*Sent, error) {
	if !bytes.Equal(prior.RequestSHA256, hash) {
		return nil, ErrKeyConflict
	}
	return &Sent{ID: prior.ID, HandoffState: prior.HandoffState, Replayed: true}, nil
}

// newRow checks the command against its account (nil: not the tenant's)
// and the messages edited, and builds its row.
func newRow(c *command, acct *db.Account, edited map[uuid.UUID]*db.Outbound) (*db.OutboxNew, error) {
	if acct == nil {
		return nil, &ValidationError{Field: "account_id", Reason: "account_id: no such account", Err: ErrAccountNotFound}
	}
	if acct.Status != db.AccountActive {
		return nil, &ValidationError{Field: "account_id", Reason: "account_id: the account is " + acct.Status, Err: ErrAccountDisabled}
	}
	if c.EditOf != nil {
		orig := edited[*c.EditOf]
		if orig == nil {
			return nil, invalid("edit_of", "edit_of: no such outbound message")
		}
		if orig.AccountID != c.AccountID || orig.ConversationID != c.ConversationID {
			return nil, invalid("edit_of", "edit_of: the edited message was sent on another account or conversation")
		}
	}
	row := &db.OutboxNew{ID: db.NewOutboxID(), AccountID: acct.ID, ChannelType: acct.ChannelType,
		ConversationID: c.ConversationID, ThreadID: c.ThreadID, IdempotencyKey: c.IdempotencyKey,
		RequestSHA256: c.hash, Text: c.Text, EditOf: c.EditOf, Traceparent: c.Traceparent}
	if c.Stream {
		// A stream names itself (db.OutboxNew; docs/architecture.md,
		// "Streamed replies").
		row.EditOf = &row.ID
	}
	if c.rich != nil {
		row.RichContent, _ = json.Marshal(c.rich)
	}
	if c.reaction {
		row.RichContent = c.RichContent
	}
	if len(c.Attachments) > 0 {
		row.Attachments, _ = json.Marshal(c.Attachments)
	}
	return row, nil
}
