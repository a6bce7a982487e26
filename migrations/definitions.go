package migrations

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// definitionsLock is the advisory lock key under which the function and
// view files are applied (one migrator at a time).
const definitionsLock = 7461002

// A definition is one file of functions/ or views/: the current text of
// one function (with its overloads) or one view, and its grants.
type definition struct {
	view bool
	name string // the object's name in schema mio: the file's base name
	sql  string
}

// definitions returns the function files in name order, then the view
// files in name order (a view that reads another view sorts after it).
func definitions(fsys fs.FS) ([]definition, error) {
	var out []definition
	for _, dir := range []string{"functions", "views"} {
		names, err := fs.Glob(fsys, dir+"/*.sql")
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		for _, n := range names {
			b, err := fs.ReadFile(fsys, n)
			if err != nil {
				return nil, err
			}
			out = append(out, definition{view: dir == "views", name: strings.TrimSuffix(path.Base(n), ".sql"), sql: string(b)})
		}
	}
	return out, nil
}

// inSchema returns the definitions' text with every reference to an object
// they define (mio.<name>) moved to schema s, so that the set can be created
// beside the live one and compared with it.
func inSchema(defs []definition, s string) []definition {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = regexp.QuoteMeta(d.name)
	}
	re := regexp.MustCompile(`\bmio\.(` + strings.Join(names, "|") + `)\b`)
	out := make([]definition, len(defs))
	for i, d := range defs {
		out[i] = d
		out[i].sql = re.ReplaceAllString(d.sql, s+".$1")
	}
	return out
}

// object is one function, procedure or view as the catalog describes it.
type object struct {
	view     bool
	name     string
	identity string // a function's identity arguments; "" for a view
	def      string // pg_get_functiondef or the view's definition, options and columns
	acl      string // a function's grants (a view's come from the schema's default privileges)
	header   string // a function's kind, arguments (names, defaults) and result
}

func (o object) key() string {
	if o.view {
		return o.name
	}
	return o.name + "(" + o.identity + ")"
}

// catalogObjects lists the functions, procedures and views of schema s, with
// the schema's name in their text written as "mio" (a temporary schema's
// also as pg_temp).
func catalogObjects(ctx context.Context, tx pgx.Tx, s string) (map[string]object, error) {
	rows, err := tx.Query(ctx, `
SELECT false, p.proname, pg_get_function_identity_arguments(p.oid),
       pg_get_functiondef(p.oid),
       -- Grants are compared only by the schema's owner (migrate up):
       -- the files' objects are created by whichever role checks them, and
       -- another role (serve's runtime login through a pooler) would see
       -- its own name where the owner's stands.
       CASE WHEN (SELECT pg_get_userbyid(n.nspowner) = current_user FROM pg_namespace AS n WHERE n.nspname = 'mio')
            THEN coalesce(p.proacl::text, '') ELSE '' END,
       p.prokind::text || ' ' || pg_get_function_arguments(p.oid) || ' ' || coalesce(pg_get_function_result(p.oid), '')
FROM pg_proc p WHERE p.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1)
UNION ALL
SELECT true, c.relname, '',
       pg_get_viewdef(c.oid) || coalesce(c.reloptions::text, '') ||
       (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
        FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0),
       '', ''
FROM pg_class c WHERE c.relkind = 'v' AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1)`, s)
	if err != nil {
		return nil, err
	}
	objs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (object, error) {
		var o object
		err := r.Scan(&o.view, &o.name, &o.identity, &o.def, &o.acl, &o.header)
		if s != "mio" {
			o.def = strings.NewReplacer(s+".", "mio.", "pg_temp.", "mio.").Replace(o.def)
		}
		if o.view {
			// A view names a relation of pg_temp unqualified (pg_temp is
			// always searched), one of mio qualified: compare them unqualified.
			o.def = strings.ReplaceAll(o.def, "mio.", "")
		}
		return o, err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]object, len(objs))
	for _, o := range objs {
		out[o.key()] = o
	}
	return out, nil
}

// DefinitionsDiff is how the functions and views of schema mio differ from
// the files: each entry names an object ("name(identity args)").
type DefinitionsDiff struct {
	Missing []string // defined by a file, absent from the database
	Changed []string // present, with another definition or grants
	Extra   []string // in the database, defined by no file
}

// Empty reports whether the database matches the files.
func (d *DefinitionsDiff) Empty() bool {
	return len(d.Missing) == 0 && len(d.Changed) == 0 && len(d.Extra) == 0
}

func (d *DefinitionsDiff) String() string {
	var parts []string
	for _, p := range []struct {
		what  string
		names []string
	}{{"missing", d.Missing}, {"changed", d.Changed}, {"not in any file", d.Extra}} {
		if len(p.names) > 0 {
			parts = append(parts, p.what+": "+strings.Join(p.names, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// diffDefinitions creates the files' objects in the session's temporary
// schema (pg_temp: no privilege beyond TEMP, seen by no other session),
// compares them with schema mio, and drops them again. It also returns both
// sides, for the caller that goes on to apply the files.
func diffDefinitions(ctx context.Context, tx pgx.Tx, defs []definition) (diff *DefinitionsDiff, want, have map[string]object, err error) {
	if _, err := tx.Exec(ctx, `SET LOCAL check_function_bodies = off`); err != nil {
		return nil, nil, nil, err
	}
	for _, d := range inSchema(defs, "pg_temp") {
		if _, err := tx.Exec(ctx, d.sql); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", d.name, err)
		}
	}
	var temp string
	if err := tx.QueryRow(ctx, `SELECT nspname::text FROM pg_namespace WHERE oid = pg_my_temp_schema()`).Scan(&temp); err != nil {
		return nil, nil, nil, err
	}
	if want, err = catalogObjects(ctx, tx, temp); err != nil {
		return nil, nil, nil, err
	}
	if have, err = catalogObjects(ctx, tx, "mio"); err != nil {
		return nil, nil, nil, err
	}
	var views, routines []string
	for _, w := range want {
		if w.view {
			views = append(views, "pg_temp."+pgx.Identifier{w.name}.Sanitize())
		} else {
			routines = append(routines, "pg_temp."+pgx.Identifier{w.name}.Sanitize()+"("+w.identity+")")
		}
	}
	for _, drop := range []struct{ what, list string }{{"VIEW", strings.Join(views, ", ")}, {"ROUTINE", strings.Join(routines, ", ")}} {
		if drop.list == "" {
			continue
		}
		if _, err := tx.Exec(ctx, `DROP `+drop.what+` `+drop.list); err != nil {
			return nil, nil, nil, err
		}
	}
	if _, err := tx.Exec(ctx, `SET LOCAL check_function_bodies = on`); err != nil {
		return nil, nil, nil, err
	}
	diff = &DefinitionsDiff{}
	for k, w := range want {
		h, ok := have[k]
		switch {
		case !ok:
			diff.Missing = append(diff.Missing, k)
		case h.def != w.def || h.acl != w.acl:
			diff.Changed = append(diff.Changed, k)
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			diff.Extra = append(diff.Extra, k)
		}
	}
	slices.Sort(diff.Missing)
	slices.Sort(diff.Changed)
	slices.Sort(diff.Extra)
	return diff, want, have, nil
}

// applyDefinitions brings schema mio's functions and views to the files, in
// one transaction under an advisory lock, and returns what differed (empty:
// nothing was done). Every view is dropped and created again when anything
// differs (a view's columns may change, and views depend on the functions
// they call); a function whose arguments, result or kind changed is dropped
// first (CREATE OR REPLACE cannot change them); a function or view no file
// defines is dropped. Functions are created with their bodies unchecked (they
// call one another and the views in any order), then the views, then the
// functions again with their bodies checked.
func applyDefinitions(ctx context.Context, conn *pgx.Conn, fsys fs.FS) (*DefinitionsDiff, error) {
	defs, err := definitions(fsys)
	if err != nil {
		return nil, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, definitionsLock); err != nil {
		return nil, err
	}
	diff, want, have, err := diffDefinitions(ctx, tx, defs)
	if err != nil {
		return nil, err
	}
	if diff.Empty() {
		return diff, tx.Commit(ctx)
	}
	var views []string
	drops := map[string]bool{}
	for k, h := range have {
		w, ok := want[k]
		switch {
		case h.view:
			views = append(views, "mio."+pgx.Identifier{h.name}.Sanitize())
		case !ok || w.header != h.header:
			drops[k] = true
		}
	}
	if len(views) > 0 {
		slices.Sort(views)
		if _, err := tx.Exec(ctx, `DROP VIEW `+strings.Join(views, ", ")); err != nil {
			return nil, fmt.Errorf("drop views: %w", err)
		}
	}
	for k := range drops {
		h := have[k]
		if _, err := tx.Exec(ctx, `DROP ROUTINE mio.`+pgx.Identifier{h.name}.Sanitize()+`(`+h.identity+`)`); err != nil {
			return nil, fmt.Errorf("drop %s: %w", k, err)
		}
	}
	functions := func(check string) error {
		if _, err := tx.Exec(ctx, `SET LOCAL check_function_bodies = `+check); err != nil {
			return err
		}
		for _, d := range defs {
			if !d.view {
				if _, err := tx.Exec(ctx, d.sql); err != nil {
					return fmt.Errorf("function %s: %w", d.name, err)
				}
			}
		}
		return nil
	}
	if err := functions("off"); err != nil {
		return nil, err
	}
	for _, d := range defs {
		if d.view {
			if _, err := tx.Exec(ctx, d.sql); err != nil {
				return nil, fmt.Errorf("view %s: %w", d.name, err)
			}
		}
	}
	if err := functions("on"); err != nil {
		return nil, err
	}
	return diff, tx.Commit(ctx)
}

// createMissingFunctions creates, bodies unchecked, the functions of the
// files that schema mio does not have at all (by name), before the
// migrations after the baseline run: those migrations (and the baseline's
// policies and triggers) may name them. A function whose signature names a
// type a later migration creates is left to applyDefinitions.
func createMissingFunctions(ctx context.Context, conn *pgx.Conn, fsys fs.FS) error {
	defs, err := definitions(fsys)
	if err != nil {
		return err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, definitionsLock); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT proname::text FROM pg_proc WHERE pronamespace = 'mio'::regnamespace`)
	if err != nil {
		return err
	}
	existing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SET LOCAL check_function_bodies = off`); err != nil {
		return err
	}
	for _, d := range defs {
		if d.view || slices.Contains(existing, d.name) {
			continue
		}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := sp.Exec(ctx, d.sql); err != nil {
			_ = sp.Rollback(ctx)
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && (pgErr.Code == "42704" || pgErr.Code == "42P01") {
				continue // undefined type or table: created after the migrations
			}
			return fmt.Errorf("function %s: %w", d.name, err)
		}
		if err := sp.Commit(ctx); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}
