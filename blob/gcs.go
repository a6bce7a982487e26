package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
)

// gcsChunkSize is the storage.Writer chunk: each in-flight Put buffers one
// chunk (not the object) and retries per chunk. 8 MiB keeps memory modest
// while a 25 MiB attachment still takes only a few requests.
const gcsChunkSize = 8 << 20

// maxSignedURLTTL is the longest V4 signed URL GCS accepts.
const maxSignedURLTTL = 7 * 24 * time.Hour

// gcsStore keeps key as object PREFIX/key in one bucket.
type gcsStore struct {
	client     *storage.Client
	ownsClient bool
	bucket     *storage.BucketHandle
	prefix     string // "" or "p/" (with the trailing slash)
}

// signingGCSStore is a gcsStore that also implements URLSigner.
type signingGCSStore struct {
	*gcsStore
	signer     string
	privateKey []byte
	signBytes  func([]byte) ([]byte, error)
}

func openGCS(ctx context.Context, rest string, opts Options) (Store, error) {
	bucket, prefix, _ := strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucket == "" {
		return nil, fmt.Errorf("blob: open gs://%s: missing bucket", rest)
	}
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return nil, fmt.Errorf("blob: open gs://%s: prefix: %w", rest, err)
		}
		prefix += "/"
	}
	client, owns := opts.GCSClient, false
	if client == nil {
		c, err := storage.NewClient(ctx)
		if err != nil {
			return nil, fmt.Errorf("blob: open gs://%s: %w", rest, err)
		}
		client, owns = c, true
	}
	s := &gcsStore{client: client, ownsClient: owns, bucket: client.Bucket(bucket), prefix: prefix}
	if !opts.SignURLs {
		return s, nil
	}
	return &signingGCSStore{gcsStore: s, signer: opts.SignerEmail, privateKey: opts.PrivateKey, signBytes: opts.SignBytes}, nil
}

// Close implements io.Closer: it closes the client if Open created it.
func (s *gcsStore) Close() error {
	if s.ownsClient {
		return s.client.Close()
	}
	return nil
}

func (s *gcsStore) object(key string) *storage.ObjectHandle {
	return s.bucket.Object(s.prefix + key)
}

func (s *gcsStore) Put(ctx context.Context, key string, r io.Reader, opts PutOptions) (Info, bool, error) {
	if err := checkKey(key); err != nil {
		return Info{}, false, err
	}
	obj := s.object(key)
	if !opts.Overwrite {
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	}
	// Cancelling wctx aborts the upload, so a failed copy never commits a
	// truncated object.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := obj.NewWriter(wctx)
	w.ChunkSize = gcsChunkSize
	w.ContentType = opts.ContentType
	if _, err := io.Copy(w, r); err != nil {
		cancel()
		_ = w.Close()
		if isPreconditionFailed(err) { // a chunk upload hit an existing object
			info, serr := s.Stat(ctx, key)
			return info, false, serr
		}
		return Info{}, false, fmt.Errorf("blob: put %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		if !opts.Overwrite && isPreconditionFailed(err) {
			info, serr := s.Stat(ctx, key)
			return info, false, serr
		}
		return Info{}, false, fmt.Errorf("blob: put %s: %w", key, err)
	}
	return s.info(w.Attrs()), true, nil
}

func isPreconditionFailed(err error) bool {
	var gerr *googleapi.Error
	return errors.As(err, &gerr) && gerr.Code == http.StatusPreconditionFailed
}

func (s *gcsStore) info(a *storage.ObjectAttrs) Info {
	return Info{
		Key:         strings.TrimPrefix(a.Name, s.prefix),
		Size:        a.Size,
		ContentType: a.ContentType,
		Updated:     a.Updated,
	}
}

func (s *gcsStore) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := checkKey(key); err != nil {
		return nil, Info{}, err
	}
	rd, err := s.object(key).NewReader(ctx)
	if err != nil {
		return nil, Info{}, gcsErr("get", key, err)
	}
	info := Info{Key: key, Size: rd.Attrs.Size, ContentType: rd.Attrs.ContentType, Updated: rd.Attrs.LastModified}
	return rd, info, nil
}

func (s *gcsStore) Stat(ctx context.Context, key string) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, err
	}
	a, err := s.object(key).Attrs(ctx)
	if err != nil {
		return Info{}, gcsErr("stat", key, err)
	}
	return s.info(a), nil
}

func (s *gcsStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.object(key).Delete(ctx); err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

func (s *gcsStore) List(ctx context.Context, prefix string, fn func(Info) error) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	q := &storage.Query{Prefix: s.prefix + prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "ContentType", "Updated"}); err != nil {
		return fmt.Errorf("blob: list %q: %w", prefix, err)
	}
	it := s.bucket.Objects(ctx, q)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("blob: list %q: %w", prefix, err)
		}
		if err := fn(s.info(a)); err != nil {
			return err
		}
	}
}

func gcsErr(op, key string, err error) error {
	if errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("blob: %s %s: %w", op, key, ErrNotFound)
	}
	return fmt.Errorf("blob: %s %s: %w", op, key, err)
}

// SignedURL returns a V4 signed GET URL for key valid for ttl (at most
// 7 days). It does not check that the object exists.
func (s *signingGCSStore) SignedURL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if ttl <= 0 || ttl > maxSignedURLTTL {
		return "", fmt.Errorf("blob: sign %s: ttl %v outside (0, %v]", key, ttl, maxSignedURLTTL)
	}
	u, err := s.bucket.SignedURL(s.prefix+key, &storage.SignedURLOptions{
		Scheme:         storage.SigningSchemeV4,
		Method:         http.MethodGet,
		Expires:        time.Now().Add(ttl),
		GoogleAccessID: s.signer,
		PrivateKey:     s.privateKey,
		SignBytes:      s.signBytes,
	})
	if err != nil {
		return "", fmt.Errorf("blob: sign %s: %w", key, err)
	}
	return u, nil
}
