package main

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// chaosNATS is the in-process nats-server (JetStream) of a chaos run: a
// `mio serve --role bridge` process publishes to its stream MIO and is
// killed and restarted like the others.
type chaosNATS struct {
	url string
	js  jetstream.JetStream
}

func startChaosNATS(t *testing.T) *chaosNATS {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	t.Cleanup(ns.Shutdown)
	n := &chaosNATS{url: fmt.Sprintf("nats://127.0.0.1:%d", ns.Addr().(*net.TCPAddr).Port)}
	nc, err := nats.Connect(n.url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	n.js, err = jetstream.New(nc)
	require.NoError(t, err)
	return n
}

// inboundCount is how many inbound events (subject mio.inbound.>) the
// stream holds.
func (n *chaosNATS) inboundCount(ctx context.Context) (int, error) {
	s, err := n.js.Stream(ctx, "MIO")
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter("mio.inbound.>"))
	if err != nil {
		return 0, err
	}
	total := 0
	for _, c := range info.State.Subjects {
		total += int(c)
	}
	return total, nil
}

// inboundIDs reads the stream's inbound events: Nats-Msg-Id → count.
func (n *chaosNATS) inboundIDs(ctx context.Context, total int) (map[string]int, error) {
	s, err := n.js.Stream(ctx, "MIO")
	if err != nil {
		return nil, err
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"mio.inbound.>"}})
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	for got := 0; got < total; {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			seen[m.Headers().Get(jetstream.MsgIDHeader)]++
			n++
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("read %d of %d inbound events, then nothing", got, total)
		}
		got += n
	}
	return seen, nil
}

// checkBridge waits (up to limit) until the stream holds an inbound event
// for every stored message, then checks each is there exactly once under
// its Nats-Msg-Id (inbound:<message id>, bridge.MsgID) and nothing else
// is; it returns how many.
func (r *chaosRun) checkBridge(ctx context.Context, owner *pgxpool.Pool, limit time.Duration) int {
	t := r.t
	ids := map[string]bool{}
	rows, err := owner.Query(ctx, `SELECT id::text FROM mio.inbox`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids["inbound:"+id] = true
	}
	require.NoError(t, rows.Err())
	deadline := time.Now().Add(limit)
	n, err := r.nats.inboundCount(ctx)
	for (err != nil || n < len(ids)) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		n, err = r.nats.inboundCount(ctx)
	}
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, len(ids), "stored inbound messages missing from the stream %s after the load", limit)
	seen, err := r.nats.inboundIDs(ctx, n)
	require.NoError(t, err)
	for id := range ids {
		require.Equal(t, 1, seen[id], "stored message %s reached the stream %d times", id, seen[id])
	}
	require.Len(t, seen, len(ids), "the stream holds inbound events of messages not stored")
	require.Equal(t, len(ids), n, "duplicate inbound events in the stream")
	return n
}
