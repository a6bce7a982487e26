package workers

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// historyPager is an adapter whose history reads newest first (Slack).
type historyPager = channels.HistoryPager

// walk reads a conversation whose history comes newest first. A walk
// starts with the newest page after the cursor; when the window holds
// more, the cursor moves past the page at once and the rest becomes the
// cursor's gap, read page by page towards the old end. Each page's
// messages and the cursor's new state commit together, so a run stopped
// by MaxPages, a rate limit or a crash goes on where it stopped and
// nothing is skipped. Platform ids compare by length, then text (Slack
// ts).
func (r *reconcileRun) walk(ctx context.Context, c db.SourceCursor) error {
	conv := envelope.Conversation{ID: c.ConversationID, Type: c.ConversationType}
	for range r.cfg.MaxPages {
		oldest, latest := c.LastSourceID, ""
		if c.GapBefore != "" {
			oldest, latest = c.GapAfter, c.GapBefore
		}
		var msgs []envelope.Message
		var next string
		err := r.call(ctx, func() (err error) {
			msgs, next, err = r.hp.HistoryPage(ctx, r.secrets, conv, oldest, latest, r.cfg.PageSize)
			return err
		})
		if err != nil {
			return err
		}
		top := c.GapBefore == ""
		if top && len(msgs) == 0 && next == "" {
			return nil // nothing new
		}
		if top {
			if n := len(msgs); n > 0 {
				c.LastSourceID = msgs[n-1].PlatformMessageID
			}
			if next != "" {
				c.GapAfter, c.GapBefore = oldest, next
			}
		} else if next != "" {
			c.GapBefore = next
		} else {
			c.GapAfter, c.GapBefore = "", ""
		}
		err = r.storeWith(ctx, msgs, func(ctx context.Context, tx pgx.Tx) error {
			return db.SourceCursorWalk(ctx, tx, r.acct.TenantID, r.acct.ID, c)
		})
		if err != nil {
			return err
		}
		if top && next == "" {
			return nil // read to now
		}
	}
	return nil
}
