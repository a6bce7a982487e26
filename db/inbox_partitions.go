package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// The inbox is range-partitioned by day on its UUIDv7 id (mio.inbox in
// the baseline): partition inbox_pYYYYMMDD holds the messages accepted that UTC
// day, inbox_default every id outside the days created. Days are created
// ahead (InboxPartitionsEnsure) and retired whole (InboxPartitionRetire).

// ErrInboxBusy: creating or dropping a partition needs a brief ACCESS
// EXCLUSIVE lock on mio.inbox and a query held it past the function's
// lock timeout; the next run tries again.
var ErrInboxBusy = errors.New("inbox partitions: mio.inbox busy")

// InboxPartition is one day partition of the inbox.
type InboxPartition struct {
	Name          string
	EstimatedRows int64 // pg_class.reltuples: 0 until analyzed
}

// InboxRetired reports a day partition dropped by InboxPartitionRetire.
type InboxRetired struct {
	Name          string
	Messages      int64 // estimated (pg_class.reltuples)
	BlobsReleased int64
}

// InboxPartitionsEnsure creates the missing day partitions from the UTC
// day of from to that of to, both included, and returns how many it
// created.
func InboxPartitionsEnsure(ctx context.Context, tx DBTX, from, to time.Time) (int, error) {
	n, err := queries().InboxPartitionsEnsure(ctx, tx, &dbsqlc.InboxPartitionsEnsureParams{
		FromDay: utcDay(from), ToDay: utcDay(to)})
	if err != nil {
		return 0, partitionErr(err)
	}
	return int(n), nil
}

// InboxPartitionRetire detaches and drops the oldest day partition that
// ended by before if every message in it is ready and read by its tenant's
// archive, deleting its messages' attachment rows and releasing their blob
// references first. ok is false when no day is due or the oldest due day
// still holds unarchived messages.
func InboxPartitionRetire(ctx context.Context, tx DBTX, before time.Time) (r InboxRetired, ok bool, err error) {
	rows, err := queries().InboxPartitionRetire(ctx, tx, &dbsqlc.InboxPartitionRetireParams{Before: before})
	if err != nil {
		return r, false, partitionErr(err)
	}
	if len(rows) == 0 {
		return r, false, nil
	}
	return InboxRetired{Name: rows[0].PartitionName, Messages: rows[0].Messages, BlobsReleased: rows[0].BlobsReleased}, true, nil
}

// inboxPartitionListSQL reads the catalog (outside sqlc's).
const inboxPartitionListSQL = `
SELECT c.relname::text, greatest(c.reltuples, 0)::bigint
FROM pg_inherits AS h JOIN pg_class AS c ON c.oid = h.inhrelid
WHERE h.inhparent = 'mio.inbox'::regclass AND c.relname ~ '^inbox_p[0-9]{8}$'
ORDER BY c.relname`

// InboxPartitionList returns the inbox's day partitions, oldest first.
func InboxPartitionList(ctx context.Context, tx DBTX) ([]InboxPartition, error) {
	rows, err := tx.Query(ctx, inboxPartitionListSQL)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []InboxPartition
	for rows.Next() {
		var p InboxPartition
		if err := rows.Scan(&p.Name, &p.EstimatedRows); err != nil {
			return nil, translate(err)
		}
		out = append(out, p)
	}
	return out, translate(rows.Err())
}

// InboxPartitionName is the name of the day partition holding ids made at t.
func InboxPartitionName(t time.Time) string {
	return "inbox_p" + t.UTC().Format("20060102")
}

func utcDay(t time.Time) pgtype.Date {
	u := t.UTC()
	return pgtype.Date{Time: time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC), Valid: true}
}

func partitionErr(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
		return fmt.Errorf("%w: %s", ErrInboxBusy, pgErr.Message)
	}
	return translate(err)
}
