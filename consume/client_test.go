package consume_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/client"
)

// TestClientConsume drives the Go client's Consume loop: a handler slower
// than ack_wait keeps its lease (extension), an error is nak'd and comes
// back, Term dead-letters, nil acks.
func TestClientConsume(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := b.client.PutConsumer(ctx, "loop", client.ConsumerConfig{AckWait: client.Duration(time.Second)})
	require.NoError(t, err)
	b.insert(t, b.tenant, b.account, "c1", "slow")
	b.insert(t, b.tenant, b.account, "c2", "flaky")
	b.insert(t, b.tenant, b.account, "c3", "poison")

	var (
		mu     sync.Mutex
		counts = map[string][]int{}
	)
	done := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	go func() {
		defer close(done)
		_ = b.client.Consume(runCtx, "loop", func(ctx context.Context, d client.Delivery) error {
			mu.Lock()
			counts[d.Message.Text] = append(counts[d.Message.Text], d.DeliveryCount)
			mu.Unlock()
			switch d.Message.Text {
			case "slow":
				time.Sleep(2500 * time.Millisecond) // > 2 × ack_wait: only extension keeps the lease
				return nil
			case "flaky":
				if d.DeliveryCount == 1 {
					return errors.New("try again")
				}
				return nil
			default:
				return client.Term("cannot handle")
			}
		}, client.ConsumeOptions{Concurrency: 3, Wait: 200 * time.Millisecond, NakDelay: 50 * time.Millisecond, ExtendEvery: 250 * time.Millisecond})
	}()
	require.Eventually(t, func() bool {
		info, err := b.client.GetConsumer(ctx, "loop")
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		return info.Stats.Pending == 0 && info.Stats.AckPending == 0 && info.Stats.Dead == 1 && len(counts["flaky"]) == 2 && len(counts["slow"]) == 1
	}, 20*time.Second, 50*time.Millisecond)
	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1}, counts["slow"], "an extended lease is not redelivered")
	require.Equal(t, []int{1, 2}, counts["flaky"])
	require.Equal(t, []int{1}, counts["poison"])
}
