package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// The consumers' append-only tables (lease ranges, settlements, positions)
// are partitioned into a ring of ringGens generations (migration 00008).
// Rows are appended to the current generation. The generation after it,
// the oldest, is retired by TRUNCATE once nothing in it is needed: the
// still outstanding members of its lease ranges are moved out into
// per-message deliveries (as an expiry would), and a consumer whose newest
// position is in it gets that position copied into its own row. Then the
// ring may advance onto the emptied generation. A TRUNCATE leaves no dead
// tuple, so the consumers' bookkeeping costs vacuum nothing, whatever
// holds the cluster's horizon (docs/architecture.md, "Append-only consumer
// bookkeeping").
const ringGens = 3

// RingStep reports what one ConsumerRingStep did.
type RingStep struct {
	Gen       int16 // the generation written to, after the step
	Retired   int16 // the generation retired, or -1
	Moved     int64 // lease-range members moved out of the retired generation
	Consumers int   // consumers whose rows were in the retired generation
	Advanced  bool  // the ring advanced onto the next generation
}

// ringRetireLockTimeout bounds how long the TRUNCATE of a retired
// generation waits for its lock (a long query reading a partition holds
// it off): it gives up and the next step tries again, rather than queue
// every pull behind it.
const ringRetireLockTimeout = 2 * time.Second

// ConsumerRingStep runs one step of the ring: retire the oldest generation
// when it is not empty yet, else advance the ring when the current
// generation is at least period old.
func ConsumerRingStep(ctx context.Context, pool *pgxpool.Pool, period time.Duration) (RingStep, error) {
	st, err := queries().ConsumerLogGen(ctx, pool)
	if err != nil {
		return RingStep{}, fmt.Errorf("ring state: %w", translate(err))
	}
	out := RingStep{Gen: st.Gen, Retired: -1}
	if st.NextClean {
		n, err := queries().ConsumerLogGenAdvance(ctx, pool, &dbsqlc.ConsumerLogGenAdvanceParams{Period: interval(period)})
		if err != nil {
			return out, fmt.Errorf("ring advance: %w", translate(err))
		}
		if n > 0 {
			out.Gen, out.Advanced = (st.Gen+1)%ringGens, true
		}
		return out, nil
	}
	old := (st.Gen + 1) % ringGens
	tenants, err := TenantList(ctx, pool)
	if err != nil {
		return out, err
	}
	for _, t := range tenants {
		var names []string
		if err := InTenantTx(ctx, pool, t.ID, func(tx pgx.Tx) error {
			names, err = queries().ConsumersInGen(ctx, tx, &dbsqlc.ConsumersInGenParams{TenantID: t.ID, Gen: old})
			return err
		}); err != nil {
			return out, fmt.Errorf("ring consumers of tenant %s: %w", t.ID, translate(err))
		}
		for _, name := range names {
			var moved int64
			if err := InTenantTx(ctx, pool, t.ID, func(tx pgx.Tx) error {
				// The consumer's pull lock: no pull of it runs meanwhile.
				if _, err := queries().ConsumerLock(ctx, tx, &dbsqlc.ConsumerLockParams{TenantID: t.ID, Name: name}); err != nil {
					return translate(err)
				}
				c, err := ConsumerGet(ctx, tx, t.ID, name)
				if err != nil {
					return err
				}
				if moved, err = leaseMaterialize(ctx, tx, c, false, pgtype.Int2{Int16: old, Valid: true}); err != nil {
					return err
				}
				return translate(queries().ConsumerPositionKeep(ctx, tx, &dbsqlc.ConsumerPositionKeepParams{
					TenantID: t.ID, ConsumerName: name, Gen: old}))
			}); err != nil && !errors.Is(err, ErrNotFound) {
				return out, fmt.Errorf("ring retire consumer %s/%s: %w", t.ID, name, err)
			}
			out.Moved += moved
			out.Consumers++
		}
	}
	// Nothing is appended to a generation that is not current, so what
	// was moved out stays moved out; retire it under the ring's lock.
	err = InTx(ctx, pool, func(tx pgx.Tx) error {
		cur, err := queries().ConsumerLogGenLock(ctx, tx)
		if err != nil {
			return translate(err)
		}
		if cur.Gen != st.Gen || cur.NextClean {
			return nil // another step got there first
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = '%dms'", ringRetireLockTimeout.Milliseconds())); err != nil {
			return translate(err)
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("TRUNCATE mio.consumer_leases_%[1]d, mio.consumer_settles_%[1]d, mio.consumer_positions_%[1]d", old)); err != nil {
			return translate(err)
		}
		return translate(queries().ConsumerLogGenCleaned(ctx, tx, &dbsqlc.ConsumerLogGenCleanedParams{Gen: st.Gen}))
	})
	if err != nil {
		return out, fmt.Errorf("ring retire generation %d: %w", old, err)
	}
	out.Retired = old
	return out, nil
}
