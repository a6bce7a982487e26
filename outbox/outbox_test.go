package outbox_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/groupcommit"
	"github.com/miohq/mio/outbox"
)

func TestSendValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	orig, err := b.svc.Send(t.Context(), b.a.id, b.a.cmd("orig"))
	require.NoError(t, err)
	before := b.counts(t)
	edit := func(id uuid.UUID, conv string) func(*envelope.SendCommand) {
		return func(c *envelope.SendCommand) { c.EditOf, c.ConversationID = &id, conv }
	}
	cases := []struct {
		name   string
		change func(*envelope.SendCommand)
		field  string
		reason string // a part of the reason
		is     error  // nil: none
	}{
		{"no idempotency key", func(c *envelope.SendCommand) { c.IdempotencyKey = " " }, "idempotency_key", "idempotency_key is required", nil},
		{"long idempotency key", func(c *envelope.SendCommand) { c.IdempotencyKey = strings.Repeat("k", 256) }, "idempotency_key", "longer than 255 bytes", nil},
		{"no account", func(c *envelope.SendCommand) { c.AccountID = uuid.Nil }, "account_id", "account_id is required", nil},
		{"no conversation", func(c *envelope.SendCommand) { c.ConversationID = "" }, "conversation_id", "conversation_id is required", nil},
		{"long conversation", func(c *envelope.SendCommand) { c.ConversationID = strings.Repeat("c", 513) }, "conversation_id", "at most 512 bytes", nil},
		{"long thread", func(c *envelope.SendCommand) { c.ThreadID = strings.Repeat("t", 513) }, "thread_id", "at most 512 bytes", nil},
		{"long text", func(c *envelope.SendCommand) { c.Text = strings.Repeat("x", 64<<10+1) }, "text", "longer than 65536 bytes", nil},
		{"text not UTF-8", func(c *envelope.SendCommand) { c.Text = "\xff" }, "text", "not valid UTF-8", nil},
		{"too many attachments", func(c *envelope.SendCommand) {
			c.Attachments = make([]envelope.SendAttachment, 11)
		}, "attachments", "at most 10 attachments", nil},
		{"control character", func(c *envelope.SendCommand) { c.ThreadID = "t\x01" }, "thread_id", "control characters", nil},
		{"attachment not http", func(c *envelope.SendCommand) {
			c.Attachments = []envelope.SendAttachment{{URL: "https://a.example/x"}, {URL: "file:///etc/passwd"}}
		}, "attachments[1].url", "absolute http(s) URL", nil},
		{"rich content unknown field", func(c *envelope.SendCommand) { c.RichContent = json.RawMessage(`{"colour":1}`) }, "rich_content", `unknown field "colour"`, nil},
		{"rich content bad block", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"blocks":[{"type":"text","text":"a"},{"type":"video"}]}`)
		}, "rich_content.blocks[1].type", `"video": want text`, nil},
		{"rich image without url", func(c *envelope.SendCommand) { c.RichContent = json.RawMessage(`{"blocks":[{"type":"image"}]}`) }, "rich_content.blocks[0].url", "an image needs", nil},
		{"rich button without label", func(c *envelope.SendCommand) { c.RichContent = json.RawMessage(`{"buttons":[{"label":" "}]}`) }, "rich_content.buttons[0].label", "label is required", nil},
		{"rich button of unknown type", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"buttons":[{"type":"select","text":"a"}]}`)
		}, "rich_content.buttons[0].type", `"select": want button`, nil},
		{"rich button of unknown style", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"buttons":[{"text":"a","style":"green"}]}`)
		}, "rich_content.buttons[0].style", "want primary or danger", nil},
		{"rich button action id with the separator", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"buttons":[{"text":"a","action_id":"deploy:approve"}]}`)
		}, "rich_content.buttons[0].action_id", `may not contain ":"`, nil},
		{"rich URL button with an action id", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"buttons":[{"text":"a","action_id":"x","url":"https://a.example"}]}`)
		}, "rich_content.buttons[0].action_id", "reports no action", nil},
		{"rich select without action id", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"selects":[{"options":[{"label":"EU","value":"eu"}]}]}`)
		}, "rich_content.selects[0].action_id", "action_id is required", nil},
		{"rich select action id with the separator", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"selects":[{"action_id":"region:x","options":[{"label":"EU","value":"eu"}]}]}`)
		}, "rich_content.selects[0].action_id", `may not contain ":"`, nil},
		{"rich select without options", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"selects":[{"action_id":"region","options":[]}]}`)
		}, "rich_content.selects[0].options", "needs 1 to 25 options", nil},
		{"rich select option without label", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"selects":[{"action_id":"region","options":[{"label":"EU","value":"eu"},{"value":"us"}]}]}`)
		}, "rich_content.selects[0].options[1].label", "label is required", nil},
		{"rich select option without value", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"selects":[{"action_id":"region","options":[{"label":"EU"}]}]}`)
		}, "rich_content.selects[0].options[0].value", "value is required", nil},
		{"rich select options repeating a value", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"selects":[{"action_id":"region","options":[{"label":"EU","value":"eu"},{"label":"Europe","value":"eu"}]}]}`)
		}, "rich_content.selects[0].options[1].value", "repeats an earlier option", nil},
		{"rich select of unknown type", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"selects":[{"type":"multi","action_id":"region","options":[{"label":"EU","value":"eu"}]}]}`)
		}, "rich_content.selects[0].type", `"multi": want select`, nil},
		{"rich select option unknown field", func(c *envelope.SendCommand) {
			c.RichContent = json.RawMessage(`{"selects":[{"action_id":"region","options":[{"label":"EU","value":"eu","emoji":"x"}]}]}`)
		}, "rich_content", `unknown field "emoji"`, nil},
		{"empty message", func(c *envelope.SendCommand) { c.Text, c.RichContent = " ", json.RawMessage("null") }, "", "needs text, rich_content or attachments", nil},
		{"unknown account", func(c *envelope.SendCommand) { c.AccountID = uuid.New() }, "account_id", "no such account", outbox.ErrAccountNotFound},
		{"another tenant's account", func(c *envelope.SendCommand) { c.AccountID = b.b.account }, "account_id", "no such account", outbox.ErrAccountNotFound},
		{"disabled account", func(c *envelope.SendCommand) { c.AccountID = b.a.disabled }, "account_id", "the account is disabled", outbox.ErrAccountDisabled},
		{"edit of unknown message", edit(uuid.New(), "c-1"), "edit_of", "no such outbound message", nil},
		{"edit of another conversation", edit(orig.ID, "c-2"), "edit_of", "another account or conversation", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := b.a.cmd("v-" + c.name)
			c.change(cmd)
			_, err := b.svc.Send(t.Context(), b.a.id, cmd)
			var ve *outbox.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, c.field, ve.Field)
			require.Contains(t, ve.Reason, c.reason)
			require.Equal(t, "invalid send command: "+ve.Reason, err.Error())
			if c.is != nil {
				require.ErrorIs(t, err, c.is)
			}
		})
	}
	require.Equal(t, before, b.counts(t), "nothing written")

	// The edit of a message of the same conversation is a send.
	cmd := b.a.cmd("edit")
	cmd.EditOf = &orig.ID
	_, err = b.svc.Send(t.Context(), b.a.id, cmd)
	require.NoError(t, err)
}

func TestSendIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cmd := b.a.cmd("k-1")
	cmd.RichContent = json.RawMessage(`{"title":"t","blocks":[{"type":"text","text":"a"}]}`)
	first, err := b.svc.Send(t.Context(), b.a.id, cmd)
	require.NoError(t, err)
	require.Equal(t, &outbox.Sent{ID: first.ID, HandoffState: db.HandoffQueued}, first)
	require.Equal(t, [3]int{1, 1, 1}, b.counts(t), "row, first event and dispatch job")
	jobID, argsID := b.jobOf(t, first.ID)
	require.NotZero(t, jobID)
	require.Equal(t, first.ID, argsID, "the job dispatches this row")

	// The same command (rich content spelled differently) is a replay.
	again := b.a.cmd("k-1")
	again.RichContent = json.RawMessage(` { "blocks" : [ {"text":"a","type":"text"} ], "title":"t" } `)
	sent, err := b.svc.Send(t.Context(), b.a.id, again)
	require.NoError(t, err)
	require.Equal(t, &outbox.Sent{ID: first.ID, HandoffState: db.HandoffQueued, Replayed: true}, sent)
	require.Equal(t, [3]int{1, 1, 1}, b.counts(t), "nothing new")

	// A replay answers the message's current state.
	b.exec(t, `UPDATE mio.outbox SET handoff_state = 'handed_off', handed_off_at = now() WHERE id = $1`, first.ID)
	sent, err = b.svc.Send(t.Context(), b.a.id, again)
	require.NoError(t, err)
	require.Equal(t, db.HandoffHandedOff, sent.HandoffState)

	// The same key for a different command is a conflict.
	other := b.a.cmd("k-1")
	other.ThreadID = "other"
	_, err = b.svc.Send(t.Context(), b.a.id, other)
	require.ErrorIs(t, err, outbox.ErrKeyConflict)

	// Keys are the tenant's own.
	sent, err = b.svc.Send(t.Context(), b.b.id, b.b.cmd("k-1"))
	require.NoError(t, err)
	require.False(t, sent.Replayed)
	require.NotEqual(t, first.ID, sent.ID)
}

// TestSendTx: a send in the caller's transaction commits or rolls back
// with it, and a replay leaves the transaction usable.
func TestSendTx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inTx := func(fn func(tx pgx.Tx) error) error { return db.InTenantTx(t.Context(), b.env.Pool, b.a.id, fn) }
	errRollback := errors.New("roll back")
	err := inTx(func(tx pgx.Tx) error {
		_, err := b.svc.SendTx(t.Context(), tx, b.a.id, b.a.cmd("tx-1"))
		require.NoError(t, err)
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Equal(t, [3]int{0, 0, 0}, b.counts(t), "rolled back with the caller")

	var id uuid.UUID
	require.NoError(t, inTx(func(tx pgx.Tx) error {
		sent, err := b.svc.SendTx(t.Context(), tx, b.a.id, b.a.cmd("tx-1"))
		id = sent.ID
		return err
	}))
	require.Equal(t, [3]int{1, 1, 1}, b.counts(t))

	require.NoError(t, inTx(func(tx pgx.Tx) error {
		sent, err := b.svc.SendTx(t.Context(), tx, b.a.id, b.a.cmd("tx-1"))
		require.NoError(t, err)
		require.True(t, sent.Replayed)
		require.Equal(t, id, sent.ID)
		_, err = b.svc.SendTx(t.Context(), tx, b.a.id, b.a.cmd("tx-2"))
		return err
	}))
	require.Equal(t, [3]int{2, 2, 2}, b.counts(t), "the transaction went on after the replay")
}

// TestSendConcurrentSameKey: two sends of one key in flight at once store
// one message and one job; the second answers with the first's message
// (or a conflict when its command differs) — alone, or through group
// commit, whose three-round-trip transaction fails on the key once the
// first commits and is done again statement by statement.
func TestSendConcurrentSameKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ differ, grouped bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		differ := c.differ
		name := map[bool]string{false: "same command", true: "different command"}[differ] + map[bool]string{true: ", group commit"}[c.grouped]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if c.grouped {
				stop := b.svc.StartGroupCommit(groupcommit.Config{Flushers: 1})
				defer stop()
			}
			first, err := db.BeginTenant(t.Context(), b.env.Pool, b.a.id)
			require.NoError(t, err)
			defer first.Rollback(t.Context()) //nolint:errcheck
			won, err := b.svc.SendTx(t.Context(), first, b.a.id, b.a.cmd("race"))
			require.NoError(t, err)

			second := b.a.cmd("race")
			if differ {
				second.Text = "something else"
			}
			type result struct {
				sent *outbox.Sent
				err  error
			}
			done := make(chan result, 1)
			go func() {
				s, err := b.svc.Send(t.Context(), b.a.id, second)
				done <- result{s, err}
			}()
			// The second send waits on the first's key; then the first commits.
			require.Eventually(t, func() bool {
				var n int
				err := b.owner.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
				return err == nil && n == 1
			}, 10*time.Second, 5*time.Millisecond)
			require.NoError(t, first.Commit(t.Context()))

			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the second send did not finish")
			}
			if differ {
				require.ErrorIs(t, r.err, outbox.ErrKeyConflict)
			} else {
				require.NoError(t, r.err)
				require.Equal(t, &outbox.Sent{ID: won.ID, HandoffState: db.HandoffQueued, Replayed: true}, r.sent)
			}
			require.Equal(t, [3]int{1, 1, 1}, b.counts(t), "one message, one job")
		})
	}
}

func TestResend(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sent, err := b.svc.Send(t.Context(), b.a.id, b.a.cmd("rs"))
	require.NoError(t, err)
	var busy *outbox.InProgressError
	_, err = b.svc.Resend(t.Context(), b.a.id, sent.ID)
	require.ErrorAs(t, err, &busy)
	require.Equal(t, db.HandoffQueued, busy.State)

	b.exec(t, `UPDATE mio.outbox SET handoff_state = 'dead', attempts = 5, attempt_no = 5, dead_at = now(), last_error = 'gone' WHERE id = $1`, sent.ID)
	_, err = b.svc.Resend(t.Context(), b.b.id, sent.ID)
	require.ErrorIs(t, err, outbox.ErrNotFound, "another tenant's message")
	_, err = b.svc.Resend(t.Context(), b.a.id, uuid.New())
	require.ErrorIs(t, err, outbox.ErrNotFound)
	require.Equal(t, [3]int{1, 1, 1}, b.counts(t), "nothing changed")

	attempt, err := b.svc.Resend(t.Context(), b.a.id, sent.ID)
	require.NoError(t, err)
	require.Equal(t, 6, attempt, "a new series continues the attempt numbers")
	o, events, err := b.svc.Get(t.Context(), b.a.id, sent.ID)
	require.NoError(t, err)
	require.Equal(t, db.HandoffQueued, o.HandoffState)
	require.Equal(t, 2, o.Series)
	require.Equal(t, "resend", events[len(events)-1].Event)
	jobID, argsID := b.jobOf(t, sent.ID)
	require.Equal(t, sent.ID, argsID)
	require.Equal(t, 2, b.counts(t)[2], "a new dispatch job")
	var newest int64
	require.NoError(t, b.owner.QueryRow(t.Context(), `SELECT max(id) FROM river.river_job`).Scan(&newest))
	require.Equal(t, newest, jobID, "recorded on the row")

	_, err = b.svc.Resend(t.Context(), b.a.id, sent.ID)
	require.ErrorAs(t, err, &busy, "queued again")
}

// TestNotConfigured: without a River client the Service reads, checks
// input, and refuses to write.
func TestNotConfigured(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sent, err := b.svc.Send(t.Context(), b.a.id, b.a.cmd("nc"))
	require.NoError(t, err)
	ro := outbox.New(b.env.Pool, nil)
	_, err = ro.Send(t.Context(), b.a.id, b.a.cmd("nc-2"))
	require.ErrorIs(t, err, outbox.ErrNotConfigured)
	bad := b.a.cmd("")
	_, err = ro.Send(t.Context(), b.a.id, bad)
	var ve *outbox.ValidationError
	require.ErrorAs(t, err, &ve, "input is checked first")
	_, err = ro.Resend(t.Context(), b.a.id, sent.ID)
	require.ErrorIs(t, err, outbox.ErrNotConfigured)
	_, _, err = ro.Get(t.Context(), b.a.id, sent.ID)
	require.NoError(t, err)
	require.Equal(t, [3]int{1, 1, 1}, b.counts(t))
}

func TestGetList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []uuid.UUID
	for i := range 5 {
		cmd := b.a.cmd("l" + string(rune('0'+i)))
		cmd.ConversationID = []string{"even", "odd"}[i%2]
		sent, err := b.svc.Send(t.Context(), b.a.id, cmd)
		require.NoError(t, err)
		ids = append(ids, sent.ID)
	}
	o, events, err := b.svc.Get(t.Context(), b.a.id, ids[0])
	require.NoError(t, err)
	require.Equal(t, ids[0], o.ID)
	require.Equal(t, db.ProviderUnknown, o.ProviderState)
	require.Len(t, events, 1)
	require.Equal(t, "queued", events[0].Event)
	_, _, err = b.svc.Get(t.Context(), b.b.id, ids[0])
	require.ErrorIs(t, err, outbox.ErrNotFound, "another tenant's message")

	var got []uuid.UUID
	p := db.OutboxListParams{Limit: 2}
	for range 5 {
		page, err := b.svc.List(t.Context(), b.a.id, p)
		require.NoError(t, err)
		for _, o := range page.Items {
			got = append(got, o.ID)
		}
		if page.Next == uuid.Nil {
			break
		}
		p.BeforeID = page.Next
	}
	require.Equal(t, []uuid.UUID{ids[4], ids[3], ids[2], ids[1], ids[0]}, got, "newest first, every message once")

	page, err := b.svc.List(t.Context(), b.a.id, db.OutboxListParams{ConversationID: "odd", HandoffState: db.HandoffQueued})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	require.Equal(t, uuid.Nil, page.Next)
	page, err = b.svc.List(t.Context(), b.b.id, db.OutboxListParams{})
	require.NoError(t, err)
	require.Empty(t, page.Items, "another tenant's messages")
}
