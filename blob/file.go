package blob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// errNotDir: a path component of the key is a file ("a" exists, "a/b"
// requested), which means the key does not exist.
var errNotDir error = syscall.ENOTDIR

// fileStore keeps each object as a plain file DIR/<key>, so mio dev users
// can open attachments directly.
//
// Put writes DIR/<dir>/.<name>.tmp-* in the object's directory, fsyncs it and
// then commits it: with os.Link when the object must not be overwritten (the
// link fails atomically if the target exists, so of N concurrent Puts exactly
// one reports created=true), with os.Rename when Overwrite is set. The
// directory is fsynced after the commit.
//
// The content type, when given, lives in a tiny sidecar DIR/<dir>/.<name>.meta
// holding {"content_type":…}, written (atomically) right after the object is
// committed: it is best-effort metadata, a reader racing a Put may briefly
// see an empty ContentType. Dot-names cannot be keys (ValidKey), so temporary
// and sidecar files never collide with objects and List skips them.
//
// Deleting an object leaves its (possibly empty) directories in place. A key
// cannot be both an object and a directory ("a" and "a/b"): the second Put
// fails.
type fileStore struct {
	root string
}

type fileMeta struct {
	ContentType string `json:"content_type"`
}

func openFile(dir string) (*fileStore, error) {
	if dir == "" {
		return nil, errors.New("blob: file:// needs a directory")
	}
	root, err := filepath.Abs(filepath.FromSlash(dir))
	if err != nil {
		return nil, fmt.Errorf("blob: open file://%s: %w", dir, err)
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("blob: open file://%s: %w", dir, err)
	}
	return &fileStore{root: root}, nil
}

// Close implements io.Closer; the file store holds no resources.
func (s *fileStore) Close() error { return nil }

func (s *fileStore) path(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

func metaPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".meta")
}

func (s *fileStore) Put(ctx context.Context, key string, r io.Reader, opts PutOptions) (Info, bool, error) {
	if err := checkKey(key); err != nil {
		return Info{}, false, err
	}
	path := s.path(key)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Info{}, false, fmt.Errorf("blob: put %s: %w", key, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return Info{}, false, fmt.Errorf("blob: put %s: %w", key, err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // no-op once renamed; removes the extra link otherwise

	_, err = io.Copy(tmp, ctxReader{ctx: ctx, r: r})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Info{}, false, fmt.Errorf("blob: put %s: %w", key, err)
	}

	created := true
	if opts.Overwrite {
		err = os.Rename(tmpName, path)
	} else {
		err = os.Link(tmpName, path)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			// No hard links on this file system: fall back to a
			// check-then-rename, which is racy only between concurrent
			// first writers (the last one wins whole).
			if _, serr := os.Lstat(path); errors.Is(serr, fs.ErrNotExist) {
				err = os.Rename(tmpName, path)
			} else {
				err = fs.ErrExist
			}
		}
		if errors.Is(err, fs.ErrExist) {
			created, err = false, nil
		}
	}
	if err != nil {
		return Info{}, false, fmt.Errorf("blob: put %s: %w", key, err)
	}
	if !created {
		info, err := s.Stat(ctx, key)
		return info, false, err
	}
	if err := syncDir(dir); err != nil {
		return Info{}, false, fmt.Errorf("blob: put %s: %w", key, err)
	}
	if err := writeMeta(path, opts.ContentType); err != nil {
		return Info{}, false, fmt.Errorf("blob: put %s: %w", key, err)
	}
	info, err := s.Stat(ctx, key)
	return info, true, err
}

// writeMeta records contentType in the sidecar (or removes a stale one).
func writeMeta(path, contentType string) error {
	mp := metaPath(path)
	if contentType == "" {
		if err := os.Remove(mp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(fileMeta{ContentType: contentType})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(mp)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), mp)
}

func readMeta(path string) (fileMeta, error) {
	var m fileMeta
	b, err := os.ReadFile(metaPath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("metadata: %w", err)
	}
	return m, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *fileStore) info(key, path string, fi fs.FileInfo) (Info, error) {
	m, err := readMeta(path)
	if err != nil {
		return Info{}, fmt.Errorf("blob: %s: %w", key, err)
	}
	return Info{Key: key, Size: fi.Size(), ContentType: m.ContentType, Updated: fi.ModTime()}, nil
}

func (s *fileStore) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := checkKey(key); err != nil {
		return nil, Info{}, err
	}
	path := s.path(key)
	f, err := os.Open(path)
	if err != nil {
		return nil, Info{}, fileErr("get", key, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		f.Close()
		return nil, Info{}, fileErr("get", key, err)
	}
	info, err := s.info(key, path, fi)
	if err != nil {
		f.Close()
		return nil, Info{}, err
	}
	return f, info, nil
}

func (s *fileStore) Stat(ctx context.Context, key string) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, err
	}
	path := s.path(key)
	fi, err := os.Stat(path)
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		return Info{}, fileErr("stat", key, err)
	}
	return s.info(key, path, fi)
}

func (s *fileStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	path := s.path(key)
	for _, p := range []string{path, metaPath(path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("blob: delete %s: %w", key, err)
		}
	}
	return nil
}

func (s *fileStore) List(ctx context.Context, prefix string, fn func(Info) error) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	// Walk only the deepest directory the prefix names completely.
	base := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		base = prefix[:i]
	}
	start := s.path(base)
	if base == "" {
		start = s.root
	}
	err := filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // missing start, or deleted meanwhile
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if path == start {
			return nil
		}
		rel, err := filepath.Rel(s.root, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") ||
				!strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || !d.Type().IsRegular() || !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		info, err := s.info(key, path, fi)
		if err != nil {
			return err
		}
		return errStop{fn(info)}.orNil()
	})
	var stop errStop
	if errors.As(err, &stop) {
		return stop.err
	}
	if err != nil {
		return fmt.Errorf("blob: list %q: %w", prefix, err)
	}
	return nil
}

// errStop carries fn's error out of WalkDir unwrapped.
type errStop struct{ err error }

func (e errStop) Error() string { return e.err.Error() }

func (e errStop) orNil() error {
	if e.err == nil {
		return nil
	}
	return e
}

func fileErr(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
		return fmt.Errorf("blob: %s %s: %w", op, key, ErrNotFound)
	}
	return fmt.Errorf("blob: %s %s: %w", op, key, err)
}

// ctxReader stops a copy once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
