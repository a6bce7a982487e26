package consume

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// Limits of consumer settings and pull requests.
const (
	DefaultAckWait       = 30 * time.Second
	DefaultMaxDeliver    = 5
	DefaultMaxAckPending = 1000
	MaxBatch             = 1000
	MaxWait              = 60 * time.Second
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidName reports whether name is a valid consumer name.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// Config is a consumer's settings as the API takes them; zero values get
// defaults.
type Config struct {
	ChannelTypes    []string
	AccountIDs      []uuid.UUID
	ConversationIDs []string
	DeliverPolicy   string
	StartTime       *time.Time
	AckWait         time.Duration
	MaxDeliver      int
	MaxAckPending   int
	Ordering        string
	Stage           string
}

// ValidationError is a bad consumer setting; its text is shown to callers.
type ValidationError struct{ Reason string }

func (e *ValidationError) Error() string { return e.Reason }

func invalid(format string, args ...any) error {
	return &ValidationError{Reason: fmt.Sprintf(format, args...)}
}

// normalize applies defaults and validates.
func (c *Config) normalize() error {
	if c.DeliverPolicy == "" {
		c.DeliverPolicy = db.DeliverAll
	}
	switch c.DeliverPolicy {
	case db.DeliverAll, db.DeliverNew:
		if c.StartTime != nil {
			return invalid("start_time is only allowed with deliver_policy by_start_time")
		}
	case db.DeliverByStartTime:
		if c.StartTime == nil {
			return invalid("deliver_policy by_start_time needs start_time")
		}
	default:
		return invalid("deliver_policy must be all, new or by_start_time")
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.AckWait < time.Second || c.AckWait > 12*time.Hour {
		return invalid("ack_wait must be from 1s to 12h")
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = DefaultMaxDeliver
	}
	if c.MaxDeliver < 1 || c.MaxDeliver > 1000 {
		return invalid("max_deliver must be from 1 to 1000")
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = DefaultMaxAckPending
	}
	if c.MaxAckPending < 1 || c.MaxAckPending > 100000 {
		return invalid("max_ack_pending must be from 1 to 100000")
	}
	if c.Ordering == "" {
		c.Ordering = db.OrderingNone
	}
	if c.Ordering != db.OrderingNone && c.Ordering != db.OrderingConvo {
		return invalid("ordering must be none or conversation")
	}
	if c.Stage == "" {
		c.Stage = db.StageReady
	}
	if c.Stage != db.StageReady && c.Stage != db.StageReceived {
		return invalid("stage must be ready or received")
	}
	// The slug's form here; the upsert refuses one mio.channel_types does
	// not hold (a channel no longer registered is still held: the log may
	// have its messages).
	for _, t := range c.ChannelTypes {
		if !envelope.ValidChannelType(t) {
			return invalid("filter.channel_types: %q is not a channel type", t)
		}
	}
	if len(c.ChannelTypes) > 100 || len(c.AccountIDs) > 1000 || len(c.ConversationIDs) > 1000 {
		return invalid("filter lists are limited to 100 channel types and 1000 accounts or conversations")
	}
	for _, id := range c.ConversationIDs {
		if id == "" || len(id) > 512 {
			return invalid("filter.conversation_ids: ids must be 1 to 512 bytes")
		}
	}
	return nil
}

// Info is a consumer's settings and live statistics, as mio.queue_health
// answers them: Stats.Pending counts the matching stream messages not yet
// taken plus the deliveries waiting to be redelivered, exactly.
type Info struct {
	Consumer *db.Consumer
	Stats    *db.ConsumerStats
}

// Put creates or updates a consumer. Settings fixed at creation (deliver
// policy, start time, stage) cannot change: a different value is a
// ValidationError.
func (s *Service) Put(ctx context.Context, tenantID uuid.UUID, name string, cfg Config) (*Info, bool, error) {
	return s.put(ctx, tenantID, name, cfg, false)
}

// Create creates a consumer with cfg, and never changes one that exists:
// a consumer by that name — created before, or concurrently (a Put racing
// an agent's first pull) — is ErrExists, and the create rolls back.
func (s *Service) Create(ctx context.Context, tenantID uuid.UUID, name string, cfg Config) (*Info, error) {
	info, _, err := s.put(ctx, tenantID, name, cfg, true)
	return info, err
}

// Ensure creates a consumer with cfg unless it exists, and returns it
// either way (created reports which), as Create does: one that exists is
// returned as it is.
func (s *Service) Ensure(ctx context.Context, tenantID uuid.UUID, name string, cfg Config) (info *Info, created bool, err error) {
	info, err = s.Create(ctx, tenantID, name, cfg)
	if errors.Is(err, ErrExists) {
		info, err = s.Get(ctx, tenantID, name)
		return info, false, err
	}
	return info, err == nil, err
}

// errCreatedMeanwhile: put's upsert updated a consumer its read did not
// find — another transaction created it in between.
var errCreatedMeanwhile = errors.New("consumer created concurrently")

// put creates or updates (onlyNew: only creates) a consumer. An update of
// a consumer created after put's read runs again: settings fixed at
// creation are checked against the consumer that is there, and a changed
// filter rebases its backlog, as for any update.
func (s *Service) put(ctx context.Context, tenantID uuid.UUID, name string, cfg Config, onlyNew bool) (*Info, bool, error) {
	for range 3 {
		info, created, err := s.putOnce(ctx, tenantID, name, cfg, onlyNew)
		if !errors.Is(err, errCreatedMeanwhile) {
			return info, created, err
		}
	}
	return nil, false, fmt.Errorf("put consumer %q: %w", name, errCreatedMeanwhile)
}

func (s *Service) putOnce(ctx context.Context, tenantID uuid.UUID, name string, cfg Config, onlyNew bool) (*Info, bool, error) {
	if !ValidName(name) {
		return nil, false, invalid("consumer name must be 1 to 64 characters of A-Z a-z 0-9 _ . - and start with a letter or digit")
	}
	var (
		info    *Info
		created bool
	)
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		prev, err := db.ConsumerGet(ctx, tx, tenantID, name)
		switch {
		case err == nil && onlyNew:
			return ErrExists
		case errors.Is(err, db.ErrNotFound):
			if err := cfg.normalize(); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			// An update may omit the settings fixed at creation.
			if cfg.DeliverPolicy == "" {
				cfg.DeliverPolicy, cfg.StartTime = prev.DeliverPolicy, prev.StartTime
			}
			if cfg.Stage == "" {
				cfg.Stage = prev.Stage
			}
			if err := cfg.normalize(); err != nil {
				return err
			}
			if prev.DeliverPolicy != cfg.DeliverPolicy || prev.Stage != cfg.Stage || !sameTime(prev.StartTime, cfg.StartTime) {
				return invalid("deliver_policy, start_time and stage are fixed when a consumer is created: delete and re-create it to change them")
			}
		}
		if unknown, err := db.ChannelTypesUnknown(ctx, tx, cfg.ChannelTypes); err != nil {
			return err
		} else if len(unknown) > 0 {
			return invalid("filter.channel_types: unknown channel type %q", unknown[0])
		}
		c, isNew, err := db.ConsumerUpsert(ctx, tx, &db.Consumer{
			TenantID: tenantID, Name: name, FilterChannelTypes: cfg.ChannelTypes, FilterAccountIDs: cfg.AccountIDs,
			FilterConversationIDs: cfg.ConversationIDs, DeliverPolicy: cfg.DeliverPolicy, StartTime: cfg.StartTime,
			AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver, MaxAckPending: cfg.MaxAckPending, Ordering: cfg.Ordering, Stage: cfg.Stage,
		})
		if err != nil {
			return err
		}
		switch {
		case !isNew && onlyNew:
			return ErrExists // created since the read above: roll back
		case !isNew && prev == nil:
			return errCreatedMeanwhile // roll back and run again
		}
		if !isNew && prev != nil && !sameFilter(prev, c) {
			// The backlog counters count what the filter matches: under
			// the row lock the upsert took, count the unread rows the new
			// filter matches once (docs/architecture.md, "Exact backlog").
			if err := db.ConsumerRebase(ctx, tx, tenantID, name); err != nil {
				return err
			}
		}
		created = isNew
		info, err = s.info(ctx, tx, c)
		return err
	})
	return info, created, err
}

// Get returns a consumer with live statistics.
func (s *Service) Get(ctx context.Context, tenantID uuid.UUID, name string) (*Info, error) {
	var info *Info
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		c, err := db.ConsumerGet(ctx, tx, tenantID, name)
		if errors.Is(err, db.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		info, err = s.info(ctx, tx, c)
		return err
	})
	return info, err
}

// Delete removes a consumer and its deliveries.
func (s *Service) Delete(ctx context.Context, tenantID uuid.UUID, name string) error {
	err := db.InTenantTx(ctx, s.pool, tenantID, func(tx pgx.Tx) error {
		return db.ConsumerDelete(ctx, tx, tenantID, name)
	})
	if errors.Is(err, db.ErrNotFound) {
		return ErrNotFound
	}
	return err
}

func (s *Service) info(ctx context.Context, tx pgx.Tx, c *db.Consumer) (*Info, error) {
	st, err := db.ConsumerHealthMany(ctx, tx, c.TenantID, []string{c.Name})
	if err != nil {
		return nil, err
	}
	if st[c.Name] == nil {
		return nil, ErrNotFound
	}
	return &Info{Consumer: c, Stats: st[c.Name]}, nil
}

// sameFilter reports whether two versions of a consumer match the same
// messages.
func sameFilter(a, b *db.Consumer) bool {
	return slices.Equal(a.FilterChannelTypes, b.FilterChannelTypes) && slices.Equal(a.FilterAccountIDs, b.FilterAccountIDs) &&
		slices.Equal(a.FilterConversationIDs, b.FilterConversationIDs)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
