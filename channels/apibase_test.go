package channels

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAPIBasePolicyCheck(t *testing.T) {
	t.Parallel()
	prod := APIBasePolicy{}
	listed := APIBasePolicy{HTTPHosts: []string{"bot-api.internal"}}
	dev := APIBasePolicy{AllowHTTP: true}
	tests := []struct {
		name string
		p    APIBasePolicy
		raw  string
		want string // "" means an error
	}{
		{"https", prod, "https://slack-gov.com/api/", "https://slack-gov.com/api"},
		{"https with port", prod, "https://proxy.example:8443/api/v10", "https://proxy.example:8443/api/v10"},
		{"http refused in prod", prod, "http://bot-api.internal:8081", ""},
		{"http on a listed host", listed, "http://BOT-API.internal:8081", "http://BOT-API.internal:8081"},
		{"http on another host", listed, "http://other.internal", ""},
		{"http in dev", dev, "http://127.0.0.1:9999/", "http://127.0.0.1:9999"},
		{"relative", dev, "/api", ""},
		{"no scheme", dev, "slack.com/api", ""},
		{"ftp", dev, "ftp://slack.com/api", ""},
		{"query", dev, "https://slack.com/api?x=1", ""},
		{"user info", dev, "https://u:p@slack.com/api", ""},
		{"empty host", dev, "https:///api", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.p.Check("x settings api_base_url", tt.raw)
			if tt.want == "" {
				require.ErrorIs(t, err, ErrInvalidConfig)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestAccountAPIBase(t *testing.T) {
	t.Parallel()
	p := APIBasePolicy{}
	got, err := p.AccountAPIBase("telegram", nil, "https://api.telegram.org/")
	require.NoError(t, err)
	require.Equal(t, "https://api.telegram.org", got, "no settings: the default")
	got, err = p.AccountAPIBase("telegram", json.RawMessage(`{"api_base_url":"https://tg.example/","other":1}`), "https://api.telegram.org")
	require.NoError(t, err)
	require.Equal(t, "https://tg.example", got)
	_, err = p.AccountAPIBase("telegram", json.RawMessage(`{"api_base_url":"http://tg.example"}`), "https://api.telegram.org")
	require.ErrorContains(t, err, "telegram settings api_base_url")
	_, err = p.AccountAPIBase("telegram", json.RawMessage(`[1]`), "https://api.telegram.org")
	require.ErrorIs(t, err, ErrInvalidConfig)
}
