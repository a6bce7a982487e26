package db

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// QueueHealth is one row of mio.queue_health: a consumer (Kind
// "consumer") or a River queue (Kind "river_queue").
type QueueHealth struct {
	Kind string `json:"kind"`
	// Consumer rows.
	TenantID         *uuid.UUID `json:"tenant_id,omitempty"`
	Consumer         *string    `json:"consumer,omitempty"`
	Pending          *int64     `json:"pending,omitempty"`
	AckPending       *int64     `json:"ack_pending,omitempty"`
	Redelivered      *int64     `json:"redelivered,omitempty"`
	Dead             *int64     `json:"dead,omitempty"`
	OldestPendingAge *float64   `json:"oldest_pending_age_seconds,omitempty"`
	LastDeliveredAt  *time.Time `json:"last_delivered_at,omitempty"`
	// River queue rows.
	Queue              *string  `json:"queue,omitempty"`
	Available          *int64   `json:"available,omitempty"`
	Running            *int64   `json:"running,omitempty"`
	Retryable          *int64   `json:"retryable,omitempty"`
	OldestAvailableAge *float64 `json:"oldest_available_age_seconds,omitempty"`
}

// queueHealthSQL reads the view by hand: sqlc cannot type it (River's
// tables are not in the schema it reads).
const queueHealthSQL = `SELECT kind, tenant_id, consumer, pending, ack_pending, redelivered, dead,
       extract(epoch FROM oldest_pending_age)::float8, last_delivered_at,
       queue, available, running, retryable, extract(epoch FROM oldest_available_age)::float8
FROM mio.queue_health
ORDER BY kind, tenant_id, consumer, queue`

// QueueHealthList returns mio.queue_health as tx sees it: under a
// tenant, its consumers and every River queue.
func QueueHealthList(ctx context.Context, tx DBTX) ([]*QueueHealth, error) {
	rows, err := tx.Query(ctx, queueHealthSQL)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*QueueHealth, error) {
		var h QueueHealth
		err := r.Scan(&h.Kind, &h.TenantID, &h.Consumer, &h.Pending, &h.AckPending, &h.Redelivered, &h.Dead,
			&h.OldestPendingAge, &h.LastDeliveredAt, &h.Queue, &h.Available, &h.Running, &h.Retryable, &h.OldestAvailableAge)
		return &h, err
	})
	return out, translate(err)
}

// riverQueueDepthSQL reads River's queues alone. It is what the queue
// gauges need: planning mio.queue_health as a whole, consumers and all,
// costs the server tens of milliseconds of CPU per call.
const riverQueueDepthSQL = `SELECT queue, available, running, retryable, extract(epoch FROM oldest_available_age)::float8
FROM mio.river_queue_depth()
ORDER BY queue`

// RiverQueueDepthList returns the river_queue rows of mio.queue_health.
func RiverQueueDepthList(ctx context.Context, tx DBTX) ([]*QueueHealth, error) {
	rows, err := tx.Query(ctx, riverQueueDepthSQL)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*QueueHealth, error) {
		h := QueueHealth{Kind: "river_queue"}
		err := r.Scan(&h.Queue, &h.Available, &h.Running, &h.Retryable, &h.OldestAvailableAge)
		return &h, err
	})
	return out, translate(err)
}
