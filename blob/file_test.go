package blob

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFileLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(context.Background(), "file://"+dir, Options{})
	require.NoError(t, err)
	put(t, s, "a/b.txt", "hello", PutOptions{ContentType: "text/plain"})
	put(t, s, "a/b.txt", "again", PutOptions{})
	_, _, err = s.Put(context.Background(), "a/c", io.MultiReader(strings.NewReader("x"), errReader{errors.New("boom")}), PutOptions{})
	require.Error(t, err)

	b, err := os.ReadFile(filepath.Join(dir, "a", "b.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello", string(b), "objects are plain files")

	entries, err := os.ReadDir(filepath.Join(dir, "a"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"b.txt", ".b.txt.meta"}, names, "no temporary files left behind")

	require.NoError(t, s.Delete(context.Background(), "a/b.txt"))
	entries, err = os.ReadDir(filepath.Join(dir, "a"))
	require.NoError(t, err)
	require.Empty(t, entries, "the sidecar goes with the object")
}

func TestFileOpenRelative(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	s, err := Open(context.Background(), "file://./.mio/blobs", Options{})
	require.NoError(t, err)
	put(t, s, "k", "v", PutOptions{})
	_, err = os.Stat(filepath.Join(dir, ".mio", "blobs", "k"))
	require.NoError(t, err)
	require.NoError(t, s.(io.Closer).Close())
}

func TestFileKeyIsDirectory(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), "file://"+t.TempDir(), Options{})
	require.NoError(t, err)
	put(t, s, "a/b", "x", PutOptions{})
	_, _, err = s.Get(context.Background(), "a")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.Stat(context.Background(), "a")
	require.ErrorIs(t, err, ErrNotFound)
}
