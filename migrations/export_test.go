package migrations

import (
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
)

// NewWithDefinitions is New with the function and view files of fsys.
func NewWithDefinitions(pool *pgxpool.Pool, fsys fs.FS) *Migrator {
	return &Migrator{pool: pool, defs: fsys}
}
