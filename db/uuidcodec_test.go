package db

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// TestUUIDCodec: uuid.UUID values, slices and NULLs round-trip through the
// binary plans registerUUID adds, and the array encoding no longer goes
// through driver.Valuer text.
func TestUUIDCodec(t *testing.T) {
	m := pgtype.NewMap()
	registerUUID(m)
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.Nil}
	buf, err := m.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, ids, nil)
	require.NoError(t, err)
	var back []uuid.UUID
	require.NoError(t, m.Scan(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, buf, &back))
	require.Equal(t, ids, back)

	one, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, ids[0], nil)
	require.NoError(t, err)
	require.Equal(t, ids[0][:], one, "binary: the 16 bytes")
	var got uuid.UUID
	require.NoError(t, m.Scan(pgtype.UUIDOID, pgtype.BinaryFormatCode, one, &got))
	require.Equal(t, ids[0], got)
	// NULL: as without the registration.
	plain := pgtype.NewMap()
	want, got := uuid.New(), uuid.UUID{}
	got = want
	wantErr := plain.Scan(pgtype.UUIDOID, pgtype.BinaryFormatCode, nil, &want)
	gotErr := m.Scan(pgtype.UUIDOID, pgtype.BinaryFormatCode, nil, &got)
	require.Equal(t, wantErr, gotErr)
	require.Equal(t, want, got)
	var text uuid.UUID
	require.NoError(t, m.Scan(pgtype.UUIDOID, pgtype.TextFormatCode, []byte(ids[1].String()), &text))
	require.Equal(t, ids[1], text)
}

func BenchmarkUUIDArrayEncode(b *testing.B) {
	ids := make([]uuid.UUID, 100)
	for i := range ids {
		ids[i] = uuid.New()
	}
	for _, registered := range []bool{false, true} {
		m := pgtype.NewMap()
		name := "valuer"
		if registered {
			registerUUID(m)
			name = "binary"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := m.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, ids, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
