// Package jobs holds the arguments of the River jobs that are inserted
// outside the workers that run them: a dispatch job with every outbox row
// (package outbox, the outbox sweeper), an enrich job with every inbound
// message that carries attachments (package ingest). Enqueuers import
// this package, not workers, so the send and ingest paths do not depend
// on the job implementations.
//
// A job's Kind and its JSON fields are stored in River's table with every
// job: changing either strands the jobs already queued. TestKinds pins
// them.
//
// Internal to MIO; not a stable API.
package jobs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// Queues of the jobs in this package.
const (
	// QueueDispatch is the queue of outbound dispatch jobs.
	QueueDispatch = "dispatch"
	// QueueEnrich is the queue of attachment-fetching jobs.
	QueueEnrich = "enrich"
)

// DispatchArgs asks for an outbox row (and the rows in More) to be handed
// to its platform. It is inserted in the same transaction as the row
// (POST /v1/outbound, a resend) or by the outbox sweeper for a row whose
// job was lost. The row
// is the truth: a job whose row is already handed off or dead completes
// without doing anything, so a duplicate job is harmless.
type DispatchArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	OutboxID uuid.UUID `json:"outbox_id"`
	// AccountID, when set, lets the worker take the one-statement claim
	// for accounts without rate limits.
	AccountID uuid.UUID `json:"account_id,omitzero"`
	// More names the other rows of the account written in the same
	// transaction: a group of sends shares one job (outbox.EnqueueTx).
	// The worker claims them with OutboxID; on an account with rate
	// limits it gives each a job of its own instead. A job that names
	// more rows is never deleted by another job that takes one of them
	// over (migration 00033): it still stands for the others.
	More []uuid.UUID `json:"more,omitempty"`
}

// Kind is the River job kind.
func (DispatchArgs) Kind() string { return "mio.dispatch" }

// InsertOpts puts dispatch jobs on their own queue. Attempts here count
// River-level failures only (the database unavailable); send attempts are
// counted on the outbox row.
func (DispatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDispatch, MaxAttempts: 25}
}

// EnrichArgs asks for the attachments of one inbox message to be fetched
// into the blob store. It is inserted in the ingest transaction of every
// message that carries attachments.
type EnrichArgs struct {
	TenantID  uuid.UUID `json:"tenant_id"`
	MessageID uuid.UUID `json:"message_id"`
}

// Kind is the River job kind.
func (EnrichArgs) Kind() string { return "mio.enrich" }

// InsertOpts puts enrich jobs on their own queue.
func (EnrichArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueEnrich, MaxAttempts: 8}
}
