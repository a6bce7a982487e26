package envelope

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidChannelType(t *testing.T) {
	t.Parallel()
	for _, s := range []string{ChannelSlack, ChannelZohoCliq, ChannelGoogleChat, "x", "a1_b2", strings.Repeat("a", MaxChannelTypeLen)} {
		require.True(t, ValidChannelType(s), s)
	}
	for _, s := range []string{"", "Slack", "1slack", "_slack", "zoho-cliq", "slack/x", "slack ", "sl\u00e4ck", strings.Repeat("a", MaxChannelTypeLen+1)} {
		require.False(t, ValidChannelType(s), s)
	}
}
