package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// GatewaySession is an account's platform connection lease and resume
// point (mio.gateway_sessions).
type GatewaySession struct {
	TenantID   uuid.UUID
	AccountID  uuid.UUID
	Holder     uuid.UUID // zero: nobody holds the lease
	LeaseUntil time.Time
	SessionID  string
	ResumeURL  string
	Seq        int64
	Error      string
}

// GatewayLeaseParams name an account's lease and its (would-be) holder.
type GatewayLeaseParams struct {
	TenantID  uuid.UUID
	AccountID uuid.UUID
	Holder    uuid.UUID
	TTL       time.Duration
}

// GatewayLeaseAcquire takes the account's lease for p.Holder until now +
// p.TTL (database clock) when nobody holds it, it expired, or p.Holder
// already holds it, and returns the session. ErrNotFound: another holder
// has it, or the account is not active.
func GatewayLeaseAcquire(ctx context.Context, tx DBTX, p *GatewayLeaseParams) (*GatewaySession, error) {
	r, err := queries().GatewayLeaseAcquire(ctx, tx, &dbsqlc.GatewayLeaseAcquireParams{
		TenantID: p.TenantID, AccountID: p.AccountID, Holder: &p.Holder, TtlSeconds: p.TTL.Seconds()})
	if err != nil {
		return nil, translate(err)
	}
	s := &GatewaySession{TenantID: r.TenantID, AccountID: r.AccountID, LeaseUntil: r.LeaseUntil,
		SessionID: r.SessionID, ResumeURL: r.ResumeUrl, Seq: r.Seq, Error: r.Error}
	if r.Holder != nil {
		s.Holder = *r.Holder
	}
	return s, nil
}

// GatewayLeasesHeldByOthers returns the tenant's accounts whose unexpired
// lease a holder other than holder has.
func GatewayLeasesHeldByOthers(ctx context.Context, tx DBTX, tenantID, holder uuid.UUID) ([]uuid.UUID, error) {
	ids, err := queries().GatewayLeasesHeldByOthers(ctx, tx, &dbsqlc.GatewayLeasesHeldByOthersParams{TenantID: tenantID, Holder: &holder})
	if err != nil {
		return nil, translate(err)
	}
	return ids, nil
}

// GatewayLeaseRenew extends p.Holder's unexpired lease by p.TTL.
// ErrNotFound: the lease was lost (expired or taken over).
func GatewayLeaseRenew(ctx context.Context, tx DBTX, p *GatewayLeaseParams) error {
	n, err := queries().GatewayLeaseRenew(ctx, tx, &dbsqlc.GatewayLeaseRenewParams{
		TenantID: p.TenantID, AccountID: p.AccountID, Holder: &p.Holder, TtlSeconds: p.TTL.Seconds()})
	if err != nil {
		return translate(err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// GatewayLeaseRelease gives p.Holder's lease up (the resume point stays).
func GatewayLeaseRelease(ctx context.Context, tx DBTX, p *GatewayLeaseParams) error {
	return translate(queries().GatewayLeaseRelease(ctx, tx, &dbsqlc.GatewayLeaseReleaseParams{
		TenantID: p.TenantID, AccountID: p.AccountID, Holder: &p.Holder}))
}

// GatewaySessionSaveParams are a session's resume point.
type GatewaySessionSaveParams struct {
	TenantID  uuid.UUID
	AccountID uuid.UUID
	Holder    uuid.UUID
	SessionID string
	ResumeURL string
	Seq       int64
}

// GatewaySessionSave records the resume point, only while p.Holder's
// lease is live: write it in the transaction of the messages it covers.
// ErrNotFound: the lease was lost, roll the transaction back.
func GatewaySessionSave(ctx context.Context, tx DBTX, p *GatewaySessionSaveParams) error {
	n, err := queries().GatewaySessionSave(ctx, tx, &dbsqlc.GatewaySessionSaveParams{
		TenantID: p.TenantID, AccountID: p.AccountID, Holder: &p.Holder,
		SessionID: p.SessionID, ResumeUrl: p.ResumeURL, Seq: p.Seq})
	if err != nil {
		return translate(err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// GatewayIdentifySlot is a reserved IDENTIFY: the wait for its slot, the
// IDENTIFYs counted in the current day's window (this one included) and
// the time left in that window.
type GatewayIdentifySlot struct {
	Wait       time.Duration
	Identifies int
	WindowLeft time.Duration
}

// GatewayIdentifyTake reserves the account's next IDENTIFY slot, at least
// interval after the previous one (whichever process sent it), and
// counts it in the day's window. ErrNotFound: p.Holder holds no row.
func GatewayIdentifyTake(ctx context.Context, tx DBTX, p *GatewayLeaseParams, interval time.Duration) (*GatewayIdentifySlot, error) {
	r, err := queries().GatewayIdentifyTake(ctx, tx, &dbsqlc.GatewayIdentifyTakeParams{
		TenantID: p.TenantID, AccountID: p.AccountID, Holder: &p.Holder, IntervalSeconds: interval.Seconds()})
	if err != nil {
		return nil, translate(err)
	}
	return &GatewayIdentifySlot{
		Wait:       time.Duration(r.WaitSeconds * float64(time.Second)),
		Identifies: int(r.Identifies),
		WindowLeft: time.Duration(r.WindowLeftSeconds * float64(time.Second)),
	}, nil
}

// GatewayFail records why an account's connection stopped for good and
// forgets its session.
func GatewayFail(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID, reason string) error {
	return translate(queries().GatewayFail(ctx, tx, &dbsqlc.GatewayFailParams{
		TenantID: tenantID, AccountID: accountID, Error: reason}))
}

// GatewayError returns why the account's platform connection stopped for
// good ("" when it did not, or never ran).
func GatewayError(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID) (string, error) {
	reason, err := queries().GatewayErrorGet(ctx, tx, &dbsqlc.GatewayErrorGetParams{TenantID: tenantID, AccountID: accountID})
	if err = translate(err); errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return reason, err
}

// SourceCursor is the newest platform message id stored for one
// conversation through a live intake, and when it was last active.
type SourceCursor struct {
	ConversationID   string
	ConversationType string
	LastSourceID     string
	ActiveAt         time.Time
	// GapAfter and GapBefore bound the messages a history walk has not
	// read yet (both exclusive). Slack's walk: GapBefore
	// "" = no gap. Discord's (a lost Gateway session): GapAfter "" = no
	// gap, GapBefore "" = a gap whose end is not known yet.
	GapAfter, GapBefore string
}

// SourceCursorAdvance moves a conversation's cursor to c.LastSourceID when
// it is newer (ids compare by length, then text) and marks it active now.
func SourceCursorAdvance(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID, c SourceCursor) error {
	return translate(queries().SourceCursorAdvance(ctx, tx, &dbsqlc.SourceCursorAdvanceParams{
		TenantID: tenantID, AccountID: accountID, ConversationID: c.ConversationID,
		ConversationType: c.ConversationType, LastSourceID: c.LastSourceID}))
}

// SourceCursorMove moves a conversation's cursor forward to lastSourceID
// without marking it active (the reconciler's progress).
func SourceCursorMove(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID, conversationID, lastSourceID string) error {
	return translate(queries().SourceCursorMove(ctx, tx, &dbsqlc.SourceCursorMoveParams{
		TenantID: tenantID, AccountID: accountID, ConversationID: conversationID, LastSourceID: lastSourceID}))
}

// SourceCursorList returns up to maxRows of the account's conversations
// active since activeSince, most recently active first.
func SourceCursorList(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID, activeSince time.Time, maxRows int) ([]SourceCursor, error) {
	rows, err := queries().SourceCursorList(ctx, tx, &dbsqlc.SourceCursorListParams{
		TenantID: tenantID, AccountID: accountID, ActiveSince: activeSince, MaxRows: int32(maxRows)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]SourceCursor, len(rows))
	for i, r := range rows {
		out[i] = SourceCursor{ConversationID: r.ConversationID, ConversationType: r.ConversationType, LastSourceID: r.LastSourceID,
			ActiveAt: r.ActiveAt, GapAfter: r.GapAfter, GapBefore: r.GapBefore}
	}
	return out, nil
}

// SourceCursorSeed creates the cursors of the account's conversations that
// had a message stored since activeSince, from the stored platform ids,
// and marks existing ones active (for channels whose live intake keeps no
// cursor: Slack). A new cursor starts after the oldest message of the
// window.
func SourceCursorSeed(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID, activeSince time.Time) error {
	return translate(queries().SourceCursorSeed(ctx, tx, &dbsqlc.SourceCursorSeedParams{
		TenantID: tenantID, AccountID: accountID, ActiveSince: activeSince}))
}

// SourceCursorWalk records a history walk's progress: the cursor and the
// gap still to read (c.GapBefore "" = none).
func SourceCursorWalk(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID, c SourceCursor) error {
	return translate(queries().SourceCursorWalk(ctx, tx, &dbsqlc.SourceCursorWalkParams{
		TenantID: tenantID, AccountID: accountID, ConversationID: c.ConversationID,
		LastSourceID: c.LastSourceID, GapAfter: c.GapAfter, GapBefore: c.GapBefore}))
}

// SourceCursorGapOpen opens a gap at the last stored id on every cursor of
// the account, when its Gateway session is lost and cannot be resumed: an
// open gap keeps its older start, and its end is unknown until
// SourceCursorGapBound or the next live message sets it. Call it before
// the new session can store a message.
func SourceCursorGapOpen(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID) error {
	return translate(queries().SourceCursorGapOpen(ctx, tx, &dbsqlc.SourceCursorGapOpenParams{TenantID: tenantID, AccountID: accountID}))
}

// SourceCursorGapBound ends the account's open gaps that have no end yet
// at before: a new session is established and what is posted after it
// arrives live. The first message the session stores in a conversation
// moves that conversation's end down to its id (SourceCursorAdvance).
func SourceCursorGapBound(ctx context.Context, tx DBTX, tenantID, accountID uuid.UUID, before string) error {
	return translate(queries().SourceCursorGapBound(ctx, tx, &dbsqlc.SourceCursorGapBoundParams{
		TenantID: tenantID, AccountID: accountID, GapBefore: before}))
}

// SourceCursorGapMoveParams is an ascending gap walk's progress in one
// conversation.
type SourceCursorGapMoveParams struct {
	TenantID       uuid.UUID
	AccountID      uuid.UUID
	ConversationID string
	// After is the newest id read: the gap now starts after it (the gap
	// start only moves forward).
	After string
	// Close closes the gap, when its end is still SeenBefore (the end the
	// walk read towards); a changed end (a new loss, a lower bound) keeps
	// the gap open for the next run.
	Close      bool
	SeenBefore string
}

// SourceCursorGapMove records an ascending gap walk's progress (Discord
// after a lost session); last_source_id is the live intake's and stays.
func SourceCursorGapMove(ctx context.Context, tx DBTX, p *SourceCursorGapMoveParams) error {
	return translate(queries().SourceCursorGapMove(ctx, tx, &dbsqlc.SourceCursorGapMoveParams{
		TenantID: p.TenantID, AccountID: p.AccountID, ConversationID: p.ConversationID,
		GapAfter: p.After, CloseGap: p.Close, SeenBefore: p.SeenBefore}))
}
