package workers

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// readSpool reads the whole object back.
func readSpool(t *testing.T, s *spool) []byte {
	t.Helper()
	r, err := s.reader()
	require.NoError(t, err)
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return b
}

func TestSpoolKeepsSmallObjectsInMemory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newSpool(dir, 64)
	require.NoError(t, s.writeLine([]byte(`{"a":1}`)))
	require.NoError(t, s.writeLine([]byte(`{"b":2}`)))
	require.False(t, s.spilled())
	require.Equal(t, int64(16), s.Len())
	require.Equal(t, "{\"a\":1}\n{\"b\":2}\n", string(readSpool(t, s)))
	require.NoError(t, s.Close())
	left, _ := os.ReadDir(dir)
	require.Empty(t, left)
}

func TestSpoolMovesLargeObjectsToAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newSpool(dir, 100)
	var want bytes.Buffer
	for i := range 50 {
		line := []byte(fmt.Sprintf(`{"n":%d,"text":"line %d"}`, i, i))
		require.NoError(t, s.writeLine(line))
		want.Write(line)
		want.WriteByte('\n')
	}
	require.True(t, s.spilled(), "past 100 bytes the object is in a file")
	require.Equal(t, int64(want.Len()), s.Len())
	files, err := filepath.Glob(filepath.Join(dir, "mio-archive-*.ndjson"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.Equal(t, want.Bytes(), readSpool(t, s), "the lines before and after the spill, in order")
	require.Equal(t, want.Bytes(), readSpool(t, s), "a second read starts over")
	require.NoError(t, s.Close())
	_, err = os.Stat(files[0])
	require.ErrorIs(t, err, os.ErrNotExist, "Close removes the file")
	require.NoError(t, s.Close(), "Close twice")
}

func TestSpoolStaysInMemoryWithoutAFile(t *testing.T) {
	t.Parallel()
	s := newSpool(filepath.Join(t.TempDir(), "missing"), 10)
	var want bytes.Buffer
	for i := range 20 {
		line := []byte(fmt.Sprintf("line %d", i))
		require.NoError(t, s.writeLine(line))
		want.Write(line)
		want.WriteByte('\n')
	}
	require.False(t, s.spilled(), "no temporary file could be made: nothing is lost")
	require.Equal(t, want.Bytes(), readSpool(t, s))
	require.NoError(t, s.Close())
}

func TestSpoolBuffersFileWrites(t *testing.T) {
	t.Parallel()
	s := newSpool(t.TempDir(), 100)
	for i := range 20 {
		require.NoError(t, s.writeLine([]byte(fmt.Sprintf(`{"n":%d}`, i))))
	}
	require.True(t, s.spilled())
	at, err := s.file.Stat()
	require.NoError(t, err)
	require.Less(t, at.Size(), s.Len(), "lines after the spill wait in the buffer, not a write a line")
	b := readSpool(t, s)
	require.Equal(t, s.Len(), int64(len(b)), "reader flushes the buffer first")
	require.NoError(t, s.Close())
}
