package sources_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/sources"
)

// plain is a channel without a source.
type plain struct{ slug string }

func (c plain) Type() string                                        { return c.slug }
func (plain) Info() channels.Info                                   { return channels.Info{} }
func (plain) NewInbound(channels.Account) (channels.Inbound, error) { return nil, nil }

// running is a channel with a source that records its deps and runs
// until its context ends.
type running struct {
	plain
	mu    sync.Mutex
	deps  []channels.SourceDeps
	fails error
}

func (c *running) RunSource(ctx context.Context, deps channels.SourceDeps) error {
	c.mu.Lock()
	c.deps = append(c.deps, deps)
	c.mu.Unlock()
	<-ctx.Done()
	return c.fails
}

func (c *running) started() []channels.SourceDeps {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deps
}

// TestRunStartsEverySource: every registered channel implementing
// channels.Source runs once, with a store and this process's holder id;
// channels without one are not asked; Run returns when ctx ends, with
// the sources' errors.
func TestRunStartsEverySource(t *testing.T) {
	t.Parallel()
	a, b := &running{plain: plain{"a"}}, &running{plain: plain{"b"}, fails: errors.New("b broke")}
	reg := channels.NewRegistry(a, b, plain{"c"})
	holder := uuid.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sources.Run(ctx, sources.Config{Registry: reg, Holder: holder}) }()
	require.Eventually(t, func() bool { return len(a.started()) == 1 && len(b.started()) == 1 }, 5*time.Second, 10*time.Millisecond)
	for _, d := range [][]channels.SourceDeps{a.started(), b.started()} {
		require.Equal(t, holder, d[0].Holder)
		require.NotNil(t, d[0].Store)
		require.NotNil(t, d[0].Logger)
	}
	cancel()
	err := <-done
	require.ErrorContains(t, err, "b source: b broke")
	require.Len(t, a.started(), 1)
}
