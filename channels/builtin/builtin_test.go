package builtin

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/envelope"
)

func TestRegistryHasEveryChannel(t *testing.T) {
	t.Parallel()
	r := Registry(Options{})
	for _, ct := range envelope.ChannelTypes() {
		ch, ok := r.Get(ct)
		require.True(t, ok, ct)
		require.Equal(t, ct, ch.Type())
	}
	require.Len(t, r.Types(), len(envelope.ChannelTypes()))
}
