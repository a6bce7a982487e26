package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// Settled attachment statuses recorded in mio.attachments.
const (
	AttachmentStored = "stored"
	AttachmentFailed = "failed"
)

// Attachment is one settled attachment (mio.attachments).
type Attachment struct {
	TenantID    uuid.UUID
	ID          uuid.UUID
	MessageID   uuid.UUID
	AccountID   uuid.UUID
	ChannelType string
	// Status is AttachmentStored or AttachmentFailed.
	Status   string
	Kind     string
	Name     string
	MimeType string
	Size     int64
	// StorageKey and ContentSHA256 are set when stored.
	StorageKey    string
	ContentSHA256 string
	// Error says why a failed attachment failed.
	Error     string
	Attempts  int
	CreatedAt time.Time
}

func attachmentFrom(r dbsqlc.MioAttachment) *Attachment {
	a := &Attachment{TenantID: r.TenantID, ID: r.ID, MessageID: r.MessageID, AccountID: r.AccountID,
		ChannelType: r.ChannelType, Status: r.Status, Kind: r.Kind, Name: r.Name, MimeType: r.MimeType,
		Size: r.Size, Error: r.Error, Attempts: int(r.Attempts), CreatedAt: r.CreatedAt}
	if r.StorageKey != nil {
		a.StorageKey = *r.StorageKey
	}
	if r.ContentSha256 != nil {
		a.ContentSHA256 = *r.ContentSha256
	}
	return a
}

// AttachmentInsert records a settled attachment. It returns false when the
// attachment was already recorded (a retried job), leaving that row as it
// is.
func AttachmentInsert(ctx context.Context, tx DBTX, a *Attachment) (bool, error) {
	p := &dbsqlc.AttachmentInsertParams{
		TenantID: a.TenantID, ID: a.ID, MessageID: a.MessageID, AccountID: a.AccountID,
		ChannelType: a.ChannelType, Status: a.Status, Kind: a.Kind, Name: a.Name, MimeType: a.MimeType,
		Size: a.Size, Error: a.Error, Attempts: int32(a.Attempts),
	}
	if a.StorageKey != "" {
		p.StorageKey = &a.StorageKey
	}
	if a.ContentSHA256 != "" {
		p.ContentSha256 = &a.ContentSHA256
	}
	n, err := queries().AttachmentInsert(ctx, tx, p)
	if err != nil {
		return false, translate(err)
	}
	return n == 1, nil
}

// AttachmentListByMessage returns the settled attachments of one message.
func AttachmentListByMessage(ctx context.Context, tx DBTX, tenantID, messageID uuid.UUID) ([]*Attachment, error) {
	rows, err := queries().AttachmentListByMessage(ctx, tx, &dbsqlc.AttachmentListByMessageParams{TenantID: tenantID, MessageID: messageID})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*Attachment, len(rows))
	for i, r := range rows {
		out[i] = attachmentFrom(r)
	}
	return out, nil
}

// AttachmentGet returns one settled attachment of the tenant, or
// ErrNotFound (also while it is still pending).
func AttachmentGet(ctx context.Context, tx DBTX, tenantID, id uuid.UUID) (*Attachment, error) {
	r, err := queries().AttachmentGet(ctx, tx, &dbsqlc.AttachmentGetParams{TenantID: tenantID, ID: id})
	if err != nil {
		return nil, translate(err)
	}
	return attachmentFrom(r), nil
}

// InboxSettle writes a message's settled envelope (without raw) and makes
// it ready in the same statement: state ready, ready_xid =
// pg_current_xact_id(), ready_seq from mio.inbox_ready_seq, ready_at now.
// It returns false when the message is not in state received (already
// settled by an earlier run, or gone).
func InboxSettle(ctx context.Context, tx DBTX, tenantID, id uuid.UUID, envelope []byte) (bool, error) {
	n, err := queries().MediaInboxSettle(ctx, tx, &dbsqlc.MediaInboxSettleParams{TenantID: tenantID, ID: id, Envelope: envelope})
	if err != nil {
		return false, translate(err)
	}
	return n == 1, nil
}

// MediaBlob is a registered content-addressed blob (mio.media_blobs).
type MediaBlob struct {
	ContentSHA256     string
	StorageKey        string
	Size              int64
	Refs              int64
	UnreferencedSince *time.Time
	CreatedAt         time.Time
}

// MediaBlobLock takes the transaction-scoped advisory lock of one blob;
// every writer of the blob's registry row takes it first.
func MediaBlobLock(ctx context.Context, tx DBTX, sha256hex string) error {
	return translate(queries().MediaBlobLock(ctx, tx, &dbsqlc.MediaBlobLockParams{ContentSha256: sha256hex}))
}

// MediaBlobReserve registers a blob before its bytes are written, or
// refreshes an unreferenced registration so the blob prune leaves it
// alone for a full retention period.
func MediaBlobReserve(ctx context.Context, tx DBTX, sha256hex, key string, size int64) error {
	return translate(queries().MediaBlobReserve(ctx, tx, &dbsqlc.MediaBlobReserveParams{ContentSha256: sha256hex, StorageKey: key, Size: size}))
}

// MediaBlobRef counts one more stored attachment naming the blob.
func MediaBlobRef(ctx context.Context, tx DBTX, sha256hex, key string, size int64) error {
	return translate(queries().MediaBlobRef(ctx, tx, &dbsqlc.MediaBlobRefParams{ContentSha256: sha256hex, StorageKey: key, Size: size}))
}

// MediaBlobGet returns a blob's registration, or ErrNotFound.
func MediaBlobGet(ctx context.Context, tx DBTX, sha256hex string) (*MediaBlob, error) {
	r, err := queries().MediaBlobGet(ctx, tx, &dbsqlc.MediaBlobGetParams{ContentSha256: sha256hex})
	if err != nil {
		return nil, translate(err)
	}
	return &MediaBlob{ContentSHA256: r.ContentSha256, StorageKey: r.StorageKey, Size: r.Size, Refs: r.Refs,
		UnreferencedSince: r.UnreferencedSince, CreatedAt: r.CreatedAt}, nil
}

// MediaBlobPruneCandidates returns at most maxRows blobs (hash, key)
// unreferenced since before before, oldest first.
func MediaBlobPruneCandidates(ctx context.Context, tx DBTX, before time.Time, maxRows int) ([]MediaBlob, error) {
	rows, err := queries().MediaBlobPruneCandidates(ctx, tx, &dbsqlc.MediaBlobPruneCandidatesParams{Before: before, MaxRows: int32(maxRows)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]MediaBlob, len(rows))
	for i, r := range rows {
		out[i] = MediaBlob{ContentSHA256: r.ContentSha256, StorageKey: r.StorageKey}
	}
	return out, nil
}

// MediaBlobDelete deletes a blob's registration if it is still
// unreferenced since before before; it reports whether it did.
func MediaBlobDelete(ctx context.Context, tx DBTX, sha256hex string, before time.Time) (bool, error) {
	n, err := queries().MediaBlobDelete(ctx, tx, &dbsqlc.MediaBlobDeleteParams{ContentSha256: sha256hex, Before: before})
	if err != nil {
		return false, translate(err)
	}
	return n == 1, nil
}
