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

// ArchivePos is the archive's position on a tenant's ready stream: (ready_xid,
// ready_seq). The zero value is before the first message.
type ArchivePos struct {
	Xid uint64
	Seq int64
}

// Less orders positions as the stream does.
func (p ArchivePos) Less(q ArchivePos) bool {
	return p.Xid < q.Xid || p.Xid == q.Xid && p.Seq < q.Seq
}

func (p ArchivePos) String() string { return fmt.Sprintf("%d.%d", p.Xid, p.Seq) }

func (p ArchivePos) xid() string { return strconv.FormatUint(p.Xid, 10) }

func parseXid(s string) (uint64, error) {
	x, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("xid8 %q: %w", s, err)
	}
	return x, nil
}

// ArchiveCursorGet returns the tenant's archive cursor (the zero position
// when the archive never ran for it).
func ArchiveCursorGet(ctx context.Context, tx DBTX, tenantID uuid.UUID) (ArchivePos, error) {
	r, err := queries().ArchiveCursorGet(ctx, tx, &dbsqlc.ArchiveCursorGetParams{TenantID: tenantID})
	if err != nil {
		if err = translate(err); errors.Is(err, ErrNotFound) {
			return ArchivePos{}, nil
		}
		return ArchivePos{}, err
	}
	x, err := parseXid(r.ReadyXid)
	if err != nil {
		return ArchivePos{}, err
	}
	return ArchivePos{Xid: x, Seq: r.ReadySeq}, nil
}

// ArchiveCursorAdvance moves the tenant's cursor from old to next
// (compare-and-set); false means another archiver moved it first.
func ArchiveCursorAdvance(ctx context.Context, tx DBTX, tenantID uuid.UUID, old, next ArchivePos) (bool, error) {
	n, err := queries().ArchiveCursorAdvance(ctx, tx, &dbsqlc.ArchiveCursorAdvanceParams{
		TenantID: tenantID, NewXid: next.xid(), NewSeq: next.Seq, OldXid: old.xid(), OldSeq: old.Seq,
	})
	if err != nil {
		return false, translate(err)
	}
	return n == 1, nil
}

// ArchiveRow is one ready message read for the archive.
type ArchiveRow struct {
	ID          uuid.UUID
	ChannelType string
	Pos         ArchivePos
	// Envelope is the stored mio.v1.Message JSON without raw.
	Envelope   []byte
	Raw        []byte
	ReceivedAt time.Time
	ReadyAt    time.Time
}

// ArchiveScan calls fn, in ready-stream order, for at most maxRows of the
// tenant's ready messages after pos that are below the snapshot horizon
// (so none is ever skipped). fn returns false to stop early. Rows are
// streamed, not collected.
func ArchiveScan(ctx context.Context, tx DBTX, tenantID uuid.UUID, after ArchivePos, maxRows int, fn func(*ArchiveRow) bool) error {
	rows, err := tx.Query(ctx, dbsqlc.ArchiveBatch, tenantID, after.xid(), after.Seq, int32(maxRows))
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

// ArchiveMarkArchived sets archived_at on the tenant's messages ids that
// are not archived yet, returning how many it marked.
func ArchiveMarkArchived(ctx context.Context, tx DBTX, tenantID uuid.UUID, ids []uuid.UUID) (int64, error) {
	n, err := queries().ArchiveMarkArchived(ctx, tx, &dbsqlc.ArchiveMarkArchivedParams{TenantID: tenantID, Ids: ids})
	return n, translate(err)
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
func ArchivePartUpsert(ctx context.Context, tx DBTX, tenantID uuid.UUID, first, last ArchivePos, parts []ArchivePart) error {
	p := &dbsqlc.ArchivePartUpsertParams{
		TenantID: tenantID, FirstXid: first.xid(), FirstSeq: first.Seq, LastXid: last.xid(), LastSeq: last.Seq,
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
// one — with their attachment rows, releasing their blob references. It
// returns how many messages it deleted.
func InboxArchivedPrune(ctx context.Context, tx DBTX, tenantID uuid.UUID, before time.Time, maxRows int) (int64, error) {
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
