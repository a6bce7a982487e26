package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/miohq/mio/client"
)

// An agent consuming messages: create (or update) a durable consumer,
// then handle deliveries until the context ends. The handler's lease is
// extended while it runs; returning nil acks, client.Term stops
// redelivery, any other error naks with backoff.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := client.New("http://localhost:8080", os.Getenv("MIO_TOKEN"))
	if _, err := c.PutConsumer(ctx, "agent", client.ConsumerConfig{
		Ordering: "conversation", // one message per conversation at a time, in order
		AckWait:  client.Duration(30 * time.Second),
	}); err != nil {
		log.Print(err)
		return
	}
	err := c.Consume(ctx, "agent", func(ctx context.Context, d client.Delivery) error {
		if d.Message.Text == "" {
			return client.Term("nothing to answer")
		}
		fmt.Printf("%s in %s: %s\n", d.Message.Sender.ID, d.Message.Conversation.ID, d.Message.Text)
		return nil
	}, client.ConsumeOptions{Concurrency: 4})
	log.Print(err)
}
