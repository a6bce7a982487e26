package workers

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/miohq/mio/migrations"
)

// insertWake announces the jobs River's insert notifications leave out.
//
// A River client sends a queue's insert notification (NOTIFY, delivered
// at commit) for the first job it inserts into that queue in each
// FetchCooldown window; the jobs inserted in the rest of the window are
// not announced. When the announced job's fetch ran before they
// committed, they wait for the next announced insert, or for the
// producers' poll (FetchPollInterval, 1 s): at 20 replies/s, one reply in
// five follows another within 10 ms. insertWake is River's missing
// trailing edge: it watches inserts (an InsertBegin hook), mirrors the
// per-queue windows, and 1.5 cooldowns after the start of a window in
// which River may have left jobs unannounced — time for their
// transactions to commit — sends the queue's insert notification itself,
// unless River has announced a later job of the queue meanwhile (its
// fetch sees them too). Under steady load the next window's announced
// insert comes first and no extra NOTIFY is sent; after a burst, one per
// window at most, so the throughput path keeps River's bound on
// notifying commits (each holds PostgreSQL's global notify lock until it
// has flushed).
type insertWake struct {
	river.HookDefaults
	pool     *pgxpool.Pool
	cooldown time.Duration
	logger   *slog.Logger

	mu     sync.Mutex
	queues map[string]*wakeQueue
}

// wakeQueue is one queue's window.
type wakeQueue struct {
	announced time.Time // River's last announced insert: its window's start
	armed     bool      // a notification is scheduled for this window
}

// insertTopic is the channel River's producers LISTEN on for inserts.
var insertTopic = migrations.RiverSchema + ".river_insert"

func newInsertWake(pool *pgxpool.Pool, cooldown time.Duration, logger *slog.Logger) *insertWake {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &insertWake{pool: pool, cooldown: cooldown, logger: logger, queues: map[string]*wakeQueue{}}
}

// InsertBegin runs in the inserting transaction, before the job's
// insert; it never fails the insert.
func (w *insertWake) InsertBegin(_ context.Context, p *rivertype.JobInsertParams) error {
	if p.State != rivertype.JobStateAvailable {
		return nil // scheduled or pending: River announces none either
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[p.Queue]
	if q == nil {
		q = &wakeQueue{}
		w.queues[p.Queue] = q
	}
	// River decides after the insert statement, a little later than
	// here, and so may still be inside a window this mirror sees ended:
	// only a quarter cooldown past the end is an announced insert for
	// sure (the other way round costs at most a redundant NOTIFY).
	if now.Sub(q.announced) >= w.cooldown+w.cooldown/4 {
		q.announced, q.armed = now, false // River announces this one
		return nil
	}
	if !q.armed {
		q.armed = true
		window, queue := q.announced, p.Queue
		time.AfterFunc(time.Until(window.Add(w.cooldown+w.cooldown/2)), func() { w.fire(queue, window) })
	}
	return nil
}

// fire sends queue's insert notification for the window that started at
// window, unless River has announced a later insert.
func (w *insertWake) fire(queue string, window time.Time) {
	w.mu.Lock()
	q := w.queues[queue]
	send := q.announced.Equal(window)
	if send {
		q.armed = false
	}
	w.mu.Unlock()
	if !send {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := w.pool.Exec(ctx, "SELECT pg_notify($1, $2)", insertTopic, fmt.Sprintf(`{"queue": %q}`, queue)); err != nil {
		w.logger.Debug("insert wake-up notification", "queue", queue, "err", err)
	}
}
