package workers

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// ClaimOnly claims a row as a worker does and then forgets it, like a
// process that crashed mid-send.
func (d *Dispatcher) ClaimOnly(ctx context.Context, tenantID, id uuid.UUID) error {
	res, err := d.ops.Do(ctx, opReq{tenantID: tenantID, claim: id})
	if err == nil {
		err = res.err
	}
	if err == nil && res.claim.kind != claimClaimed {
		err = fmt.Errorf("not claimed (kind %d)", res.claim.kind)
	}
	return err
}

// DeleteTakenJobs deletes the jobs of rows taken over, as a batch of
// claims does after its commit.
func (d *Dispatcher) DeleteTakenJobs(ctx context.Context, client *river.Client[pgx.Tx], ids []int64) {
	d.deleteTakenJobs(ctx, client, ids)
}
