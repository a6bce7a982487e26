package db

import (
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Cursor is a keyset position in a list ordered by (created_at, id): the
// page after it starts past that row. The zero Cursor starts at the
// beginning.
type Cursor struct {
	At time.Time
	ID uuid.UUID
}

// ErrBadCursor: a page cursor that does not parse.
var ErrBadCursor = errors.New("invalid page cursor")

// String is the cursor as clients pass it back ("" for the zero cursor).
func (c Cursor) String() string {
	if c.ID == uuid.Nil {
		return ""
	}
	return c.At.UTC().Format(time.RFC3339Nano) + "~" + c.ID.String()
}

// ParseCursor reads a cursor made by Cursor.String; "" is the zero cursor.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	at, id, ok := strings.Cut(s, "~")
	if !ok {
		return Cursor{}, ErrBadCursor
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return Cursor{}, ErrBadCursor
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return Cursor{}, ErrBadCursor
	}
	return Cursor{At: t, ID: u}, nil
}
