package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// The consumers' append-only tables (lease ranges, settlements, positions)
// are partitioned into a ring of ringGens generations.
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

// ringRetireWithin bounds how long a retirement keeps trying to take its
// partitions' locks. Every pull and ack locks all partitions of the
// consumers' tables (generic plans lock before pruning), so a TRUNCATE that
// queued for its lock would stall every pull behind it, and could
// deadlock with a pull that already holds one partition: the locks are
// tried with NOWAIT, all three in one statement, again and again until a
// moment when no transaction holds any of them. ErrRingBusy when none
// came (a long query reading a partition): the next step tries again.
const ringRetireWithin = 5 * time.Second

// ErrRingBusy: the retired generation's partitions stayed locked.
var ErrRingBusy = errors.New("consumer ring: partitions busy, retire postponed")

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
	if err := retireGen(ctx, pool, st.Gen, old); err != nil {
		return out, fmt.Errorf("ring retire generation %d: %w", old, err)
	}
	out.Retired = old
	return out, nil
}

// retireGen truncates generation old (the one after gen) and marks it
// clean, when the ring is still at gen and old is not clean yet.
func retireGen(ctx context.Context, pool *pgxpool.Pool, gen, old int16) error {
	parts := fmt.Sprintf("mio.consumer_leases_%[1]d, mio.consumer_settles_%[1]d, mio.consumer_positions_%[1]d", old)
	deadline := time.Now().Add(ringRetireWithin)
	for wait := time.Millisecond; ; wait = min(wait*2, 50*time.Millisecond) {
		err := InTx(ctx, pool, func(tx pgx.Tx) error {
			cur, err := queries().ConsumerLogGenLock(ctx, tx)
			if err != nil {
				return translate(err)
			}
			if cur.Gen != gen || cur.NextClean {
				return nil // another step got there first
			}
			if _, err := tx.Exec(ctx, "LOCK TABLE "+parts+" IN ACCESS EXCLUSIVE MODE NOWAIT"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "TRUNCATE "+parts); err != nil {
				return translate(err)
			}
			return translate(queries().ConsumerLogGenCleaned(ctx, tx, &dbsqlc.ConsumerLogGenCleanedParams{Gen: gen}))
		})
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" { // lock_not_available
			return translate(err)
		}
		if time.Now().After(deadline) {
			return ErrRingBusy
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}
