package db

import (
	"context"
	"encoding/binary"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// leaseIDTail is the fixed last 8 bytes of a lease-range delivery id
// (variant bits, then "miolse"); mio.lease_delivery_id builds the same.
var leaseIDTail = [8]byte{0x80, 0x00, 0x6d, 0x69, 0x6f, 0x6c, 0x73, 0x65}

// LeaseDeliveryID is the delivery id of member idx of lease range
// leaseID: an RFC 9562 version 8 UUID carrying both
// (mio.lease_delivery_id).
func LeaseDeliveryID(leaseID int64, idx int) uuid.UUID {
	var u uuid.UUID
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(leaseID))
	copy(u[0:6], b[2:8])
	u[6] = 0x80 | byte(idx>>8)&0x0f
	u[7] = byte(idx)
	copy(u[8:], leaseIDTail[:])
	return u
}

// ParseLeaseDeliveryID returns the lease range and member index a
// delivery id names, or ok false for any other id (random per-message
// delivery ids are version 4).
func ParseLeaseDeliveryID(u uuid.UUID) (leaseID int64, idx int, ok bool) {
	if u[6]>>4 != 8 || [8]byte(u[8:]) != leaseIDTail {
		return 0, 0, false
	}
	var b [8]byte
	copy(b[2:], u[0:6])
	return int64(binary.BigEndian.Uint64(b[:])), int(u[6]&0x0f)<<8 | int(u[7]), true
}

// splitLeaseIDs separates lease-range delivery ids (as parallel arrays of
// range ids and member indexes) from the others.
func splitLeaseIDs(ids []uuid.UUID) (leases []int64, idxs []int32, rest []uuid.UUID) {
	for _, id := range ids {
		if l, i, ok := ParseLeaseDeliveryID(id); ok {
			leases, idxs = append(leases, l), append(idxs, int32(i))
		} else {
			rest = append(rest, id)
		}
	}
	return leases, idxs, rest
}

// LeaseMaterialize moves the outstanding members of c's expired lease
// ranges above its sweep (of all of them when every) into per-message
// leased deliveries with the same delivery ids and expiry, recording them
// settled in their ranges. It returns how many deliveries it wrote.
func LeaseMaterialize(ctx context.Context, tx DBTX, c *Consumer, every bool) (int64, error) {
	return leaseMaterialize(ctx, tx, c, every, pgtype.Int2{})
}

func leaseMaterialize(ctx context.Context, tx DBTX, c *Consumer, every bool, gen pgtype.Int2) (int64, error) {
	ids, err := queries().LeaseMovable(ctx, tx, &dbsqlc.LeaseMovableParams{
		TenantID: c.TenantID, ConsumerName: c.Name, Swept: c.Swept, Every: every, Gen: gen})
	if err != nil || len(ids) == 0 {
		return 0, translate(err)
	}
	if _, err := queries().LeaseLock(ctx, tx, &dbsqlc.LeaseLockParams{LeaseIds: ids}); err != nil {
		return 0, translate(err)
	}
	n, err := queries().LeaseMaterialize(ctx, tx, &dbsqlc.LeaseMaterializeParams{
		TenantID: c.TenantID, ConsumerName: c.Name, Swept: c.Swept, Every: every, Gen: gen})
	return n, translate(err)
}

// LeaseMaterializeMembers moves the lease-range members among ids out of
// their ranges into per-message leased deliveries (same ids, same expiry),
// so that a nak, term or extend can apply to each alone. Other ids are
// ignored. It returns the ids moved.
func LeaseMaterializeMembers(ctx context.Context, tx DBTX, c *Consumer, ids []uuid.UUID) ([]uuid.UUID, error) {
	leases, idxs, _ := splitLeaseIDs(ids)
	if len(leases) == 0 {
		return nil, nil
	}
	if _, err := queries().LeaseLock(ctx, tx, &dbsqlc.LeaseLockParams{LeaseIds: leases}); err != nil {
		return nil, translate(err)
	}
	rows, err := queries().LeaseMaterializeMembers(ctx, tx, &dbsqlc.LeaseMaterializeMembersParams{
		TenantID: c.TenantID, ConsumerName: c.Name, LeaseIds: leases, Idxs: idxs})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		out[i] = LeaseDeliveryID(r.LeaseID, int(r.Idx))
	}
	return out, nil
}
