package client

import (
	"context"
	"errors"
	"sync"
	"time"
)

// TermError makes Consume terminate a delivery instead of nak'ing it.
type TermError struct{ Reason string }

func (e *TermError) Error() string { return "terminate: " + e.Reason }

// Term returns an error that terminates the delivery (no redelivery).
func Term(reason string) error { return &TermError{Reason: reason} }

// ConsumeOptions tune Consume.
type ConsumeOptions struct {
	// Batch per pull. Default 10.
	Batch int
	// Concurrency is how many handlers run at once. Default 1.
	Concurrency int
	// Wait is the long-poll wait per pull. Default 30s.
	Wait time.Duration
	// NakDelay is the base delay of a nak after a handler error, doubled
	// per delivery count (capped at 5 min). Default 1s.
	NakDelay time.Duration
	// ExtendEvery renews leases of running handlers. Default: a third of
	// the consumer's ack_wait.
	ExtendEvery time.Duration
	// OnError observes errors Consume recovers from (nil: ignored).
	OnError func(error)
}

// Consume pulls and handles deliveries until ctx is done, then waits for
// running handlers and returns ctx.Err(). A nil handler result acks; a
// *TermError terminates; any other error naks with backoff. While a handler
// runs its lease is extended. Pull failures are retried with backoff.
func (c *Client) Consume(ctx context.Context, consumer string, handler func(context.Context, Delivery) error, opts ConsumeOptions) error {
	if opts.Batch <= 0 {
		opts.Batch = 10
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.Wait <= 0 {
		opts.Wait = 30 * time.Second
	}
	if opts.NakDelay <= 0 {
		opts.NakDelay = time.Second
	}
	report := func(err error) {
		if opts.OnError != nil && err != nil && ctx.Err() == nil {
			opts.OnError(err)
		}
	}
	if opts.ExtendEvery <= 0 {
		info, err := c.GetConsumer(ctx, consumer)
		if err != nil {
			return err
		}
		opts.ExtendEvery = max(time.Duration(info.AckWait)/3, 100*time.Millisecond)
	}
	// Settle with a context that outlives ctx briefly, so handlers that
	// finish during shutdown still ack.
	settleCtx := context.WithoutCancel(ctx)
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		batch := min(opts.Batch, cap(sem)-len(sem))
		if batch == 0 {
			select {
			case sem <- struct{}{}:
				<-sem
			case <-ctx.Done():
			}
			continue
		}
		ds, err := c.Pull(ctx, consumer, batch, opts.Wait)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			report(err)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		for _, d := range ds {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				c.handle(ctx, settleCtx, consumer, d, handler, opts, report)
			}()
		}
	}
	wg.Wait()
	return ctx.Err()
}

func (c *Client) handle(ctx, settleCtx context.Context, consumer string, d Delivery, handler func(context.Context, Delivery) error, opts ConsumeOptions, report func(error)) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(opts.ExtendEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_, err := c.Extend(settleCtx, consumer, d.DeliveryID)
				report(err)
			}
		}
	}()
	hctx, span := c.startHandlerSpan(ctx, consumer, d)
	err := handler(hctx, d)
	endHandlerSpan(span, err)
	close(done)
	var term *TermError
	switch {
	case err == nil:
		_, err = c.Ack(settleCtx, consumer, d.DeliveryID)
		report(err)
	case errors.As(err, &term):
		_, err = c.Term(settleCtx, consumer, term.Reason, d.DeliveryID)
		report(err)
	default:
		report(err)
		delay := min(opts.NakDelay<<min(d.DeliveryCount-1, 10), 5*time.Minute)
		_, err = c.Nak(settleCtx, consumer, delay, d.DeliveryID)
		report(err)
	}
}
