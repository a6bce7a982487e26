package migrations

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// ChannelType is a channel of the registry as mio.channel_types holds it.
type ChannelType struct {
	Slug        string
	DisplayName string
}

// WithChannelTypes returns m set to keep mio.channel_types to the channel
// registry's channels: Up upserts them and marks every other row
// unregistered; Status lists them, pending while one has no registered
// row, and so Check reports the schema out of date. Without it (nil, as
// in db/dbtest's template) the table keeps the rows it has.
func (m *Migrator) WithChannelTypes(types []ChannelType) *Migrator {
	m.channelTypes = slices.Clone(types)
	return m
}

// RegisterChannelTypes adds the registry's channels (WithChannelTypes)
// missing from mio.channel_types and marks theirs registered, leaving
// display names and every other row as they are: `mio serve` calls it at
// start, so a binary with a new channel accepts its accounts before
// `mio migrate up` runs, and, during a rolling deploy, an older binary
// unregisters nothing. It does nothing while the table does not exist
// (Check then reports the pending migration) or when the pool's role may
// not write it (the runtime role, through a pooler: Check then reports
// the channel missing until `mio migrate up`).
func (m *Migrator) RegisterChannelTypes(ctx context.Context) ([]AppliedVersion, error) {
	if m.channelTypes == nil {
		return nil, nil
	}
	var out []AppliedVersion
	err := pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		var writable bool
		err := tx.QueryRow(ctx, `
SELECT to_regclass('mio.channel_types') IS NOT NULL
   AND has_table_privilege('mio.channel_types', 'INSERT, UPDATE')`).Scan(&writable)
		if err != nil || !writable {
			return err
		}
		slugs, names := channelTypeColumns(m.channelTypes)
		rows, err := tx.Query(ctx, `
INSERT INTO mio.channel_types AS c (slug, display_name, registered)
SELECT slug, display_name, true FROM unnest($1::text[], $2::text[]) AS r (slug, display_name)
ON CONFLICT (slug) DO UPDATE SET registered = true, updated_at = now() WHERE NOT c.registered
RETURNING c.slug`, slugs, names)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (AppliedVersion, error) {
			var slug string
			err := r.Scan(&slug)
			return AppliedVersion{Source: "channel_type", Name: slug + " (registered)", Applied: true}, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mio channel types: %w", err)
	}
	return out, nil
}

func channelTypeColumns(types []ChannelType) (slugs, names []string) {
	slugs = make([]string, len(types))
	names = make([]string, len(types))
	for i, t := range types {
		slugs[i], names[i] = t.Slug, t.DisplayName
	}
	return slugs, names
}

// syncChannelTypes upserts the registry's channels into mio.channel_types
// (registered, with their display names) and marks the rows of slugs it
// does not name unregistered; rows are never deleted, as accounts may name
// them. It returns one entry per row it changed.
func syncChannelTypes(ctx context.Context, tx pgx.Tx, types []ChannelType) ([]AppliedVersion, error) {
	slugs, names := channelTypeColumns(types)
	rows, err := tx.Query(ctx, `
WITH registry AS (
    SELECT * FROM unnest($1::text[], $2::text[]) AS r (slug, display_name)
), upserted AS (
    INSERT INTO mio.channel_types AS c (slug, display_name, registered)
    SELECT slug, display_name, true FROM registry
    ON CONFLICT (slug) DO UPDATE SET display_name = excluded.display_name, registered = true, updated_at = now()
    WHERE c.display_name IS DISTINCT FROM excluded.display_name OR NOT c.registered
    RETURNING c.slug, 'registered'::text AS change
), unregistered AS (
    UPDATE mio.channel_types AS c SET registered = false, updated_at = now()
    WHERE c.registered AND c.slug <> ALL ($1::text[])
    RETURNING c.slug, 'unregistered'::text AS change
)
SELECT slug, change FROM upserted UNION ALL SELECT slug, change FROM unregistered ORDER BY 1`, slugs, names)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (AppliedVersion, error) {
		var slug, change string
		err := r.Scan(&slug, &change)
		return AppliedVersion{Source: "channel_type", Name: slug + " (" + change + ")", Applied: true}, err
	})
}

// channelTypesStatus lists the registry's channels, each applied when
// mio.channel_types has a registered row of its slug (none while the
// table does not exist yet).
func channelTypesStatus(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, types []ChannelType) ([]AppliedVersion, error) {
	slugs, _ := channelTypeColumns(types)
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('mio.channel_types') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, fmt.Errorf("channel types: %w", err)
	}
	var have []string
	if exists {
		err := q.QueryRow(ctx, `
SELECT coalesce(array_agg(slug), '{}') FROM mio.channel_types WHERE registered AND slug = ANY ($1::text[])`, slugs).Scan(&have)
		if err != nil {
			return nil, fmt.Errorf("channel types: %w", err)
		}
	}
	out := make([]AppliedVersion, len(types))
	for i, t := range types {
		out[i] = AppliedVersion{Source: "channel_type", Name: t.Slug, Applied: slices.Contains(have, t.Slug)}
	}
	return out, nil
}
