package consume_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/client"
	"github.com/miohq/mio/db"
)

func TestZZDebug(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	_, _ = b.client.PutConsumer(ctx, "a", client.ConsumerConfig{MaxAckPending: 100000})
	for i := 0; i < 40; i++ {
		txt := make([]string, 100)
		for j := range txt {
			txt[j] = "x"
		}
		b.insert(t, b.tenant, b.account, "c", txt...)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ds, err := b.client.Pull(ctx, "a", 100, 0)
				if err != nil || len(ds) == 0 {
					return
				}
				_, _ = b.client.Ack(ctx, "a", deliveryIDs(ds)...)
			}
		}()
	}
	wg.Wait()
	_ = db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		var swept, above, total, pos int64
		tx.QueryRow(ctx, "SELECT swept FROM mio.consumer_state WHERE name='a'").Scan(&swept)
		tx.QueryRow(ctx, "SELECT count(*) FILTER (WHERE id > $1), count(*) FROM mio.consumer_leases WHERE consumer_name='a'", swept).Scan(&above, &total)
		tx.QueryRow(ctx, "SELECT count(*) FROM mio.consumer_positions WHERE consumer_name='a'").Scan(&pos)
		t.Logf("swept=%d above=%d total=%d positions=%d", swept, above, total, pos)
		rows, _ := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+`WITH c AS (
    SELECT s.swept, s.log_hi FROM mio.consumer_state AS s WHERE s.tenant_id = $1 AND s.name = 'a')
    SELECT r.id FROM mio.consumer_leases r WHERE r.tenant_id = $1 AND r.consumer_name = 'a' AND r.id > (SELECT c.swept FROM c)`, b.tenant)
		for rows.Next() {
			var l string
			rows.Scan(&l)
			t.Log(l)
		}
		rows.Close()
		return nil
	})
}
