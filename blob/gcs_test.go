package blob

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestGCSObjectNames(t *testing.T) {
	t.Parallel()
	srv := newFakeGCS(t)
	ctx := context.Background()
	for _, tc := range []struct{ url, want string }{
		{"gs://" + testBucket + "/env/blobs", "env/blobs/a/b"},
		{"gs://" + testBucket + "/slashes/", "slashes/a/b"},
		{"gs://" + testBucket, "a/b"},
	} {
		s, err := Open(ctx, tc.url, Options{GCSClient: srv.Client()})
		require.NoError(t, err)
		info, created := put(t, s, "a/b", tc.url, PutOptions{})
		require.True(t, created, tc.url)
		require.Equal(t, "a/b", info.Key, "Info.Key is relative to the prefix")

		obj, err := srv.GetObject(testBucket, tc.want)
		require.NoError(t, err, tc.url)
		require.Equal(t, tc.url, string(obj.Content))
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, raw := range []string{"s3://bucket", "gs://", "gs:///prefix", "gs://b/../x", "file://", "/plain/path"} {
		_, err := Open(ctx, raw, Options{})
		require.Error(t, err, raw)
	}
}

func TestSignedURL(t *testing.T) {
	t.Parallel()
	srv := newFakeGCS(t)
	ctx := context.Background()

	plain, err := Open(ctx, "gs://"+testBucket+"/p", Options{GCSClient: srv.Client()})
	require.NoError(t, err)
	_, ok := plain.(URLSigner)
	require.False(t, ok, "signing is opt-in")

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	signed := 0

	for name, opts := range map[string]Options{
		"PrivateKey": {PrivateKey: pemKey},
		"SignBytes": {SignBytes: func(b []byte) ([]byte, error) {
			signed++
			return []byte("signature"), nil
		}},
	} {
		t.Run(name, func(t *testing.T) {
			opts.GCSClient = srv.Client()
			opts.SignURLs = true
			opts.SignerEmail = "mio@project.iam.gserviceaccount.com"
			s, err := Open(ctx, "gs://"+testBucket+"/p", opts)
			require.NoError(t, err)
			signer, ok := s.(URLSigner)
			require.True(t, ok)

			raw, err := signer.SignedURL(ctx, "attachments/x y", 15*time.Minute)
			require.NoError(t, err)
			u, err := url.Parse(raw)
			require.NoError(t, err)
			require.Equal(t, "https", u.Scheme)
			require.Equal(t, "storage.googleapis.com", u.Host)
			require.Equal(t, "/"+testBucket+"/p/attachments/x y", u.Path)
			q := u.Query()
			require.Equal(t, "GOOG4-RSA-SHA256", q.Get("X-Goog-Algorithm"))
			require.True(t, strings.HasPrefix(q.Get("X-Goog-Credential"), "mio@project.iam.gserviceaccount.com/"), q.Get("X-Goog-Credential"))
			exp, err := strconv.Atoi(q.Get("X-Goog-Expires"))
			require.NoError(t, err)
			require.InDelta(t, 900, exp, 1)
			require.Equal(t, "host", q.Get("X-Goog-SignedHeaders"))
			require.NotEmpty(t, q.Get("X-Goog-Signature"))

			_, err = signer.SignedURL(ctx, "k", 8*24*time.Hour)
			require.Error(t, err, "over the V4 maximum")
			_, err = signer.SignedURL(ctx, "../k", time.Minute)
			require.ErrorIs(t, err, ErrInvalidKey)
		})
	}
	require.Equal(t, 1, signed)
}

func TestGCSGetStreams(t *testing.T) {
	t.Parallel()
	srv := newFakeGCS(t)
	s, err := Open(context.Background(), "gs://"+testBucket, Options{GCSClient: srv.Client()})
	require.NoError(t, err)
	put(t, s, "k", "0123456789", PutOptions{ContentType: "text/plain"})
	rc, info, err := s.Get(context.Background(), "k")
	require.NoError(t, err)
	defer rc.Close()
	require.Equal(t, int64(10), info.Size)
	require.Equal(t, "text/plain", info.ContentType)
	require.False(t, info.Updated.IsZero())
	b := make([]byte, 4)
	_, err = io.ReadFull(rc, b)
	require.NoError(t, err)
	require.Equal(t, "0123", string(b))
}
