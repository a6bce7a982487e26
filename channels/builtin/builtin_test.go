package builtin

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/envelope"
)

// TestRegistryChannels: every channel is listed under its own slug, a
// slug of envelope.ValidChannelType's form, with a display name (the
// row mio.channel_types holds).
func TestRegistryChannels(t *testing.T) {
	t.Parallel()
	r := Registry(Options{})
	require.NotEmpty(t, r.Types())
	for _, d := range r.Describe() {
		require.True(t, envelope.ValidChannelType(d.Slug), d.Slug)
		ch, ok := r.Get(d.Slug)
		require.True(t, ok, d.Slug)
		require.Equal(t, d.Slug, ch.Type())
		require.NotEmpty(t, d.DisplayName, d.Slug)
	}
}
