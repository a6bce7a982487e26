// Package consume implements durable consumers of the inbox: pull with
// leases and long-polling, ack/nak/term/extend, redelivery after
// ack_wait, dead-lettering after max_deliver, and per-conversation
// ordering. Its correctness rests on two rules (docs/architecture.md):
// a consumer reads the log in snapshot windows (db.LogPos), so no committed
// message is ever skipped and none waits on an unrelated transaction; and
// all pulls of one consumer are serialized by a row lock on the consumer,
// so two pullers never hold the same lease and conversation heads are
// decided consistently. Internal to MIO; not a stable API.
package consume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/notify"
)

// ErrNotFound: no such consumer in the caller's tenant.
var ErrNotFound = errors.New("consumer not found")

// ErrExists: Create found a consumer by that name; it is left as it is.
var ErrExists = errors.New("consumer exists")

// Service runs pulls and settlements.
type Service struct {
	pool    *pgxpool.Pool
	hub     *notify.Hub
	metrics *metrics.Metrics
	log     *slog.Logger
	// MaxPoll bounds how long a waiting pull sleeps between checks when no
	// wake-up arrives (lease expiries, nak delays).
	maxPoll time.Duration
	// materialize caps the pending backlog taken into a conversation-
	// ordered consumer ahead of its leases.
	materialize int
	// ids tags lease-range delivery ids (deliveryid.go).
	ids *deliveryIDs
	// fullPath remembers the consumers whose pulls always take the full
	// path (ordered, or the received stage), so they skip the
	// one-round-trip attempt for a while (pullpath.go).
	fullPath *fullPathHints
}

// Options configure a Service.
type Options struct {
	MaxPoll     time.Duration // default 100ms
	Materialize int           // default 1000
}

// New returns a Service. hub and m may be nil in tests.
func New(pool *pgxpool.Pool, hub *notify.Hub, m *metrics.Metrics, log *slog.Logger, opts Options) *Service {
	if opts.MaxPoll == 0 {
		opts.MaxPoll = 100 * time.Millisecond
	}
	if opts.Materialize == 0 {
		opts.Materialize = 1000
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{pool: pool, hub: hub, metrics: m, log: log, maxPoll: opts.MaxPoll, materialize: opts.Materialize,
		ids: &deliveryIDs{pool: pool}, fullPath: newFullPathHints()}
}

// Delivery is one leased message.
type Delivery struct {
	DeliveryID    uuid.UUID `json:"delivery_id"`
	Seq           int64     `json:"seq"`
	DeliveryCount int       `json:"delivery_count"`
	// Message is the mio.v1.Message JSON, raw payload included.
	Message []byte `json:"-"`
	// Traceparent is the W3C trace context the message was received
	// under (its envelope's trace_id; nil when not traced), for the
	// consumer to continue. It shares Message's bytes.
	Traceparent []byte `json:"-"`
}

// Pull leases up to batch messages of consumer name, waiting up to wait
// for at least one. It returns an empty slice when the wait ends empty.
func (s *Service) Pull(ctx context.Context, tenantID uuid.UUID, name string, batch int, wait time.Duration) ([]Delivery, error) {
	start := time.Now()
	defer func() {
		if s.metrics != nil {
			s.metrics.PullLatency.Observe(time.Since(start).Seconds())
		}
	}()
	var sub *notify.Sub
	if wait > 0 && s.hub != nil {
		// Subscribe before the first look, so a commit between the look and
		// the wait is not missed.
		sub = s.hub.Subscribe(tenantID)
		defer sub.Close()
	}
	deadline := start.Add(wait)
	poll := s.maxPoll
	for {
		ds, err := s.pullOnce(ctx, tenantID, name, batch)
		if err != nil || len(ds) > 0 || wait <= 0 {
			return ds, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return []Delivery{}, nil
		}
		timer := time.NewTimer(min(left, poll))
		var subC <-chan struct{}
		if sub != nil {
			subC = sub.C
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return []Delivery{}, nil
		case <-subC:
			// Look again at once; backing off up to maxPoll when the
			// wake-up was for rows this consumer does not take.
			poll = time.Millisecond
		case <-timer.C:
			poll = min(poll*3/2, s.maxPoll)
		}
		timer.Stop()
	}
}

// pullOnce runs one pull: in the steady state of an unordered consumer one
// round trip (db.PullSteady), else the full path (BeginPull, then pull).
func (s *Service) pullOnce(ctx context.Context, tenantID uuid.UUID, name string, batch int) ([]Delivery, error) {
	out, steady, err := s.pullSteady(ctx, tenantID, name, batch)
	if err == nil && !steady {
		out, err = s.pullFull(ctx, tenantID, name, batch)
	}
	if errors.Is(err, db.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := s.ids.seal(ctx, tenantID, name, out); err != nil {
		return nil, err
	}
	for _, d := range out {
		if d.DeliveryCount > 1 {
			s.count("redelivered", 1)
		} else {
			s.count("delivered", 1)
		}
	}
	return out, nil
}

// pullSteady tries the one-round-trip pull; steady false means the pull
// needs the full path (nothing was written).
func (s *Service) pullSteady(ctx context.Context, tenantID uuid.UUID, name string, batch int) ([]Delivery, bool, error) {
	if s.fullPath.skip(tenantID, name) {
		return nil, false, nil
	}
	taken, steady, ordered, err := db.PullSteady(ctx, s.pool, tenantID, name, batch)
	if err != nil || !steady {
		if ordered {
			s.fullPath.remember(tenantID, name)
		}
		return nil, false, err
	}
	out := make([]Delivery, 0, len(taken))
	for _, t := range taken {
		out = append(out, Delivery{DeliveryID: t.DeliveryID, Seq: t.MessageSeq, DeliveryCount: t.DeliveryCount, Message: envelope.WithRaw(t.Envelope, t.Raw),
			Traceparent: envelope.StoredTraceparent(t.Envelope)})
	}
	return out, true, nil
}

// pullFull runs the full path of a pull: BeginPull, then pull.
func (s *Service) pullFull(ctx context.Context, tenantID uuid.UUID, name string, batch int) ([]Delivery, error) {
	p, err := db.BeginPull(ctx, s.pool, tenantID, name)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return s.pull(ctx, p, batch)
}

// pull runs one pull transaction of the full path to its commit:
// redeliveries and expired ranges first, conversation heads for an
// ordered consumer; new stream rows of an unordered one are taken by the
// statement that also moves the cursor and commits (TakeCommit).
func (s *Service) pull(ctx context.Context, p *db.PullTx, batch int) ([]Delivery, error) {
	c, st, tx := p.Consumer, p.State, p.DB()
	// Expired lease ranges become per-message expired leases (then
	// redelivered or dead-lettered below). An ordered consumer keeps no
	// ranges: any left from when it was unordered become per-message
	// leases so that its head rule sees them.
	ordered := c.Ordering == db.OrderingConvo
	if st.RangesExpired || (ordered && st.Ranges) {
		n, err := db.LeaseMaterialize(ctx, tx, c, ordered)
		if err != nil {
			return nil, err
		}
		st.Due = st.Due || n > 0
	}
	if st.Due {
		dead, err := db.DeliveryExhaust(ctx, tx, c)
		if err != nil {
			return nil, err
		}
		s.count("dead", int(dead))
	}
	room := min(batch, c.MaxAckPending-st.Leased)
	if room <= 0 {
		return nil, p.Commit(ctx)
	}
	var out []Delivery
	if ordered {
		ds, read, err := s.claimOrdered(ctx, tx, c, room)
		if err != nil {
			return nil, err
		}
		if out, err = s.load(ctx, tx, c, ds); err != nil {
			return nil, err
		}
		// Rows read into the pending backlog must not be read again: their
		// position is stored. Otherwise storing is only due now and then
		// (db.PullTx.PositionDue).
		if read > 0 || len(out) > 0 || p.PositionDue {
			if err := db.ConsumerAdvance(ctx, tx, c, c.Pos, len(out) > 0); err != nil {
				return nil, err
			}
		}
		return out, p.Commit(ctx)
	}
	// Unordered: due redeliveries first, then new stream rows leased as
	// one lease range by the statement that also moves the cursor and
	// commits.
	claimed := 0
	if st.Due {
		ds, err := db.DeliveryClaim(ctx, tx, c, room)
		if err != nil {
			return nil, err
		}
		if out, err = s.load(ctx, tx, c, ds); err != nil {
			return nil, err
		}
		claimed = len(ds)
	}
	want := room - claimed
	if want <= 0 {
		if len(out) > 0 || p.PositionDue {
			if err := db.ConsumerAdvance(ctx, tx, c, c.Pos, len(out) > 0); err != nil {
				return nil, err
			}
		}
		return out, p.Commit(ctx)
	}
	taken, err := p.TakeCommit(ctx, want, len(out) > 0)
	if err != nil {
		return nil, err
	}
	for _, t := range taken {
		out = append(out, Delivery{DeliveryID: t.DeliveryID, Seq: t.MessageSeq, DeliveryCount: t.DeliveryCount, Message: envelope.WithRaw(t.Envelope, t.Raw),
			Traceparent: envelope.StoredTraceparent(t.Envelope)})
	}
	return out, nil
}

// claimOrdered tops up the pending backlog from the stream, then leases
// conversation heads. read is how many stream rows it took.
func (s *Service) claimOrdered(ctx context.Context, tx db.DBTX, c *db.Consumer, room int) (ds []db.Delivery, read int, err error) {
	pending, err := db.DeliveryPendingCount(ctx, tx, c)
	if err != nil {
		return nil, 0, err
	}
	if want := s.materialize - pending; want > 0 {
		if read, err = s.advance(ctx, tx, c, want); err != nil {
			return nil, 0, err
		}
	}
	ds, err = db.DeliveryClaim(ctx, tx, c, room)
	return ds, read, err
}

// advance takes up to want new stream rows into the consumer's pending
// backlog, moves its log position and taken count in memory
// (db.LogPos.Next), and returns how many rows it read.
func (s *Service) advance(ctx context.Context, tx db.DBTX, c *db.Consumer, want int) (int, error) {
	rows, hi, err := db.StreamNext(ctx, tx, c, want)
	if err != nil {
		return 0, err
	}
	var last db.StreamPos
	if len(rows) > 0 {
		if _, err = db.DeliveryInsert(ctx, tx, c, rows, false); err != nil {
			return 0, err
		}
		last = rows[len(rows)-1].Pos
	}
	c.Pos = c.Pos.Next(hi, last, len(rows), want)
	c.Taken += int64(len(rows))
	return len(rows), nil
}

// load attaches message bodies to leases, in lease order. A message
// deleted meanwhile (retention) has nothing left to deliver: its lease is
// acknowledged.
func (s *Service) load(ctx context.Context, tx db.DBTX, c *db.Consumer, ds []db.Delivery) ([]Delivery, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		ids[i] = d.MessageID
	}
	msgs, err := db.InboxGetMany(ctx, tx, c.TenantID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Delivery, 0, len(ds))
	var gone []uuid.UUID
	for _, d := range ds {
		m, ok := msgs[d.MessageID]
		if !ok {
			gone = append(gone, d.DeliveryID)
			continue
		}
		out = append(out, Delivery{DeliveryID: d.DeliveryID, Seq: d.MessageSeq, DeliveryCount: d.DeliveryCount, Message: envelope.WithRaw(m.Envelope, m.Raw),
			Traceparent: envelope.StoredTraceparent(m.Envelope)})
	}
	if len(gone) > 0 {
		if _, err := db.DeliveryAck(ctx, tx, c.TenantID, c.Name, gone); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SettleResult reports one delivery id of a settle call.
type SettleResult struct {
	DeliveryID uuid.UUID `json:"delivery_id"`
	OK         bool      `json:"ok"`
	Error      string    `json:"error,omitempty"`
}

// Settle actions.
const (
	ActionAck    = "ack"
	ActionNak    = "nak"
	ActionTerm   = "term"
	ActionExtend = "extend"
)

// SettleOptions carry the action's argument.
type SettleOptions struct {
	Delay  time.Duration // nak
	Reason string        // term
}

// settle applies action to delivery ids in their database form (Settle).
// Unknown or expired-and-redelivered ids are reported per id, not as an
// error.
func (s *Service) settle(ctx context.Context, tenantID uuid.UUID, name, action string, ids []uuid.UUID, opts SettleOptions) ([]SettleResult, error) {
	var matched []uuid.UUID
	if action == ActionAck {
		// The usual case, one round trip: whole batches of lease ranges
		// and per-message deliveries (redeliveries, members moved out).
		var err error
		if matched, err = db.AckAll(ctx, s.pool, tenantID, name, ids); err != nil {
			return nil, err
		}
		if len(matched) == 0 {
			if err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
				_, err := db.ConsumerGet(ctx, tx, tenantID, name)
				return err
			}); err != nil {
				if errors.Is(err, db.ErrNotFound) {
					return nil, ErrNotFound
				}
				return nil, err
			}
		}
		return s.settled(tenantID, action, ids, matched), nil
	}
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		c, err := db.ConsumerGet(ctx, tx, tenantID, name)
		if errors.Is(err, db.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		// A nak, term or extend applies to one message: lease-range members
		// among ids move out into per-message leases first.
		if _, err := db.LeaseMaterializeMembers(ctx, tx, c, ids); err != nil {
			return err
		}
		switch action {
		case ActionNak:
			matched, err = db.DeliveryNak(ctx, tx, tenantID, name, ids, opts.Delay)
		case ActionTerm:
			matched, err = db.DeliveryTerm(ctx, tx, tenantID, name, ids, opts.Reason)
		case ActionExtend:
			matched, err = db.DeliveryExtend(ctx, tx, c, ids)
		default:
			return fmt.Errorf("unknown settle action %q", action)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.settled(tenantID, action, ids, matched), nil
}

// settled reports per id whether it matched, and wakes pullers when a
// settlement can unblock them.
func (s *Service) settled(tenantID uuid.UUID, action string, ids, matched []uuid.UUID) []SettleResult {
	ok := make(map[uuid.UUID]bool, len(matched))
	for _, id := range matched {
		ok[id] = true
	}
	out := make([]SettleResult, len(ids))
	for i, id := range ids {
		out[i] = SettleResult{DeliveryID: id, OK: ok[id]}
		if !ok[id] {
			out[i].Error = "unknown or expired delivery"
		}
	}
	s.count(action+"ed", len(matched))
	if len(matched) > 0 && action != ActionExtend && s.hub != nil {
		// An ack, nak or term can unblock a conversation or free
		// max_ack_pending room: wake waiting pullers.
		s.hub.Publish(tenantID)
	}
	return out
}

func (s *Service) count(outcome string, n int) {
	if s.metrics != nil && n > 0 {
		s.metrics.ConsumerDeliveries.WithLabelValues(outcome).Add(float64(n))
	}
}
