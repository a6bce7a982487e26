package db

import (
	"context"
	"errors"
	"sort"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Operators' dead-letter operations across tenants, shared by the admin
// CLI and the admin API. Row-level security sees one tenant per
// transaction, so each walks the tenants.

// DeadLettersList returns dead letters, newest first: of one tenant when
// tenantID is set, else of every tenant (at most p.Limit in all).
func DeadLettersList(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID, p DeadLetterListParams) ([]*DeadLetter, error) {
	tenants, err := tenantsOrOne(ctx, pool, tenantID)
	if err != nil {
		return nil, err
	}
	var out []*DeadLetter
	for _, t := range tenants {
		err := InTenantTx(ctx, pool, t, func(tx pgx.Tx) error {
			rows, err := DeadLetterList(ctx, tx, t, p)
			out = append(out, rows...)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].DeadAt, out[j].DeadAt
		return a != nil && (b == nil || a.After(*b))
	})
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

// DeadLettersFind returns the dead letters with this id in tenantID (or
// in any tenant when tenantID is uuid.Nil); ErrNotFound when none.
func DeadLettersFind(ctx context.Context, pool *pgxpool.Pool, tenantID, id uuid.UUID) ([]*DeadLetter, error) {
	tenants, err := tenantsOrOne(ctx, pool, tenantID)
	if err != nil {
		return nil, err
	}
	for _, t := range tenants {
		var rows []*DeadLetter
		err := InTenantTx(ctx, pool, t, func(tx pgx.Tx) error {
			var err error
			rows, err = DeadLetterGet(ctx, tx, t, id)
			return err
		})
		if err == nil {
			return rows, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	return nil, ErrNotFound
}

// DeadLettersRequeue calls mio.requeue(id) in the dead letter's tenant
// (found when tenantID is uuid.Nil) and returns how many items it
// requeued; ErrNotFound when id is no dead letter.
func DeadLettersRequeue(ctx context.Context, pool *pgxpool.Pool, tenantID, id uuid.UUID) (int, error) {
	return deadLettersApply(ctx, pool, tenantID, id, DeadLetterRequeue)
}

// DeadLettersDiscard calls mio.discard(id) likewise.
func DeadLettersDiscard(ctx context.Context, pool *pgxpool.Pool, tenantID, id uuid.UUID) (int, error) {
	return deadLettersApply(ctx, pool, tenantID, id, DeadLetterDiscard)
}

func deadLettersApply(ctx context.Context, pool *pgxpool.Pool, tenantID, id uuid.UUID, fn func(context.Context, DBTX, uuid.UUID) (int, error)) (int, error) {
	found, err := DeadLettersFind(ctx, pool, tenantID, id)
	if err != nil {
		return 0, err
	}
	t := found[0].TenantID
	var n int
	err = InTenantTx(ctx, pool, t, func(tx pgx.Tx) error {
		var err error
		n, err = fn(ctx, tx, id)
		return err
	})
	if err == nil && n == 0 {
		err = ErrNotFound // settled by someone else meanwhile
	}
	return n, err
}

func tenantsOrOne(ctx context.Context, pool *pgxpool.Pool, tenantID uuid.UUID) ([]uuid.UUID, error) {
	if tenantID != uuid.Nil {
		return []uuid.UUID{tenantID}, nil
	}
	ts, err := TenantList(ctx, pool)
	if err != nil {
		return nil, err
	}
	out := make([]uuid.UUID, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out, nil
}
