package admin

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
)

// ConsumerInfo is a consumer with its live statistics.
type ConsumerInfo struct {
	TenantID uuid.UUID `json:"tenant_id"`
	Name     string    `json:"name"`
	// Pending counts, exactly, the matching messages not taken yet plus
	// the deliveries waiting to be redelivered (mio.queue_health's
	// pending, the lag gauge's value).
	Pending     int64 `json:"pending"`
	AckPending  int64 `json:"ack_pending"`
	Redelivered int64 `json:"redelivered"`
	Dead        int64 `json:"dead"`
	// OldestPendingAgeSeconds is the age of the oldest pending message or
	// delivery.
	OldestPendingAgeSeconds float64    `json:"oldest_pending_age_seconds"`
	LastDeliveredAt         *time.Time `json:"last_delivered_at,omitempty"`
	DeliverPolicy           string     `json:"deliver_policy"`
	Ordering                string     `json:"ordering"`
	Stage                   string     `json:"stage"`
	MaxDeliver              int        `json:"max_deliver"`
	AckWait                 string     `json:"ack_wait"`
	CreatedAt               time.Time  `json:"created_at"`
}

// ConsumerList lists the consumers of tenantID (every tenant when
// uuid.Nil) with their statistics.
func (s *Service) ConsumerList(ctx context.Context, tenantID uuid.UUID) ([]*ConsumerInfo, error) {
	tenants, err := s.tenantsOrOne(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := []*ConsumerInfo{}
	for _, t := range tenants {
		err := db.InTenantTx(ctx, s.pool, t, func(tx pgx.Tx) error {
			cs, err := db.ConsumerList(ctx, tx, t)
			if err != nil || len(cs) == 0 {
				return err
			}
			infos, err := consumerInfos(ctx, tx, t, cs)
			out = append(out, infos...)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ConsumerPage lists a keyset page of consumers with their statistics:
// of tenantID, or of every tenant (uuid.Nil; tenants oldest first), each
// tenant's by name. after is the previous page's Next.
func (s *Service) ConsumerPage(ctx context.Context, tenantID uuid.UUID, after string, limit int) (*Page[*ConsumerInfo], error) {
	cur, err := parseConsumerCursor(after)
	if err != nil {
		return nil, err
	}
	if limit, err = clampLimit(limit); err != nil {
		return nil, err
	}
	tenants, err := s.tenantsOrOne(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if cur.tenant != uuid.Nil {
		i := slices.Index(tenants, cur.tenant)
		if i < 0 {
			return nil, invalidf("after: not a cursor of this listing")
		}
		tenants = tenants[i:]
	}
	p := &Page[*ConsumerInfo]{Items: []*ConsumerInfo{}}
	for _, t := range tenants {
		afterName := ""
		if t == cur.tenant {
			afterName = cur.name
		}
		err := db.InTenantTx(ctx, s.pool, t, func(tx pgx.Tx) error {
			cs, err := db.ConsumerPage(ctx, tx, t, afterName, limit-len(p.Items))
			if err != nil || len(cs) == 0 {
				return err
			}
			infos, err := consumerInfos(ctx, tx, t, cs)
			p.Items = append(p.Items, infos...)
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(p.Items) == limit {
			last := p.Items[len(p.Items)-1]
			p.Next = consumerCursor{tenant: t, name: last.Name}.String()
			break
		}
	}
	return p, nil
}

// consumerCursor is a position in a consumer listing: after consumer name
// of tenant.
type consumerCursor struct {
	tenant uuid.UUID
	name   string
}

func (c consumerCursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.tenant.String() + "/" + c.name))
}

func parseConsumerCursor(s string) (consumerCursor, error) {
	if s == "" {
		return consumerCursor{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return consumerCursor{}, invalidf("after: not a cursor of this listing")
	}
	t, name, ok := strings.Cut(string(raw), "/")
	id, err := uuid.Parse(t)
	if !ok || err != nil {
		return consumerCursor{}, invalidf("after: not a cursor of this listing")
	}
	return consumerCursor{tenant: id, name: name}, nil
}

// ConsumerShow returns one consumer with its statistics.
func (s *Service) ConsumerShow(ctx context.Context, tenantID uuid.UUID, name string) (*ConsumerInfo, error) {
	var out *ConsumerInfo
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		c, err := db.ConsumerGet(ctx, tx, tenantID, name)
		if err != nil {
			return err
		}
		out, err = consumerInfo(ctx, tx, c)
		return err
	})
	return out, err
}

// ConsumerDelete deletes a consumer and its deliveries.
func (s *Service) ConsumerDelete(ctx context.Context, tenantID uuid.UUID, name string) error {
	return db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		c, err := db.ConsumerGet(ctx, tx, tenantID, name)
		if err != nil {
			return err
		}
		if err := db.ConsumerDelete(ctx, tx, tenantID, name); err != nil {
			return err
		}
		return s.audit(ctx, tx, "consumer.delete", tenantID, name, c, nil)
	})
}

func consumerInfo(ctx context.Context, tx pgx.Tx, c *db.Consumer) (*ConsumerInfo, error) {
	infos, err := consumerInfos(ctx, tx, c.TenantID, []*db.Consumer{c})
	if err != nil {
		return nil, err
	}
	return infos[0], nil
}

// consumerInfos adds their statistics to consumers of one tenant, read for
// all of them in one statement.
func consumerInfos(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, cs []*db.Consumer) ([]*ConsumerInfo, error) {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	health, err := db.ConsumerHealthMany(ctx, tx, tenantID, names)
	if err != nil {
		return nil, err
	}
	out := make([]*ConsumerInfo, 0, len(cs))
	for _, c := range cs {
		st := health[c.Name]
		if st == nil { // deleted meanwhile
			st = &db.ConsumerStats{}
		}
		out = append(out, &ConsumerInfo{TenantID: c.TenantID, Name: c.Name, Pending: st.Pending,
			AckPending: st.AckPending, Redelivered: st.Redelivered, Dead: st.Dead,
			OldestPendingAgeSeconds: st.OldestPendingAge.Seconds(), LastDeliveredAt: c.LastDeliveredAt,
			DeliverPolicy: c.DeliverPolicy, Ordering: c.Ordering, Stage: c.Stage, MaxDeliver: c.MaxDeliver,
			AckWait: c.AckWait.String(), CreatedAt: c.CreatedAt})
	}
	return out, nil
}

// tenantsOrOne is tenantID, or every tenant when it is uuid.Nil.
func (s *Service) tenantsOrOne(ctx context.Context, tenantID uuid.UUID) ([]uuid.UUID, error) {
	if tenantID != uuid.Nil {
		return []uuid.UUID{tenantID}, nil
	}
	ts, err := db.TenantList(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	out := make([]uuid.UUID, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out, nil
}

// ConsumerSeek moves a consumer to the messages received at or after t
// (t in the future: the end of the stream). See db.ConsumerSeek.
func (s *Service) ConsumerSeek(ctx context.Context, tenantID uuid.UUID, name string, t time.Time) (*ConsumerInfo, error) {
	if t.IsZero() {
		return nil, invalidf("seek needs a time")
	}
	var out *ConsumerInfo
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		before, err := db.ConsumerGet(ctx, tx, tenantID, name)
		if err != nil {
			return err
		}
		pos, err := db.ConsumerSeek(ctx, tx, tenantID, name, t)
		if err != nil {
			return err
		}
		after, err := db.ConsumerGet(ctx, tx, tenantID, name)
		if err != nil {
			return err
		}
		if out, err = consumerInfo(ctx, tx, after); err != nil {
			return err
		}
		return s.audit(ctx, tx, "consumer.seek", tenantID, name,
			map[string]any{"position": before.Pos.String()}, map[string]any{"time": t, "position": pos})
	})
	return out, err
}
