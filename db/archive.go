package db

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

func parseXid(s string) (uint64, error) {
	x, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("xid8 %q: %w", s, err)
	}
	return x, nil
}

// ArchiveCursorGet returns the tenant's archive position in the log
// (LogStart when the archive never ran for it).
func ArchiveCursorGet(ctx context.Context, tx DBTX, tenantID uuid.UUID) (LogPos, error) {
	r, err := queries().ArchiveCursorGet(ctx, tx, &dbsqlc.ArchiveCursorGetParams{TenantID: tenantID})
	if err != nil {
		if err = translate(err); errors.Is(err, ErrNotFound) {
			return LogPos{Lo: LogStart}, nil
		}
		return LogPos{}, err
	}
	x, err := parseXid(r.ReadyXid)
	if err != nil {
		return LogPos{}, err
	}
	return logPosFrom(r.LogLo, &r.LogHi, x, r.ReadySeq), nil
}

// ArchiveWindowPin records that the window (pos.Lo, hi] is being archived
// (pos has no window open); false means another archiver moved the
// position first.
func ArchiveWindowPin(ctx context.Context, tx DBTX, tenantID uuid.UUID, pos LogPos, hi string) (bool, error) {
	n, err := queries().ArchiveWindowPin(ctx, tx, &dbsqlc.ArchiveWindowPinParams{TenantID: tenantID, Lo: pos.Lo, Hi: hi})
	if err != nil {
		return false, translate(err)
	}
	return n == 1, nil
}

// ArchiveCursorAdvance moves the tenant's position from old to next
// (compare-and-set); false means another archiver moved it first.
func ArchiveCursorAdvance(ctx context.Context, tx DBTX, tenantID uuid.UUID, old, next LogPos) (bool, error) {
	n, err := queries().ArchiveCursorAdvance(ctx, tx, &dbsqlc.ArchiveCursorAdvanceParams{
		TenantID: tenantID, NewLo: next.Lo, NewHi: next.hiArg(), NewXid: next.After.xidText(), NewSeq: next.After.Seq,
		OldLo: old.Lo, OldHi: old.hiArg(), OldXid: old.After.xidText(), OldSeq: old.After.Seq,
	})
	if err != nil {
		return false, translate(err)
	}
	return n == 1, nil
}

// SnapshotNow returns the snapshot of a statement of its own: the hi of a
// new log window.
func SnapshotNow(ctx context.Context, tx DBTX) (string, error) {
	s, err := queries().SnapshotNow(ctx, tx)
	return s, translate(err)
}

// ArchiveRow is one ready message read for the archive.
type ArchiveRow struct {
	ID          uuid.UUID
	ChannelType string
	Pos         StreamPos
	// Envelope is the stored mio.v1.Message JSON without raw.
	Envelope   []byte
	Raw        []byte
	ReceivedAt time.Time
	ReadyAt    time.Time
}

// ArchiveScan calls fn, in window order, for at most maxRows of the
// tenant's ready messages in the log window (pos.Lo, hi] after pos.After
// (so none is ever skipped, and none waits on an unrelated transaction).
// hi must have been taken before this statement. fn returns false to stop
// early. Rows are streamed, not collected.
func ArchiveScan(ctx context.Context, tx DBTX, tenantID uuid.UUID, pos LogPos, hi string, maxRows int, fn func(*ArchiveRow) bool) error {
	if err := customPlans(ctx, tx); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, dbsqlc.ArchiveBatch, tenantID, pos.Lo, hi, pos.After.xidText(), pos.After.Seq, int32(maxRows))
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			r       ArchiveRow
			xid     string
			seq     pgtype.Int8
			readyAt *time.Time
		)
		if err := rows.Scan(&r.ID, &r.ChannelType, &xid, &seq, &r.Envelope, &r.Raw, &r.ReceivedAt, &readyAt); err != nil {
			return translate(err)
		}
		if r.Pos.Xid, err = parseXid(xid); err != nil {
			return err
		}
		r.Pos.Seq = seq.Int64
		if readyAt != nil {
			r.ReadyAt = *readyAt
		}
		if !fn(&r) {
			return nil
		}
	}
	return translate(rows.Err())
}

// ArchivePart is one NDJSON object written for a batch.
type ArchivePart struct {
	ObjectKey   string
	ChannelType string
	Day         time.Time
	Rows        int
	Bytes       int64
}

// ArchivePartUpsert records the objects of one batch (first..last on the
// stream); a rewritten object's row is updated.
func ArchivePartUpsert(ctx context.Context, tx DBTX, tenantID uuid.UUID, first, last StreamPos, parts []ArchivePart) error {
	p := &dbsqlc.ArchivePartUpsertParams{
		TenantID: tenantID, FirstXid: first.xidText(), FirstSeq: first.Seq, LastXid: last.xidText(), LastSeq: last.Seq,
		ObjectKeys: make([]string, len(parts)), ChannelTypes: make([]string, len(parts)),
		Days: make([]pgtype.Date, len(parts)), RowCounts: make([]int32, len(parts)), ByteCounts: make([]int64, len(parts)),
	}
	for i, part := range parts {
		p.ObjectKeys[i], p.ChannelTypes[i] = part.ObjectKey, part.ChannelType
		p.Days[i] = pgtype.Date{Time: part.Day, Valid: true}
		p.RowCounts[i], p.ByteCounts[i] = int32(part.Rows), part.Bytes
	}
	return translate(queries().ArchivePartUpsert(ctx, tx, p))
}

// InboxArchivedPrune deletes at most maxRows of the tenant's messages
// received before before that are already archived — never an unarchived
// one — with their attachment rows, releasing their blob references. A
// deleted message a consumer had not read yet is counted into that
// consumer's backlog base, under the pull locks of the tenant's consumers
// (taken first, so the positions the delete reads are current; not when
// nothing is due). It returns how many messages it deleted.
func InboxArchivedPrune(ctx context.Context, tx DBTX, tenantID uuid.UUID, before time.Time, maxRows int) (int64, error) {
	due, err := queries().InboxArchivedPruneDue(ctx, tx, &dbsqlc.InboxArchivedPruneDueParams{TenantID: tenantID, Before: before})
	if err != nil || !due {
		return 0, translate(err)
	}
	if err := queries().ConsumersLockTenant(ctx, tx, &dbsqlc.ConsumersLockTenantParams{TenantID: tenantID}); err != nil {
		return 0, translate(err)
	}
	r, err := queries().InboxArchivedPrune(ctx, tx, &dbsqlc.InboxArchivedPruneParams{TenantID: tenantID, Before: before, MaxRows: int32(maxRows)})
	if err != nil {
		return 0, translate(err)
	}
	return r.Deleted, nil
}

// ArchiveLock takes the tenant's archive lock (a session-level advisory
// lock on a connection of its own, so no transaction stays open while the
// archiver writes objects). ok is false when another archiver holds it.
// release unlocks and returns the connection; a lost connection releases
// the lock by itself.
func ArchiveLock(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID) (release func(), ok bool, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, false, translate(err)
	}
	ok, err = queries().ArchiveTryLock(ctx, conn, &dbsqlc.ArchiveTryLockParams{TenantID: tenantID.String()})
	if err != nil || !ok {
		conn.Release()
		return nil, false, translate(err)
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := queries().ArchiveUnlock(uctx, conn, &dbsqlc.ArchiveUnlockParams{TenantID: tenantID.String()}); err != nil {
			// Never hand a connection still holding the lock back to the pool.
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}, true, nil
}
