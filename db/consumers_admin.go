package db

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Operators' consumer changes (package admin). Kept apart from
// consumers.go, the pull path's queries.

// consumerSeekSQL moves a consumer's log position to the first message of
// its stage received at or after $3: every transaction below X, the
// oldest ready (or insert) xid of the messages with an id from $4 (inbox
// ids are UUIDv7, so the primary key finds them by time; the first 10000
// are looked at), counts as read; X and later are unread. Transactions
// still running below X stay unread (they are in the snapshot's xip
// list), so no commit in flight is skipped. No message after $3: the
// current end of the stream.
const consumerSeekSQL = `
WITH s AS (SELECT pg_current_snapshot() AS snap),
c AS (SELECT stage FROM mio.consumers WHERE tenant_id = $1 AND name = $2 FOR UPDATE),
m AS (
    SELECT min(CASE WHEN c.stage = 'ready' THEN i.ready_xid ELSE i.xid END) AS x
    FROM c, (SELECT ready_xid, xid FROM mio.inbox WHERE tenant_id = $1 AND id >= $4 AND received_at >= $3
             ORDER BY id LIMIT 10000) AS i
),
p AS (
    SELECT coalesce(m.x, pg_snapshot_xmax(s.snap)) AS x, s.snap FROM s, m
),
lo AS (
    SELECT p.x, CASE WHEN p.x <= pg_snapshot_xmin(p.snap) THEN p.x::text || ':' || p.x::text || ':'
               ELSE pg_snapshot_xmin(p.snap)::text || ':' || p.x::text || ':' ||
                    coalesce((SELECT string_agg(t::text, ',' ORDER BY t) FROM pg_snapshot_xip(p.snap) AS t WHERE t < p.x), '')
           END AS lo
    FROM p
)
INSERT INTO mio.consumer_positions (tenant_id, consumer_name, gen, log_lo, log_hi, cursor_xid, cursor_seq, swept, last_delivered_at, taken)
SELECT $1, $2, g.gen, lo.lo::pg_snapshot, NULL, '0', 0, k.swept, k.last_delivered_at, k.taken
FROM lo, c, mio.consumer_log_gen AS g, mio.consumer_state AS k
WHERE k.tenant_id = $1 AND k.name = $2
RETURNING log_lo::text`

// ConsumerSeek moves a consumer to the messages received at or after t
// (appending its new position, as a pull does):
// those are delivered (again), earlier ones are skipped. Its pending and
// leased deliveries are dropped (their acks then match nothing); dead
// ones stay dead letters; its backlog counters are rebased on the new
// position (ConsumerRebase). Returns the new position.
func ConsumerSeek(ctx context.Context, tx DBTX, tenantID uuid.UUID, name string, t time.Time) (string, error) {
	var lo string
	if err := tx.QueryRow(ctx, consumerSeekSQL, tenantID, name, t, IDFloor(t)).Scan(&lo); err != nil {
		return "", translate(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM mio.consumer_leases WHERE tenant_id = $1 AND consumer_name = $2`, tenantID, name); err != nil {
		return "", translate(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM mio.consumer_deliveries WHERE tenant_id = $1 AND consumer_name = $2 AND state <> 'dead'`,
		tenantID, name); err != nil {
		return "", translate(err)
	}
	if err := ConsumerRebase(ctx, tx, tenantID, name); err != nil {
		return "", err
	}
	return lo, nil
}
