package workers

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// QueueEnrich is the queue of attachment-fetching jobs.
const QueueEnrich = "enrich"

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
