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
	"encoding/json"
	"fmt"
	"strings"

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
	// over: it still stands for the others.
	More IDList `json:"more,omitempty"`
}

// IDList is a list of ids stored in a job's arguments as ONE JSON string,
// the ids comma-separated ("more": "0194…,0194…"), not as an array.
// River indexes every job's arguments with a GIN index (jsonb_ops), which
// holds an entry for each array element: a group of 14 sends made 20
// entries a job, and inserting them cost 0.58 ms and 6.0 KB of WAL a job
// where one string costs 0.47 ms and 2.0 KB (pgbench, 4 clients,
// measured with mio-bench produce); the pending list they filled
// stalled a job insert, and its group of sends, for up to 256 ms when it
// was merged. A list stored as an array by an earlier version still
// decodes. In SQL: string_to_array(args->>'more', ',')::uuid[].
type IDList []uuid.UUID

// MarshalJSON encodes the ids as one comma-separated string.
func (l IDList) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.Grow(len(l) * 37)
	for i, id := range l {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(id.String())
	}
	return json.Marshal(b.String())
}

// UnmarshalJSON decodes a comma-separated string, or an array of ids.
func (l *IDList) UnmarshalJSON(data []byte) error {
	var ids []uuid.UUID
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, &ids); err != nil {
			return err
		}
		*l = ids
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("id list: want a string of comma-separated ids or an array: %w", err)
	}
	if s == "" {
		*l = nil
		return nil
	}
	for part := range strings.SplitSeq(s, ",") {
		id, err := uuid.Parse(part)
		if err != nil {
			return fmt.Errorf("id list: %w", err)
		}
		ids = append(ids, id)
	}
	*l = ids
	return nil
}

// Kind is the River job kind.
func (DispatchArgs) Kind() string { return "mio.dispatch" }

// DispatchMaxAttempts is the default attempts of an outbound message's
// attempt series (its dead-letter point) and the River attempts of a
// dispatch job, one policy for both (workers.RetryPolicy).
const DispatchMaxAttempts = 5

// InsertOpts puts dispatch jobs on their own queue. Attempts here count
// failed runs (the database unavailable, a worker killed); send attempts
// are counted on the outbox row. A row whose job River discarded gets a
// new one from the outbox sweeper.
func (DispatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueDispatch, MaxAttempts: DispatchMaxAttempts}
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
