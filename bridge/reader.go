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

// step publishes the next batch of the stream's log and advances its
// position once JetStream acknowledged all of it. more reports that the
// next batch may be ready at once.
func (b *Bridge) step(ctx context.Context, tenantID uuid.UUID, stream db.BridgeStream) (more bool, err error) {
	if !b.nc.IsConnected() {
		return false, fmt.Errorf("nats: %s", b.nc.Status()) // the backlog waits in PostgreSQL
	}
	if err := b.CheckStream(ctx); err != nil {
		return false, err
	}
	var (
		pos    db.LogPos
		hi     string
		events []event
	)
	err = db.InTenantTx(ctx, b.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		if pos, err = db.BridgeCursorGet(ctx, tx, tenantID, stream); err != nil {
			return err
		}
		if hi = pos.Hi; hi == "" {
			if hi, err = db.SnapshotNow(ctx, tx); err != nil {
				return err
			}
		}
		events, err = b.read(ctx, tx, tenantID, stream, pos, hi)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("read log: %w", err)
	}
	b.cfg.Metrics.LagEvents.WithLabelValues(string(stream)).Set(float64(len(events)))
	wasOpen := pos.Hi != ""
	if len(events) == 0 && !wasOpen {
		return false, nil // nothing new: the position stays (no write while idle)
	}
	if err := b.publish(ctx, tenantID, stream, events); err != nil {
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
	var last db.StreamPos
	if len(events) > 0 {
		last = events[len(events)-1].pos
	}
	next := pos.Next(hi, last, len(events), b.cfg.MaxPending)
	var advanced bool
	err = db.InTenantTx(ctx, b.pool, tenantID, func(tx pgx.Tx) error {
		var err error
		advanced, err = db.BridgeCursorAdvance(ctx, tx, tenantID, stream, pos, next)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("advance: %w", err)
	}
	if !advanced {
		return false, errMoved
	}
	return len(events) == b.cfg.MaxPending || wasOpen, nil
}

// publish sends events asynchronously, at most MaxPending awaiting their
// acks across the process, and waits for every ack. An error means some
// were not acknowledged; all of them are republished later (JetStream
// drops those it already has by Nats-Msg-Id).
func (b *Bridge) publish(ctx context.Context, tenantID uuid.UUID, stream db.BridgeStream, events []event) error {
	if len(events) == 0 {
		return nil
	}
	n := int64(len(events))
	if err := b.pending.Acquire(ctx, n); err != nil {
		return err
	}
	defer b.pending.Release(n)
	m := b.cfg.Metrics
	m.PendingAcks.Add(float64(n))
	defer m.PendingAcks.Sub(float64(n))

	tenant := tenantID.String()
	futures := make([]jetstream.PubAckFuture, 0, len(events))
	sentAt := make([]time.Time, 0, len(events))
	var firstErr error
	for _, e := range events {
		msg := &nats.Msg{Subject: e.subject, Data: e.data, Header: nats.Header{
			jetstream.MsgIDHeader: {e.msgID},
			HeaderTenantID:        {tenant},
			HeaderChannelType:     {e.channelType},
			HeaderEvent:           {string(stream)},
		}}
		f, err := b.js.PublishMsgAsync(msg, jetstream.WithExpectStream(b.cfg.Stream))
		if err != nil {
			firstErr = fmt.Errorf("publish %s: %w", e.msgID, err)
			break
		}
		futures = append(futures, f)
		sentAt = append(sentAt, time.Now())
	}
	dir := string(stream)
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			m.PublishLatency.Observe(time.Since(sentAt[i]).Seconds())
			outcome := "published"
			if ack.Duplicate {
				outcome = "duplicate"
			}
			m.Published.WithLabelValues(dir, outcome).Inc()
			m.LagSeconds.WithLabelValues(dir).Set(time.Since(events[i].at).Seconds())
		case err := <-f.Err():
			m.Published.WithLabelValues(dir, "error").Inc()
			if firstErr == nil {
				firstErr = fmt.Errorf("publish %s: %w", events[i].msgID, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if firstErr != nil && len(futures) < len(events) {
		m.Published.WithLabelValues(dir, "error").Add(float64(len(events) - len(futures)))
	}
	return firstErr
}
