package db

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// PullTx is one pull of a consumer: an explicit transaction of its tenant
// on one connection, holding the consumer's row lock (pulls of a consumer
// are serialized) from BeginPull until Commit, TakeCommit or Close: the
// full path of a pull (redeliveries, expired ranges, ordered consumers,
// the received stage; the steady state is PullSteady). BeginPull
// pipelines BEGIN, the settings, the lock and the pull state; TakeCommit
// pipelines the take (which also moves the cursor) and COMMIT. Anything
// else a pull needs runs on DB() in between.
type PullTx struct {
	conn     *pgxpool.Conn
	open     bool
	Consumer *Consumer
	State    *PullState
	// PositionDue: the pull appends its position even when it reads no
	// row (its sweep moved, or the stored position is over a second old).
	PositionDue bool
}

// BeginPull starts a pull of consumer name: BEGIN, the tenant setting
// (bitmap scans off: a bitmap scan of the stream would sort the whole
// backlog to return one batch), the consumer's row lock, then (statements
// of their own, so their snapshots see what the previous lock holder
// committed) the consumer with its position and its pull state, in ONE
// round trip. The pull state is a statement of its
// own after the lock, so the snapshot it reads as the window's hi (when
// no window is open) is taken once the lock is granted. ErrNotFound when there is no such
// consumer. Close must be called.
func BeginPull(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, name string) (*PullTx, error) {
	if tenantID == uuid.Nil {
		return nil, ErrNoTenant
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, translate(err)
	}
	p := &PullTx{conn: conn, open: true}
	var (
		c  dbsqlc.ConsumerGetRow
		st pullState
	)
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(pullSettings, tenantID.String())
	// Range ids never repeat after a server restart.
	b.Queue("SELECT mio.consumer_ids_guard()")
	var locked bool
	b.Queue(dbsqlc.ConsumerLock, tenantID, name).QueryRow(func(row pgx.Row) error { return row.Scan(&locked) })
	b.Queue(dbsqlc.ConsumerGet, tenantID, name).QueryRow(func(row pgx.Row) error {
		return row.Scan(&c.TenantID, &c.Name, &c.FilterChannelTypes, &c.FilterAccountIds, &c.FilterConversationIds,
			&c.DeliverPolicy, &c.StartTime, &c.AckWaitMs, &c.MaxDeliver, &c.MaxAckPending, &c.Ordering, &c.Stage,
			&c.CursorXid, &c.CursorSeq, &c.LogLo, &c.LogHi, &c.LastDeliveredAt, &c.CreatedAt, &c.UpdatedAt,
			&c.Swept, &c.PositionWrittenAt, &c.Taken)
	})
	b.Queue(pullStateSQL, tenantID, name).QueryRow(func(row pgx.Row) error {
		return row.Scan(&st.Leased, &st.Due, &st.Ranges, &st.RangesExpired, &st.Swept, &st.Hi)
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		p.Close()
		return nil, translate(err)
	}
	p.Consumer = consumerFrom(c)
	p.State = &PullState{Leased: int(st.Leased), Due: st.Due, Ranges: st.Ranges, RangesExpired: st.RangesExpired, Hi: st.Hi}
	p.PositionDue = p.Consumer.positionDue(st.Swept, time.Now())
	p.Consumer.Swept = st.Swept
	return p, nil
}

// PullSteady is the steady-state pull of consumer name as ONE statement in
// an implicit transaction: mio.consumer_pull_steady sets the tenant and the
// pull's settings, runs the id guard, takes the consumer's row lock, reads,
// takes and appends the position; the commit follows the statement. The lock
// that serializes a consumer's pulls is held only while PostgreSQL runs it,
// never across a round trip to this process. For an unordered consumer of
// the ready stage with nothing due again and no lease range expired it
// leases up to max new rows as one range (steady true). Otherwise it writes
// nothing and steady is false: the pull takes the full path (BeginPull);
// ordered says it always will (an ordered consumer or the received stage).
// ErrNotFound when there is no such consumer.
func PullSteady(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, name string, max int) (out []TakenDelivery, steady, ordered bool, err error) {
	if tenantID == uuid.Nil {
		return nil, false, false, ErrNoTenant
	}
	rows, err := pool.Query(ctx, pullSteadySQL, tenantID, name, int32(max))
	if err != nil {
		return nil, false, false, translate(err)
	}
	defer rows.Close()
	status := ""
	for rows.Next() {
		var (
			r       dbsqlc.LeaseTakeReceivedRow // the ready take's columns are the same
			id      pgtype.UUID
			leaseID pgtype.Int8
		)
		if err := rows.Scan(&status, &id, &r.Xid, &r.Seq, &r.MessageSeq, &r.Envelope, &r.Raw, &leaseID); err != nil {
			return nil, false, false, translate(err)
		}
		if status != "taken" {
			continue
		}
		out = append(out, TakenDelivery{Delivery: Delivery{MessageID: id.Bytes, DeliveryID: LeaseDeliveryID(leaseID.Int64, len(out)),
			DeliveryCount: 1, MessageSeq: r.MessageSeq.Int64}, Envelope: r.Envelope, Raw: r.Raw})
	}
	if err := rows.Err(); err != nil {
		return nil, false, false, translate(err)
	}
	switch status {
	case "not_found":
		return nil, false, false, ErrNotFound
	case "ordered":
		return nil, false, true, nil
	case "due":
		return nil, false, false, nil
	}
	return out, true, false, nil
}

// DB runs further statements of the pull's transaction.
func (p *PullTx) DB() DBTX { return p.conn }

// TakeCommit reads up to max rows of the consumer's log window (its Lo to
// the pull state's Hi) after its position, leases them as one lease range,
// appends the new position and sweep (stamping the last delivery, and the
// consumer's taken count plus the rows read) when
// rows were read, delivered, or PositionDue, and commits: one round trip. It returns the leases in window
// order, with their bodies.
func (p *PullTx) TakeCommit(ctx context.Context, max int, delivered bool) ([]TakenDelivery, error) {
	c := p.Consumer
	query := takeReadySQL
	if c.Stage == StageReceived {
		query = dbsqlc.LeaseTakeReceived
	}
	var out []TakenDelivery
	b := &pgx.Batch{}
	b.Queue(query, c.TenantID, c.Pos.Lo, p.State.Hi, c.Pos.After.xid8(),
		c.Pos.After.Seq, nonNil(c.FilterChannelTypes), nonNilUUIDs(c.FilterAccountIDs), nonNil(c.FilterConversationIDs),
		c.StartTime, int32(max), c.Name, interval(c.AckWait), c.Swept, delivered, c.LastDeliveredAt, c.Taken, p.PositionDue).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				r  dbsqlc.LeaseTakeReceivedRow // the ready take's columns are the same
				id int
			)
			if err := rows.Scan(&r.ID, &r.Xid, &r.Seq, &r.MessageSeq, &r.Envelope, &r.Raw, &r.LeaseID); err != nil {
				return err
			}
			id = len(out)
			out = append(out, TakenDelivery{Delivery: Delivery{MessageID: r.ID, DeliveryID: LeaseDeliveryID(r.LeaseID, id),
				DeliveryCount: 1, MessageSeq: r.MessageSeq.Int64}, Envelope: r.Envelope, Raw: r.Raw})
		}
		return rows.Err()
	})
	b.Queue("COMMIT")
	if err := p.conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, translate(err)
	}
	p.open = false
	return out, nil
}

// Commit commits the pull.
func (p *PullTx) Commit(ctx context.Context) error {
	if _, err := p.conn.Exec(ctx, "COMMIT"); err != nil {
		return translate(err)
	}
	p.open = false
	return nil
}

// Close rolls back what was not committed and releases the connection.
func (p *PullTx) Close() {
	if p.conn == nil {
		return
	}
	if p.open || p.conn.Conn().PgConn().TxStatus() != 'I' {
		abandon(p.conn)
	}
	p.conn.Release()
	p.conn = nil
}

// TakenDelivery is a message newly leased from the stream, body included.
type TakenDelivery struct {
	Delivery
	Envelope []byte
	Raw      []byte
}

// AckAll acknowledges delivery ids of a consumer in ONE statement
// (mio.consumer_ack, in an implicit transaction: the tenant,
// the ranges' settle locks, lease-range members (an appended settle row per
// range), per-message deliveries) and returns the ids that matched an
// outstanding delivery. A lease-range member is either outstanding in its
// range or has a per-message row (moved out by a nak, term, extend or
// expiry), never both, so trying every id both ways acknowledges each at
// most once.
func AckAll(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, consumer string, ids []uuid.UUID) ([]uuid.UUID, error) {
	if tenantID == uuid.Nil {
		return nil, ErrNoTenant
	}
	leases, idxs, _ := splitLeaseIDs(ids)
	if leases == nil {
		leases, idxs = []int64{}, []int32{}
	}
	rows, err := pool.Query(ctx, ackSQL, tenantID, consumer, leases, idxs, nonNilUUIDs(ids))
	if err != nil {
		return nil, fmt.Errorf("ack: %w", translate(err))
	}
	defer rows.Close()
	var matched []uuid.UUID
	for rows.Next() {
		var (
			leaseID pgtype.Int8
			idx     pgtype.Int4
			id      pgtype.UUID
		)
		if err := rows.Scan(&leaseID, &idx, &id); err != nil {
			return nil, fmt.Errorf("ack: %w", translate(err))
		}
		if id.Valid {
			matched = append(matched, id.Bytes)
		} else {
			matched = append(matched, LeaseDeliveryID(leaseID.Int64, int(idx.Int32)))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ack: %w", translate(err))
	}
	return matched, nil
}

// ackSQL: mio.consumer_ack for consumer $2 of tenant
// $1: lease-range members ($3[k], $4[k]) and per-message deliveries $5.
const ackSQL = `SELECT a.lease_id, a.idx, a.delivery_id FROM mio.consumer_ack($1::uuid, $2::text, $3::bigint[], $4::int[], $5::uuid[]) AS a`

// Generic plans (plan_cache_mode = force_generic_plan in pullSettings and
// mio.consumer_pull_steady) make the pull's statements use their generic
// plans from the first execution on; mio.consumer_ack reads its values
// through sub-selects no plan can see, so plpgsql keeps its generic plans
// from a session's sixth ack on with no setting (TestAckKeepsGenericPlans).
// Their statements read the consumers' partitioned, row-level-secured
// tables, whose planning costs ~2 ms a statement (measured: LeaseAck
// planned in 2.2 ms, ran in 0.5 ms); left to choose with the values in
// sight, PostgreSQL kept planning custom plans for them, and the acks'
// planning took the CPU the serialized pulls needed. Their generic plans
// are the good ones (index scans by the consumer's key: every statement
// names the consumer; mio.consumer_pull_state, whose sweep bound a
// generic plan cannot see, turns sequential scans off).

// pullSettings: a pull transaction's tenant ($1) and settings in one
// statement — bitmap scans off (a bitmap scan of the stream would sort the
// whole backlog to return one batch), asynchronous commit (everything a
// pull writes can be lost without losing a message), generic plans.
const pullSettings = "SELECT set_config('app.current_tenant_id', $1, true), set_config('enable_bitmapscan', 'off', true), " +
	"set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)"

// The pull's state and take, shared by both paths of a pull
// (mio.consumer_pull_state and mio.consumer_take_ready: plpgsql functions,
// because the one-round-trip pull runs them inside
// mio.consumer_pull_steady; sqlc cannot type a plpgsql function's table,
// hence the statements here).
const (
	// pullStateSQL: live leases (per-message and lease-range members,
	// for max_ack_pending), whether anything is due again, lease ranges
	// outstanding and expired, the sweep, and the window's hi — the open
	// window's, else this statement's snapshot, taken once the consumer's
	// row lock is granted.
	pullStateSQL = `SELECT s.leased, s.due, s.ranges, s.ranges_expired, s.swept, s.hi
FROM mio.consumer_pull_state($1::uuid, $2::text) AS s`
	// takeReadySQL: ordering none, ready stage — read the next rows of
	// the window ($2, $3] after the position ($4, $5) under the filter,
	// lease them as one range and append the new position with $16 taken
	// plus the rows read (when rows were read, $14 delivered, or $17
	// persist). Its parameters are dbsqlc.LeaseTakeReceived's.
	takeReadySQL = `SELECT t.id, t.xid, t.seq, t.message_seq, t.envelope, t.raw, t.lease_id
FROM mio.consumer_take_ready($1::uuid, ($2::text)::pg_snapshot, ($3::text)::pg_snapshot, $4::xid8, $5::bigint,
    $6::text[], $7::uuid[], $8::text[], $9::timestamptz, $10::int, $11::text, $12::interval, $13::bigint,
    $14::bool, $15::timestamptz, $17::bool, $16::bigint) AS t`
	// pullSteadySQL: the steady-state pull of consumer $2, up to $3 rows
	// (see PullSteady).
	pullSteadySQL = `SELECT s.status, s.id, s.xid, s.seq, s.message_seq, s.envelope, s.raw, s.lease_id
FROM mio.consumer_pull_steady($1::uuid, $2::text, $3::int) AS s`
)

type pullState struct {
	Leased        int64
	Due           bool
	Ranges        bool
	RangesExpired bool
	Swept         int64
	Hi            string
}

// abandon ends whatever transaction a failed pipelined batch left open on
// conn (an aborted one, or one the batch had not finished): nothing of it
// survives. When even the ROLLBACK fails, the connection's state is
// unknown, so it is closed rather than given back to the pool.
func abandon(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		_ = conn.Conn().Close(ctx)
	}
}
