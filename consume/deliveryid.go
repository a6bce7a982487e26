package consume

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"hash"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/db"
)

// Delivery ids as callers see them.
//
// Inside the database a lease-range member's delivery id is
// db.LeaseDeliveryID(range, index): the range id, the member index and a
// fixed tail, so consecutive pulls hand out consecutive, guessable ids.
// Callers never see that form: on the way out (Pull) the fixed tail (62
// bits after the variant) is replaced by a tag, an HMAC-SHA256 of the
// tenant, the consumer and the range and index, keyed with the install's
// random delivery-id key (mio.delivery_id_key); on the way in (Settle,
// AckLiveTx) the tag is checked and the fixed tail put back. An id whose tag
// does not match, or which comes in the untagged database form, settles
// nothing ("unknown or expired delivery"). Random (version 4) delivery
// ids of per-message redeliveries pass through unchanged.
//
// The tag is a function of the range, so it is the same on every replica,
// after restarts, and when a member moves out of its range into a
// per-message row (that row keeps the database form). Nothing in the
// database changes.

// deliveryIDs tags and checks lease-range delivery ids. The key is read
// from the database on first use.
type deliveryIDs struct {
	pool *pgxpool.Pool
	mu   sync.Mutex
	key  []byte
}

// ready loads the key once.
func (d *deliveryIDs) ready(ctx context.Context) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.key != nil {
		return d.key, nil
	}
	k, err := db.DeliveryIDKey(ctx, d.pool)
	if err != nil {
		return nil, fmt.Errorf("delivery id key: %w", err)
	}
	d.key = k
	return k, nil
}

// seal replaces the database form of lease-range delivery ids in ds by
// the tagged form callers see.
func (d *deliveryIDs) seal(ctx context.Context, tenantID uuid.UUID, name string, ds []Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	key, err := d.ready(ctx)
	if err != nil {
		return err
	}
	h := hmac.New(sha256.New, key)
	for i := range ds {
		if _, _, ok := db.ParseLeaseDeliveryID(ds[i].DeliveryID); ok {
			id := ds[i].DeliveryID
			copy(id[8:], deliveryTag(h, tenantID, name, id))
			ds[i].DeliveryID = id
		}
	}
	return nil
}

// open returns the database form of callers' delivery ids, in order: a
// tagged lease-range id whose tag checks becomes the database form; one
// whose tag does not, or an id in the untagged database form, becomes
// uuid.Nil (no delivery has it); other ids are returned as they are.
func (d *deliveryIDs) open(ctx context.Context, tenantID uuid.UUID, name string, ids []uuid.UUID) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, len(ids))
	var h hash.Hash
	for i, id := range ids {
		if _, _, ok := db.ParseLeaseDeliveryID(id); ok {
			continue // untagged: refused
		}
		lease, idx, ok := parseTagged(id)
		if !ok {
			out[i] = id
			continue
		}
		if h == nil {
			key, err := d.ready(ctx)
			if err != nil {
				return nil, err
			}
			h = hmac.New(sha256.New, key)
		}
		if hmac.Equal(id[8:], deliveryTag(h, tenantID, name, id)) {
			out[i] = db.LeaseDeliveryID(lease, idx)
		}
	}
	return out, nil
}

// parseTagged reads the range and member index of an id of the lease-range
// layout (version 8, RFC 9562 variant) whatever its tail.
func parseTagged(id uuid.UUID) (lease int64, idx int, ok bool) {
	if id.Version() != 8 || id.Variant() != uuid.RFC4122 {
		return 0, 0, false
	}
	var head uuid.UUID
	copy(head[:8], id[:8])
	lease = int64(head[0])<<40 | int64(head[1])<<32 | int64(head[2])<<24 | int64(head[3])<<16 | int64(head[4])<<8 | int64(head[5])
	idx = int(head[6]&0x0f)<<8 | int(head[7])
	return lease, idx, true
}

// ParseDeliveryID returns the lease range and member index a delivery id
// of a lease range names, as callers see it (tagged), without checking the
// tag; ok is false for per-message (random) delivery ids. For tests and
// diagnostics.
func ParseDeliveryID(id uuid.UUID) (lease int64, idx int, ok bool) {
	if _, _, untagged := db.ParseLeaseDeliveryID(id); untagged {
		return 0, 0, false
	}
	return parseTagged(id)
}

// deliveryTag is the 8-byte tail of the tagged form of id (whose first 8
// bytes name the range and member): the RFC 9562 variant bits, then 62
// bits of HMAC over tenant, consumer and those 8 bytes.
func deliveryTag(h hash.Hash, tenantID uuid.UUID, name string, id uuid.UUID) []byte {
	h.Reset()
	h.Write(tenantID[:])
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(id[:8])
	sum := h.Sum(nil)
	tag := sum[:8]
	tag[0] = 0x80 | tag[0]&0x3f
	return tag
}

// Settle applies action to delivery ids as callers see them. Unknown,
// expired-and-redelivered and forged ids are reported per id, not as an
// error.
func (s *Service) Settle(ctx context.Context, tenantID uuid.UUID, name, action string, ids []uuid.UUID, opts SettleOptions) ([]SettleResult, error) {
	inner, err := s.ids.open(ctx, tenantID, name, ids)
	if err != nil {
		return nil, err
	}
	res, err := s.settle(ctx, tenantID, name, action, inner, opts)
	for i := range res {
		res[i].DeliveryID = ids[i]
	}
	return res, err
}
