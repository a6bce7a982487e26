// Package blob is MIO's object store behind one small interface, with two
// implementations: file://DIR (default, used by mio dev) and
// gs://BUCKET/PREFIX (Google Cloud Storage). Writes are streamed, atomic
// and idempotent.
//
// Internal to MIO; not a stable API.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"cloud.google.com/go/storage"
)

// Errors returned by every Store.
var (
	// ErrNotFound: the key does not exist (Get, Stat).
	ErrNotFound = errors.New("blob: not found")
	// ErrInvalidKey: the key or list prefix is not a valid key (see ValidKey).
	ErrInvalidKey = errors.New("blob: invalid key")
)

// Store is an object store addressed by slash-separated keys.
//
// Stores returned by Open also implement io.Closer (release it at shutdown),
// and gs:// stores opened with Options.SignURLs implement URLSigner.
type Store interface {
	// Put streams r to key atomically and idempotently: readers see either
	// no object or the complete one. Unless opts.Overwrite is set, an
	// existing object is not rewritten and Put returns its Info with
	// created=false (r is then not necessarily read to the end). Put never
	// buffers the whole object in memory.
	Put(ctx context.Context, key string, r io.Reader, opts PutOptions) (info Info, created bool, err error)
	// Get opens the object for reading; the caller closes it. ErrNotFound
	// when the key does not exist.
	Get(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// Stat returns the object's Info, or ErrNotFound.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the object; a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every object whose key starts with prefix (a plain
	// string prefix, "" for all). Order is unspecified. An error from fn
	// stops the listing and is returned unchanged.
	List(ctx context.Context, prefix string, fn func(Info) error) error
}

// PutOptions tune one Put.
type PutOptions struct {
	// ContentType is stored with the object and returned in Info.
	// Default "" (gs then stores application/octet-stream).
	ContentType string
	// Overwrite replaces an existing object (archive parts rewrite
	// deterministic names). Default false: the first write wins.
	Overwrite bool
}

// Info describes a stored object.
type Info struct {
	Key         string
	Size        int64
	ContentType string
	Updated     time.Time
}

// URLSigner is implemented by stores that can hand out time-limited,
// credential-free GET URLs for an object.
type URLSigner interface {
	SignedURL(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// Options configure Open. Only gs:// uses them.
type Options struct {
	// GCSClient is the client for gs:// stores. Default: a client built with
	// Application Default Credentials (closed by the store's Close). Tests
	// inject the fake server's client.
	GCSClient *storage.Client
	// PrivateKey is the PEM service-account key used to sign URLs. Default
	// none: SignBytes, then the client's credentials (a key file, or the IAM
	// signBlob API for the attached service account) are used.
	PrivateKey []byte
	// SignBytes signs URLs instead of PrivateKey (e.g. through a KMS or IAM
	// call). Default nil.
	SignBytes func([]byte) ([]byte, error)
	// SignerEmail is the service account that signs URLs (GoogleAccessID).
	// Default: detected from the client's credentials.
	SignerEmail string
	// SignURLs makes the gs:// store implement URLSigner. Default false.
	SignURLs bool
}

// Open returns the store named by rawURL: file://DIR (DIR may be relative,
// e.g. file://./.mio/blobs; it is created if missing) or gs://BUCKET/PREFIX
// (PREFIX may be empty; an object's name is PREFIX/key).
func Open(ctx context.Context, rawURL string, opts Options) (Store, error) {
	switch {
	case strings.HasPrefix(rawURL, "file://"):
		return openFile(strings.TrimPrefix(rawURL, "file://"))
	case strings.HasPrefix(rawURL, "gs://"):
		return openGCS(ctx, strings.TrimPrefix(rawURL, "gs://"), opts)
	default:
		return nil, fmt.Errorf("blob: open %q: scheme must be file:// or gs://", rawURL)
	}
}
