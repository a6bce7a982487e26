package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// WorkerHeartbeat refreshes the heartbeat row of River client clientID to
// expire ttl from now, by the database's clock, and returns since when its refreshes have run unbroken.
func WorkerHeartbeat(ctx context.Context, db DBTX, clientID string, ttl time.Duration) (time.Time, error) {
	since, err := queries().WorkerHeartbeat(ctx, db, &dbsqlc.WorkerHeartbeatParams{ClientID: clientID, TtlSeconds: ttl.Seconds()})
	return since, translate(err)
}

// WorkerHeartbeatDelete removes the heartbeat row of a worker that stopped
// cleanly.
func WorkerHeartbeatDelete(ctx context.Context, db DBTX, clientID string) error {
	return translate(queries().WorkerHeartbeatDelete(ctx, db, &dbsqlc.WorkerHeartbeatDeleteParams{ClientID: clientID}))
}

// ReclaimedJob is a River job taken back from a dead worker.
type ReclaimedJob struct {
	ID   int64
	Kind string
	// TenantID is the tenant of a dispatch job (uuid.Nil for other kinds).
	TenantID uuid.UUID
	// DeadClient is the River client id of the worker it ran on.
	DeadClient string
}

// WorkerReclaim, run by the live worker clientID, makes up to max running
// jobs of workers whose heartbeat expired available again (see
// mio.worker_reclaim) and returns them. Nothing while clientID itself has
// not been alive for ttl.
func WorkerReclaim(ctx context.Context, db DBTX, clientID string, ttl time.Duration, max int) ([]ReclaimedJob, error) {
	rows, err := queries().WorkerReclaim(ctx, db, &dbsqlc.WorkerReclaimParams{ClientID: clientID, TtlSeconds: ttl.Seconds(), MaxJobs: int32(max)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]ReclaimedJob, len(rows))
	for i, r := range rows {
		out[i] = ReclaimedJob{ID: r.JobID, Kind: r.Kind, TenantID: r.TenantID, DeadClient: r.DeadClient}
	}
	return out, nil
}

// ScheduledJob is a due River job a worker made available while River
// had no live leader.
type ScheduledJob struct {
	ID    int64
	Kind  string
	Queue string
}

// WorkerSchedule, run by the live worker clientID, makes up to max due
// scheduled or retryable River jobs available when River has no live
// leader to do it (see mio.worker_schedule) and returns them. Nothing
// while a leader with a live heartbeat holds office, or while clientID
// itself has not been alive for ttl.
func WorkerSchedule(ctx context.Context, db DBTX, clientID string, ttl time.Duration, max int) ([]ScheduledJob, error) {
	rows, err := queries().WorkerSchedule(ctx, db, &dbsqlc.WorkerScheduleParams{ClientID: clientID, TtlSeconds: ttl.Seconds(), MaxJobs: int32(max)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]ScheduledJob, len(rows))
	for i, r := range rows {
		out[i] = ScheduledJob{ID: r.JobID, Kind: r.Kind, Queue: r.Queue}
	}
	return out, nil
}

// HeldSend is a sending row held by a reclaimed dispatch job.
type HeldSend struct {
	ID, AccountID uuid.UUID
	// Own: the row named in the job's arguments, which the job's retry
	// resumes. Other rows (extras, the next messages of lanes the job
	// drained) need a dispatch job of their own.
	Own bool
}

// OutboxLeasesEnd ends the leases of the tenant's sending rows held by the
// dispatch jobs jobIDs, reclaimed from a dead worker, and returns them:
// their attempts resume at once, with the same attempt number and
// idempotency key. Call it in a tenant transaction.
func OutboxLeasesEnd(ctx context.Context, tx DBTX, tenantID uuid.UUID, jobIDs []int64) ([]HeldSend, error) {
	rows, err := queries().OutboxLeasesEnd(ctx, tx, &dbsqlc.OutboxLeasesEndParams{TenantID: tenantID, JobIds: jobIDs})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]HeldSend, len(rows))
	for i, r := range rows {
		out[i] = HeldSend{ID: r.ID, AccountID: r.AccountID, Own: r.Own}
	}
	return out, nil
}
