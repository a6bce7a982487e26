package secretbox

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	b, err := New(key)
	require.NoError(t, err)

	sealed, err := b.Seal([]byte(`{"bot_token":"xoxb-1"}`), []byte("acct-1/credentials"))
	require.NoError(t, err)
	require.False(t, bytes.Contains(sealed, []byte("xoxb")), "plaintext must not appear in sealed value")

	pt, err := b.Open(sealed, []byte("acct-1/credentials"))
	require.NoError(t, err)
	require.Equal(t, `{"bot_token":"xoxb-1"}`, string(pt))

	_, err = b.Open(sealed, []byte("acct-2/credentials"))
	require.ErrorIs(t, err, ErrOpen, "a value moved to another owner must not open")

	other := make([]byte, 32)
	_, _ = rand.Read(other)
	b2, _ := New(other)
	_, err = b2.Open(sealed, []byte("acct-1/credentials"))
	require.ErrorIs(t, err, ErrOpen)

	sealed[len(sealed)-1] ^= 1
	_, err = b.Open(sealed, []byte("acct-1/credentials"))
	require.ErrorIs(t, err, ErrOpen)

	nilSealed, err := b.Seal(nil, nil)
	require.NoError(t, err)
	require.Nil(t, nilSealed)

	_, err = New([]byte("short"))
	require.Error(t, err)
}
