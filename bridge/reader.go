package bridge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/miohq/mio/db"
)

// Headers of every published event (Nats-Msg-Id is jetstream.MsgIDHeader).
const (
	HeaderTenantID    = "Mio-Tenant-Id"
	HeaderChannelType = "Mio-Channel-Type"
	HeaderEvent       = "Mio-Event"
)

// errMoved: another bridge moved the position (it holds the tenant now).
var errMoved = errors.New("bridge: position moved by another bridge")

// event is one message to publish.
type event struct {
	subject     string
	msgID       string
	channelType string
	data        []byte
	at          time.Time // when it entered the log
	pos         db.StreamPos
}

// runReader publishes one stream of the tenant until ctx is done,
// retrying failed batches with backoff.
func (b *Bridge) runReader(ctx context.Context, tenantID uuid.UUID, stream db.BridgeStream) {
	var wake <-chan struct{}
	if b.cfg.Hub != nil {
		sub := b.cfg.Hub.Subscribe(tenantID)
		defer sub.Close()
		wake = sub.C
	}
	backoff := 50 * time.Millisecond
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-poll.C:
		}
		for ctx.Err() == nil {
			more, err := b.step(ctx, tenantID, stream)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				b.log.Warn("bridge: publish", "tenant_id", tenantID, "stream", string(stream), "err", err, "backoff", backoff.String())
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff + rand.N(backoff)):
				}
				backoff = min(backoff*2, 5*time.Second)
				continue
			}
			backoff = 50 * time.Millisecond
			if !more {
				break
			}
		}
		poll.Reset(b.cfg.PollInterval)
	}
}

// batch is what one read of the log returned.
type batch struct {
	pos    db.LogPos // the position it was read from
	hi     string    // the window read
	events []event
}

// next is the position after the batch, and whether the log may hold more
// at once (a full batch, or a window left open by an earlier run).
func (bt *batch) next(want int) (db.LogPos, bool) {
	var last db.StreamPos
	if n := len(bt.events); n > 0 {
		last = bt.events[n-1].pos
	}
	return bt.pos.Next(bt.hi, last, len(bt.events), want), len(bt.events) == want || bt.pos.Hi != ""
}

// step publishes the stream's log from its stored position until it is
// read to the end or an error stops it, advancing the position after each
// batch once JetStream acknowledged all of it. Reads are one batch ahead:
// the next batch is read while the current one awaits its acks. more
// reports that the next batch may be ready at once.
func (b *Bridge) step(ctx context.Context, tenantID uuid.UUID, stream db.BridgeStream) (more bool, err error) {
	if !b.nc.IsConnected() {
		return false, fmt.Errorf("nats: %s", b.nc.Status()) // the backlog waits in PostgreSQL
	}
	if err := b.CheckStream(ctx); err != nil {
		return false, err
	}
	cur, err := b.readBatch(ctx, tenantID, stream, nil)
	if err != nil {
		return false, err
	}
	for range 64 { // then let the caller look at its context and wake-ups
		if len(cur.events) == 0 && cur.pos.Hi == "" {
			return false, nil // nothing new: the position stays (no write while idle)
		}
		inflight, err := b.send(ctx, stream, tenantID, cur.events)
		if err != nil {
			return false, err
		}
		next, more := cur.next(b.cfg.BatchRows)
		var ahead *batch
		var aheadErr error
		if more {
			ahead, aheadErr = b.readBatch(ctx, tenantID, stream, &next)
		}
		if err := inflight.wait(ctx); err != nil {
			if ctx.Err() == nil && b.nc.IsConnected() {
				b.streamFailed(err)
			}
			return false, err
		}
		if b.afterAcks != nil {
			if err := b.afterAcks(tenantID, stream); err != nil {
				return false, err
			}
		}
		if err := b.advance(ctx, tenantID, stream, cur.pos, next); err != nil {
			return false, err
		}
		if !more {
			return false, nil
		}
		if aheadErr != nil {
			return false, aheadErr
		}
		cur = ahead
	}
	return true, nil
}

// readBatch reads the next events of the stream's log from pos, or, when
// pos is nil, from the stored position, read in the same transaction (a
// wake-up's first read: one transaction fewer on the way from a commit to
// its event).
func (b *Bridge) readBatch(ctx context.Context, tenantID uuid.UUID, stream db.BridgeStream, pos *db.LogPos) (*batch, error) {
	bt := &batch{}
	err := db.InTenantTx(ctx, b.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		if pos != nil {
			bt.pos = *pos
		} else if bt.pos, err = db.BridgeCursorGet(ctx, tx, tenantID, stream); err != nil {
			return fmt.Errorf("read position: %w", err)
		}
		bt.hi = bt.pos.Hi
		if bt.hi == "" {
			if bt.hi, err = db.SnapshotNow(ctx, tx); err != nil {
				return err
			}
		}
		bt.events, err = b.read(ctx, tx, tenantID, stream, bt.pos, bt.hi)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	b.cfg.Metrics.LagEvents.WithLabelValues(string(stream)).Set(float64(len(bt.events)))
	return bt, nil
}

// advance moves the stored position from old to next.
func (b *Bridge) advance(ctx context.Context, tenantID uuid.UUID, stream db.BridgeStream, old, next db.LogPos) error {
	var advanced bool
	err := db.InTenantTx(ctx, b.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		advanced, err = db.BridgeCursorAdvance(ctx, tx, tenantID, stream, old, next)
		return err
	})
	if err != nil {
		return fmt.Errorf("advance: %w", err)
	}
	if !advanced {
		return errMoved
	}
	return nil
}

// inflight is a batch published and awaiting its acks.
type inflight struct {
	b       *Bridge
	dir     string
	events  []event
	futures []jetstream.PubAckFuture
	sentAt  []time.Time
	err     error // a publish that failed at once
	tokens  int64
}

// send publishes events asynchronously once their share of the process's
// pending-ack window is free.
func (b *Bridge) send(ctx context.Context, stream db.BridgeStream, tenantID uuid.UUID, events []event) (*inflight, error) {
	f := &inflight{b: b, dir: string(stream), events: events, tokens: int64(len(events))}
	if f.tokens == 0 {
		return f, nil
	}
	if err := b.pending.Acquire(ctx, f.tokens); err != nil {
		return nil, err
	}
	b.cfg.Metrics.PendingAcks.Add(float64(f.tokens))
	tenant := tenantID.String()
	f.futures = make([]jetstream.PubAckFuture, 0, len(events))
	f.sentAt = make([]time.Time, 0, len(events))
	for _, e := range events {
		msg := &nats.Msg{Subject: e.subject, Data: e.data, Header: nats.Header{
			jetstream.MsgIDHeader: {e.msgID},
			HeaderTenantID:        {tenant},
			HeaderChannelType:     {e.channelType},
			HeaderEvent:           {f.dir},
		}}
		fut, err := b.js.PublishMsgAsync(msg, jetstream.WithExpectStream(b.cfg.Stream))
		if err != nil {
			f.err = fmt.Errorf("publish %s: %w", e.msgID, err)
			break
		}
		f.futures = append(f.futures, fut)
		f.sentAt = append(f.sentAt, time.Now())
	}
	return f, nil
}

// wait waits for every ack of the batch and frees its share of the
// window. An error means some were not acknowledged; all of them are
// republished later (JetStream drops those it already has by Nats-Msg-Id).
func (f *inflight) wait(ctx context.Context) error {
	if f.tokens == 0 {
		return nil
	}
	m := f.b.cfg.Metrics
	defer func() {
		f.b.pending.Release(f.tokens)
		m.PendingAcks.Sub(float64(f.tokens))
	}()
	firstErr := f.err
	for i, fut := range f.futures {
		select {
		case ack := <-fut.Ok():
			m.PublishLatency.Observe(time.Since(f.sentAt[i]).Seconds())
			outcome := "published"
			if ack.Duplicate {
				outcome = "duplicate"
			}
			m.Published.WithLabelValues(f.dir, outcome).Inc()
			m.LagSeconds.WithLabelValues(f.dir).Set(time.Since(f.events[i].at).Seconds())
		case err := <-fut.Err():
			m.Published.WithLabelValues(f.dir, "error").Inc()
			if firstErr == nil {
				firstErr = fmt.Errorf("publish %s: %w", f.events[i].msgID, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if unsent := len(f.events) - len(f.futures); unsent > 0 {
		m.Published.WithLabelValues(f.dir, "error").Add(float64(unsent))
	}
	return firstErr
}
