package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// storeHarness describes one Store implementation for the conformance suite.
type storeHarness struct {
	// open returns a fresh, empty store.
	open func(t *testing.T) Store
	// streams: Put holds memory bounded independently of the object size
	// end to end, so the 100 MB bounded-memory check applies. The
	// fake-gcs-server reads whole uploads into memory (io.ReadAll in its
	// upload handler, objects kept in a memory backend), so only the file
	// store is measured; the gs store still gets a multi-chunk streamed put.
	streams bool
}

func fileHarness() storeHarness {
	return storeHarness{
		streams: true,
		open: func(t *testing.T) Store {
			s, err := Open(context.Background(), "file://"+t.TempDir(), Options{})
			require.NoError(t, err)
			return s
		},
	}
}

const testBucket = "mio-test"

func newFakeGCS(t *testing.T) *fakestorage.Server {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme:     "http",
		Host:       "127.0.0.1",
		NoListener: true, // Client() talks to the server in-process
	})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testBucket})
	return srv
}

func gcsHarness(t *testing.T) storeHarness {
	srv := newFakeGCS(t)
	return storeHarness{
		open: func(t *testing.T) Store {
			// A fresh prefix per test keeps tests apart in one bucket.
			s, err := Open(context.Background(), "gs://"+testBucket+"/t-"+uuid.NewString(), Options{GCSClient: srv.Client()})
			require.NoError(t, err)
			return s
		},
	}
}

func TestConformance(t *testing.T) {
	t.Run("file", func(t *testing.T) { runConformance(t, fileHarness()) })
	t.Run("gs", func(t *testing.T) { runConformance(t, gcsHarness(t)) })
}

func put(t *testing.T, s Store, key, body string, opts PutOptions) (Info, bool) {
	t.Helper()
	info, created, err := s.Put(context.Background(), key, strings.NewReader(body), opts)
	require.NoError(t, err)
	return info, created
}

func get(t *testing.T, s Store, key string) (string, Info) {
	t.Helper()
	rc, info, err := s.Get(context.Background(), key)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b), info
}

func runConformance(t *testing.T, h storeHarness) {
	ctx := context.Background()

	// Runs first and alone: its siblings below are parallel and wait until
	// this function returns, so nothing else allocates while it measures.
	t.Run("StreamedPut100MB", func(t *testing.T) {
		size := int64(100 << 20)
		if !h.streams {
			size = 20 << 20 // several 8 MiB chunks, no memory assertion
		}
		s := h.open(t)
		src := newGenReader(size)
		peak, allocated := measureHeap(t, func() {
			info, created, err := s.Put(ctx, "big/object.bin", src, PutOptions{ContentType: "application/octet-stream"})
			require.NoError(t, err)
			require.True(t, created)
			require.Equal(t, size, info.Size)
		})
		t.Logf("put %d MiB: peak HeapInuse growth %d KiB, allocated %d KiB", size>>20, peak>>10, allocated>>10)
		if h.streams {
			require.Less(t, peak, uint64(32<<20), "Put must stream, not buffer the object")
		}

		rc, info, err := s.Get(ctx, "big/object.bin")
		require.NoError(t, err)
		defer rc.Close()
		require.Equal(t, size, info.Size)
		hash := sha256.New()
		n, err := io.Copy(hash, rc)
		require.NoError(t, err)
		require.Equal(t, size, n)
		require.Equal(t, src.sum(), hash.Sum(nil))
	})

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		before := time.Now().Add(-time.Minute)
		info, created := put(t, s, "a/b/c.txt", "hello", PutOptions{ContentType: "text/plain"})
		require.True(t, created)
		require.Equal(t, "a/b/c.txt", info.Key)
		require.Equal(t, int64(5), info.Size)
		require.Equal(t, "text/plain", info.ContentType)
		require.True(t, info.Updated.After(before), "Updated %v", info.Updated)

		body, ginfo := get(t, s, "a/b/c.txt")
		require.Equal(t, "hello", body)
		require.Equal(t, info.Key, ginfo.Key)
		require.Equal(t, info.Size, ginfo.Size)
		require.Equal(t, info.ContentType, ginfo.ContentType)

		sinfo, err := s.Stat(ctx, "a/b/c.txt")
		require.NoError(t, err)
		require.Equal(t, info.Key, sinfo.Key)
		require.Equal(t, info.Size, sinfo.Size)
		require.Equal(t, info.ContentType, sinfo.ContentType)
	})

	t.Run("EmptyObject", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		info, created := put(t, s, "empty", "", PutOptions{})
		require.True(t, created)
		require.Zero(t, info.Size)
		body, _ := get(t, s, "empty")
		require.Empty(t, body)
	})

	t.Run("PutIsIdempotent", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		_, created := put(t, s, "k", "first", PutOptions{ContentType: "text/plain"})
		require.True(t, created)
		info, created := put(t, s, "k", "second!", PutOptions{ContentType: "image/png"})
		require.False(t, created)
		require.Equal(t, int64(5), info.Size, "Info describes the existing object")
		require.Equal(t, "text/plain", info.ContentType)
		body, _ := get(t, s, "k")
		require.Equal(t, "first", body)
	})

	t.Run("Overwrite", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		put(t, s, "part-0001.ndjson", "old", PutOptions{ContentType: "text/plain"})
		info, created := put(t, s, "part-0001.ndjson", "newer", PutOptions{ContentType: "application/x-ndjson", Overwrite: true})
		require.True(t, created)
		require.Equal(t, int64(5), info.Size)
		body, ginfo := get(t, s, "part-0001.ndjson")
		require.Equal(t, "newer", body)
		require.Equal(t, "application/x-ndjson", ginfo.ContentType)
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		_, _, err := s.Get(ctx, "missing")
		require.ErrorIs(t, err, ErrNotFound)
		_, err = s.Stat(ctx, "missing/deeper")
		require.ErrorIs(t, err, ErrNotFound)
		put(t, s, "file", "x", PutOptions{})
		_, err = s.Stat(ctx, "file/below")
		require.ErrorIs(t, err, ErrNotFound)
	})

	t.Run("Delete", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		require.NoError(t, s.Delete(ctx, "never/existed"))
		put(t, s, "d/x", "x", PutOptions{ContentType: "text/plain"})
		require.NoError(t, s.Delete(ctx, "d/x"))
		_, err := s.Stat(ctx, "d/x")
		require.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, s.Delete(ctx, "d/x"))
		// A later Put starts from scratch, metadata included.
		info, created := put(t, s, "d/x", "yy", PutOptions{})
		require.True(t, created)
		require.Equal(t, int64(2), info.Size)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		keys := []string{
			"archive/date=2026-01-01/p1.ndjson",
			"archive/date=2026-01-01/p2.ndjson",
			"archive/date=2026-01-02/p1.ndjson",
			"archiveX",
			"attachments/sha256/ab/cd/abcd",
			"top",
		}
		for _, k := range keys {
			put(t, s, k, k, PutOptions{ContentType: "text/plain"})
		}
		list := func(prefix string) []string {
			var got []string
			require.NoError(t, s.List(ctx, prefix, func(info Info) error {
				require.Equal(t, int64(len(info.Key)), info.Size)
				require.Equal(t, "text/plain", info.ContentType)
				got = append(got, info.Key)
				return nil
			}))
			sort.Strings(got)
			return got
		}
		require.Equal(t, keys, list(""))
		require.Equal(t, keys[:4], list("archive"))
		require.Equal(t, keys[:3], list("archive/"))
		require.Equal(t, keys[:2], list("archive/date=2026-01-01/"))
		require.Equal(t, keys[:3], list("archive/date=2026-01-0"))
		require.Equal(t, keys[4:5], list("att"))
		require.Empty(t, list("nothing/here/"))

		stop := errors.New("stop")
		n := 0
		err := s.List(ctx, "", func(Info) error { n++; return stop })
		require.Equal(t, stop, err, "fn's error is returned unchanged")
		require.Equal(t, 1, n)

		require.ErrorIs(t, s.List(ctx, "../", func(Info) error { return nil }), ErrInvalidKey)
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		for _, key := range invalidKeys {
			_, _, err := s.Put(ctx, key, strings.NewReader("x"), PutOptions{})
			require.ErrorIs(t, err, ErrInvalidKey, "Put %q", key)
			_, _, err = s.Get(ctx, key)
			require.ErrorIs(t, err, ErrInvalidKey, "Get %q", key)
			_, err = s.Stat(ctx, key)
			require.ErrorIs(t, err, ErrInvalidKey, "Stat %q", key)
			require.ErrorIs(t, s.Delete(ctx, key), ErrInvalidKey, "Delete %q", key)
		}
	})

	t.Run("ConcurrentPutSameKey", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		const n = 10
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []int
		)
		for i := range n {
			wg.Go(func() {
				body := strings.Repeat(fmt.Sprintf("writer-%02d;", i), 1000)
				_, created, err := s.Put(ctx, "same", strings.NewReader(body), PutOptions{})
				require.NoError(t, err)
				if created {
					mu.Lock()
					winners = append(winners, i)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(t, winners, 1, "exactly one Put creates the object")
		body, info := get(t, s, "same")
		require.Equal(t, strings.Repeat(fmt.Sprintf("writer-%02d;", winners[0]), 1000), body)
		require.Equal(t, int64(len(body)), info.Size)
	})

	t.Run("ConcurrentOverwrite", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				body := strings.Repeat(fmt.Sprintf("writer-%02d;", i), 1000)
				_, _, err := s.Put(ctx, "part", strings.NewReader(body), PutOptions{Overwrite: true})
				require.NoError(t, err)
			})
		}
		wg.Wait()
		body, _ := get(t, s, "part")
		require.Len(t, body, 10*1000)
		require.Equal(t, strings.Repeat(body[:10], 1000), body, "one writer's bytes, whole")
	})

	t.Run("FailedPutLeavesNothing", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		boom := errors.New("boom")
		r := io.MultiReader(strings.NewReader("partial"), errReader{boom})
		_, _, err := s.Put(ctx, "broken", r, PutOptions{})
		require.ErrorIs(t, err, boom)
		_, err = s.Stat(ctx, "broken")
		require.ErrorIs(t, err, ErrNotFound)
		var keys []string
		require.NoError(t, s.List(ctx, "", func(i Info) error { keys = append(keys, i.Key); return nil }))
		require.Empty(t, keys)
	})

	t.Run("AttachmentKey", func(t *testing.T) {
		t.Parallel()
		s := h.open(t)
		sum := sha256.Sum256([]byte("photo"))
		key := AttachmentKey(hex.EncodeToString(sum[:]))
		put(t, s, key, "photo", PutOptions{ContentType: "image/jpeg"})
		body, _ := get(t, s, key)
		require.Equal(t, "photo", body)
	})
}

var invalidKeys = []string{
	"",
	"/abs",
	"../up",
	"a/../b",
	"a/..",
	"./a",
	"a/./b",
	".hidden",
	"a/.meta",
	"a//b",
	"trailing/",
	`back\slash`,
	"nul\x00byte",
	"new\nline",
	"bad-utf8-\xff",
	strings.Repeat("k", 901),
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// genReader produces size deterministic pseudo-random bytes without holding
// them, hashing what it hands out.
type genReader struct {
	left  int64
	state uint64
	hash  hashWriter
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

func newGenReader(size int64) *genReader {
	return &genReader{left: size, state: 0x9E3779B97F4A7C15, hash: sha256.New()}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	var word [8]byte
	for i := 0; i < len(p); i += 8 {
		g.state ^= g.state << 13
		g.state ^= g.state >> 7
		g.state ^= g.state << 17
		binary.LittleEndian.PutUint64(word[:], g.state)
		copy(p[i:], word[:])
	}
	g.left -= int64(len(p))
	g.hash.Write(p)
	return len(p), nil
}

func (g *genReader) sum() []byte { return g.hash.Sum(nil) }

// measureHeap runs f while a sampler records HeapInuse, and returns the peak
// growth over the starting HeapInuse and the bytes allocated meanwhile.
func measureHeap(t *testing.T, f func()) (peak, allocated uint64) {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, startAlloc := ms.HeapInuse, ms.TotalAlloc

	var (
		max  = base
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > max {
				max = m.HeapInuse
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > max {
		max = ms.HeapInuse
	}
	return max - base, ms.TotalAlloc - startAlloc
}

func TestGenReaderDeterministic(t *testing.T) {
	a, err := io.ReadAll(newGenReader(1001))
	require.NoError(t, err)
	require.Len(t, a, 1001)
	b, err := io.ReadAll(io.LimitReader(newGenReader(5000), 1001))
	require.NoError(t, err)
	require.True(t, bytes.Equal(a, b))
}

// The sampler must notice a Put that buffers: reading 48 MiB into memory
// has to show up as peak growth above the 32 MiB bound.
func TestMeasureHeapDetectsBuffering(t *testing.T) {
	var kept []byte
	peak, _ := measureHeap(t, func() {
		var err error
		kept, err = io.ReadAll(newGenReader(48 << 20))
		require.NoError(t, err)
	})
	require.Len(t, kept, 48<<20)
	require.Greater(t, peak, uint64(32<<20))
}
