package blob

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidKey(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"k", "a/b/c", "attachments/sha256/ab/cd/abcd", "mio/channel_type=slack/date=2026-01-02/part-1.ndjson", "a..b", "ünïcode/ok", "sp ace", strings.Repeat("k", 900)} {
		require.True(t, ValidKey(key), "%q", key)
	}
	for _, key := range invalidKeys {
		require.False(t, ValidKey(key), "%q", key)
	}
}

func TestCheckPrefix(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "a", "a/", "a/b", "attachments/sha256/a"} {
		require.NoError(t, checkPrefix(p), "%q", p)
	}
	for _, p := range []string{"/", "/a", "../", "a/../", ".", "a/.", "a//", `a\`, "a\x00"} {
		require.ErrorIs(t, checkPrefix(p), ErrInvalidKey, "%q", p)
	}
}

func TestAttachmentKey(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("hello"))
	h := hex.EncodeToString(sum[:])
	require.Equal(t, "attachments/sha256/2c/f2/2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", AttachmentKey(h))
	require.Equal(t, AttachmentKey(h), AttachmentKey(strings.ToUpper(h)))
	require.True(t, ValidKey(AttachmentKey(h)))
	for _, bad := range []string{"", "abcd", h[:63], h + "0", "zz" + h[2:], "../" + h[3:]} {
		require.Empty(t, AttachmentKey(bad), "%q", bad)
	}
}
