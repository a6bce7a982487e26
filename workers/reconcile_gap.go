package workers

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
)

// gap reads the open gap of a conversation whose history reads oldest
// first (Discord), left by a Gateway session that could not be resumed:
// the gateway opened it at the last stored id before the new session
// could store anything (gap_after), and the new session bounds it at its
// start, lowered to the first message it stored in the conversation
// (gap_before). The walk reads after gap_after page by page; each page's
// messages and the gap's new start commit together, so a run stopped by
// MaxPages, a rate limit or a crash goes on where it stopped. The gap
// closes when a page reaches gap_before or the channel's newest message
// while gap_before is set (the new session delivers everything after);
// a gap without an end yet is read but stays open. last_source_id, the
// live intake's, stays. It returns the pages read and the newest id read
// (everything after gap_after up to it is stored).
func (r *reconcileRun) gap(ctx context.Context, c db.SourceCursor) (pages int, read string, err error) {
	conv := envelope.Conversation{ID: c.ConversationID, Type: c.ConversationType}
	after := c.GapAfter
	for page := 1; page <= r.cfg.MaxPages; page++ {
		msgs, next, err := r.page(ctx, conv, after)
		if err != nil {
			return page, after, err
		}
		newest := after // the newest id read
		for _, id := range []string{next, lastSourceID(msgs)} {
			if idLess(newest, id) {
				newest = id
			}
		}
		end := next == "" // the page reached the channel's newest message
		closed := c.GapBefore != "" && (end || !idLess(newest, c.GapBefore))
		if !closed && newest == after {
			return page, after, nil // nothing new, and no end to close at yet
		}
		move := &db.SourceCursorGapMoveParams{TenantID: r.acct.TenantID, AccountID: r.acct.ID, ConversationID: c.ConversationID,
			After: newest, Close: closed, SeenBefore: c.GapBefore}
		err = r.storeWith(ctx, msgs, func(ctx context.Context, tx pgx.Tx) error {
			return db.SourceCursorGapMove(ctx, tx, move)
		})
		if err != nil {
			return page, after, err
		}
		if closed || end {
			return page, newest, nil
		}
		after = next
	}
	return r.cfg.MaxPages, after, nil
}

// idLess orders platform ids of one width family: by length, then text
// (decimal snowflakes).
func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func lastSourceID(msgs []envelope.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	return msgs[len(msgs)-1].SourceMessageID
}
