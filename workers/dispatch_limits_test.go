package workers

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels/builtin"
)

func TestBucketsFor(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	i := func(v int32) *int32 { return &v }
	defaults := defaultBuckets(builtin.Registry(builtin.Options{}))
	cases := []struct {
		name    string
		channel string
		rate    *float64
		burst   *int32
		want    []bucketSpec
	}{
		{"webhook: none", "webhook", nil, nil, nil},
		{"slack: per channel", "slack", nil, nil, []bucketSpec{{scopeConversation, 1, 3}}},
		{"telegram: per bot and per chat", "telegram", nil, nil,
			[]bucketSpec{{scopeAccount, 30, 30}, {scopeConversation, 1, 3}}},
		{"whatsapp override", "whatsapp", f(5), i(2), []bucketSpec{{scopeAccount, 5, 2}}},
		{"override without burst: one second's worth", "zoho_cliq", f(2.5), nil, []bucketSpec{{scopeAccount, 2.5, 3}}},
		{"slack with an account limit: both", "slack", f(20), nil,
			[]bucketSpec{{scopeAccount, 20, 20}, {scopeConversation, 1, 3}}},
		{"webhook with a limit", "webhook", f(5), i(1), []bucketSpec{{scopeAccount, 5, 1}}},
		{"burst alone resizes the default", "whatsapp", nil, i(10), []bucketSpec{{scopeAccount, 80, 10}}},
		{"burst alone, no account bucket", "discord", nil, i(10), []bucketSpec{{scopeConversation, 1, 5}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, bucketsFor(defaults[c.channel], c.rate, c.burst))
		})
	}
	a := uuid.New()
	require.Equal(t, "a:"+a.String(), bucketKey(scopeAccount, a, "C1"))
	require.Equal(t, "c:"+a.String()+":C1", bucketKey(scopeConversation, a, "C1"))
}

func TestBackoffFullJitter(t *testing.T) {
	t.Parallel()
	d := &Dispatcher{cfg: DispatchConfig{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second}}
	for k := 1; k <= 40; k++ {
		ceiling := min(time.Second, 100*time.Millisecond<<min(k-1, 20))
		for range 50 {
			got := d.backoff(k)
			require.GreaterOrEqual(t, got, time.Millisecond)
			require.LessOrEqual(t, got, ceiling, "attempt %d", k)
		}
	}
	require.Equal(t, "mio-00000000-0000-0000-0000-000000000000-3", attemptKey(uuid.Nil, 3))
}
