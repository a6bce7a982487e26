package workers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/miohq/mio/accounts"
	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/fetch"
	"github.com/miohq/mio/jobs"
	"github.com/miohq/mio/metrics"
	"github.com/miohq/mio/tracing"
)

// EnrichWorker fetches the attachments of one inbox message into the blob
// store and then makes the message ready.
//
// Per pending attachment: the channel's AttachmentFetcher opens the bytes
// through the channel's fetch.Client (allowed hosts, HTTPS, SSRF checks,
// size cap, timeout); they are streamed to a temporary file while hashed
// (memory stays bounded whatever the size), the blob is registered
// (mio.media_blobs), written under attachments/sha256/ab/cd/<sha256> with
// the store's idempotent Put (existing content is not rewritten), and the
// attachment is recorded as stored in mio.attachments together with its
// blob reference. Only a whole body is stored: the fetch client ends a body
// with io.EOF only when all of it arrived in time (and matched its
// Content-Length), and any other end leaves nothing behind (the temporary
// file is removed, the store is not written). A permanent failure (refused
// host or address, over the size cap, most 4xx, missing credentials) is
// recorded as failed at once; a transient one (5xx, network, a body cut
// short: fetch.ErrIncomplete) makes the job retry with backoff, and on the
// job's last attempt it is recorded as failed. Settled attachments are never fetched
// again by a retry. Once every attachment is settled, one transaction
// writes the enriched envelope and makes the message ready (ready_xid,
// ready_seq, ready_at): a message is never left stuck in received.
type EnrichWorker struct {
	river.WorkerDefaults[jobs.EnrichArgs]
	Pool     *pgxpool.Pool
	Blob     blob.Store
	Registry *channels.Registry
	// Accounts opens the accounts' secrets for their fetchers.
	Accounts *accounts.Resolver
	// Clients holds the fetch client of each channel slug (see
	// NewFetchClients).
	Clients map[string]*fetch.Client
	Metrics *metrics.Media
	Logger  *slog.Logger
	// TempDir holds the temporary files attachments stream through.
	// Default os.TempDir().
	TempDir string
	// JobTimeout bounds one run of a job. Default 10 minutes.
	JobTimeout time.Duration
}

// Timeout bounds one run (River's default of one minute is too short for
// several large attachments).
func (w *EnrichWorker) Timeout(*river.Job[jobs.EnrichArgs]) time.Duration {
	if w.JobTimeout > 0 {
		return w.JobTimeout
	}
	return 10 * time.Minute
}

// NextRetry backs off exponentially from 10 s, capped at 10 minutes, with
// jitter: the default 8 attempts span about 20 minutes, inside every
// platform's URL lifetime except WhatsApp's 5-minute URLs, which the
// adapter re-resolves from the media id (valid 7 days).
func (w *EnrichWorker) NextRetry(job *river.Job[jobs.EnrichArgs]) time.Time {
	return time.Now().Add(enrichBackoff(job.Attempt))
}

func enrichBackoff(attempt int) time.Duration {
	d := 10 * time.Second << min(max(attempt-1, 0), 6)
	d = min(d, 10*time.Minute)
	return d - d/10 + rand.N(d/5+1)
}

// Work settles the message's pending attachments.
func (w *EnrichWorker) Work(ctx context.Context, job *river.Job[jobs.EnrichArgs]) error {
	tenantID, msgID := job.Args.TenantID, job.Args.MessageID
	var (
		row     *db.InboxMessage
		settled []*db.Attachment
	)
	err := db.InTenantTx(ctx, w.Pool, tenantID, func(tx pgx.Tx) error {
		var err error
		if row, err = db.InboxGet(ctx, tx, tenantID, msgID); err != nil {
			return err
		}
		settled, err = db.AttachmentListByMessage(ctx, tx, tenantID, msgID)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return nil // deleted meanwhile: nothing to enrich
	}
	if err != nil {
		return fmt.Errorf("enrich: load message: %w", err)
	}
	if row.State != db.InboxReceived {
		return nil // settled by an earlier run
	}
	var msg envelope.Message
	if err := json.Unmarshal(row.Envelope, &msg); err != nil {
		return river.JobCancel(fmt.Errorf("enrich: decode envelope: %w", err))
	}
	// The run's span is River's (job_trace.go), a child of the message's
	// trace; each attachment fetched is a client span under it.
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("messaging.system", tracing.System), attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.message.id", msgID.String()))
	}
	done := make(map[string]*db.Attachment, len(settled))
	for _, a := range settled {
		done[a.ID.String()] = a
	}

	final := job.Attempt >= job.MaxAttempts
	s := &enrichRun{w: w, job: job, msg: &msg, final: final}
	var retry error
	for i := range msg.Attachments {
		a := &msg.Attachments[i]
		if a.Status != envelope.AttachmentPending || done[a.ID] != nil {
			continue
		}
		got, err := s.settle(ctx, a)
		if err != nil {
			retry = errors.Join(retry, err)
			continue
		}
		done[a.ID] = got
	}
	if retry != nil {
		return retry
	}

	for i := range msg.Attachments {
		applySettled(&msg.Attachments[i], done[msg.Attachments[i].ID])
	}
	env, err := json.Marshal(&msg)
	if err != nil {
		return fmt.Errorf("enrich: encode envelope: %w", err)
	}
	err = db.InTenantTx(ctx, w.Pool, tenantID, func(tx pgx.Tx) error {
		_, err := db.InboxSettle(ctx, tx, tenantID, msgID, env)
		return err
	})
	if err != nil {
		return fmt.Errorf("enrich: mark ready: %w", err)
	}
	return nil
}

// applySettled copies a settled row onto the envelope's attachment.
func applySettled(a *envelope.Attachment, s *db.Attachment) {
	if s == nil {
		return
	}
	switch s.Status {
	case db.AttachmentStored:
		a.Status, a.StorageKey, a.ContentSHA256, a.Size, a.Error = envelope.AttachmentStored, s.StorageKey, s.ContentSHA256, s.Size, ""
		if s.MimeType != "" {
			a.MimeType = s.MimeType
		}
	case db.AttachmentFailed:
		a.Status, a.Error = envelope.AttachmentFailed, s.Error
	}
}

// enrichRun is one run of a job.
type enrichRun struct {
	w     *EnrichWorker
	job   *river.Job[jobs.EnrichArgs]
	msg   *envelope.Message
	final bool

	acct    *channels.Account
	acctErr error
}

func (s *enrichRun) log() *slog.Logger {
	l := s.w.Logger
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	traceID := ""
	if sc := tracing.Remote(s.msg.TraceID); sc.IsValid() {
		traceID = sc.TraceID().String()
	}
	return l.With("message_id", s.msg.ID, "attempt", s.job.Attempt, "trace_id", traceID)
}

// settle fetches and stores one attachment and records it as stored, or
// records it as failed when the failure is permanent or this is the last
// attempt. A non-nil error means "retry the job later".
func (s *enrichRun) settle(ctx context.Context, a *envelope.Attachment) (*db.Attachment, error) {
	ct := s.msg.ChannelType
	start := time.Now()
	sctx, span := tracing.Child(ctx, "fetch attachment", trace.SpanKindClient)
	got, err := s.store(sctx, a)
	outcome := "stored"
	if err != nil {
		outcome = "retry"
		if s.final || isPermanentFetch(err) {
			outcome = "failed"
		}
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String("mio.attachment.kind", a.Kind), attribute.String("mio.outcome", outcome))
		if err != nil {
			span.SetStatus(codes.Error, outcome)
		}
	}
	span.End()
	if m := s.w.Metrics; m != nil {
		m.FetchDuration.WithLabelValues(ct, outcome).Observe(time.Since(start).Seconds())
		m.EnrichAttachments.WithLabelValues(ct, outcome).Inc()
	}
	switch outcome {
	case "stored":
		return got, nil
	case "retry":
		s.log().Info("attachment fetch failed; will retry", "attachment_id", a.ID, "err", err)
		return nil, fmt.Errorf("attachment %s: %w", a.ID, err)
	}
	s.log().Warn("attachment failed", "attachment_id", a.ID, "err", err)
	failed := s.row(a)
	failed.Status, failed.Error = db.AttachmentFailed, attachmentError(err)
	if ierr := db.InTenantTx(ctx, s.w.Pool, s.msg.TenantID, func(tx pgx.Tx) error {
		_, err := db.AttachmentInsert(ctx, tx, failed)
		return err
	}); ierr != nil {
		return nil, fmt.Errorf("attachment %s: record failure: %w", a.ID, ierr)
	}
	return failed, nil
}

// attachmentError is the error recorded on a failed attachment: bounded, and
// without the typed-error prefixes.
func attachmentError(err error) string {
	msg := err.Error()
	for _, p := range []string{"permanent: ", "transient: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	if len(msg) > 500 {
		msg = msg[:500]
	}
	return strings.ToValidUTF8(msg, "?")
}

func isPermanentFetch(err error) bool {
	var pe *channels.PermanentError
	return errors.As(err, &pe)
}

func (s *enrichRun) row(a *envelope.Attachment) *db.Attachment {
	id, _ := uuid.Parse(a.ID)
	return &db.Attachment{TenantID: s.msg.TenantID, ID: id, MessageID: s.msg.ID, AccountID: s.msg.AccountID,
		ChannelType: s.msg.ChannelType, Kind: a.Kind, Name: a.Name, MimeType: a.MimeType, Attempts: s.job.Attempt}
}

func (s *enrichRun) account(ctx context.Context) (channels.Account, error) {
	if s.acct == nil && s.acctErr == nil {
		acct, err := s.w.Accounts.Secrets(ctx, s.msg.TenantID, s.msg.AccountID)
		if errors.Is(err, accounts.ErrNotFound) {
			err = &channels.PermanentError{Err: fmt.Errorf("account %s no longer exists", s.msg.AccountID)}
		}
		s.acct, s.acctErr = &acct, err
	}
	if s.acctErr != nil {
		return channels.Account{}, s.acctErr
	}
	return *s.acct, nil
}

// store fetches one attachment and stores it; it returns the stored row.
func (s *enrichRun) store(ctx context.Context, a *envelope.Attachment) (*db.Attachment, error) {
	if _, err := uuid.Parse(a.ID); err != nil {
		return nil, &channels.PermanentError{Err: fmt.Errorf("attachment id %q is not a UUID", a.ID)}
	}
	ch, ok := s.w.Registry.Get(s.msg.ChannelType)
	fetcher, canFetch := ch.(channels.AttachmentFetcher)
	client := s.w.Clients[s.msg.ChannelType]
	if !ok || !canFetch || client == nil {
		return nil, &channels.PermanentError{Err: fmt.Errorf("channel %q cannot fetch attachments", s.msg.ChannelType)}
	}
	acct, err := s.account(ctx)
	if err != nil {
		return nil, err
	}
	f, err := fetcher.Fetch(ctx, acct, *a, client)
	if err != nil {
		return nil, err
	}
	defer f.Body.Close()

	tmp, err := os.CreateTemp(s.w.TempDir, "mio-enrich-*")
	if err != nil {
		return nil, fmt.Errorf("temp file: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	sniff := &sniffHead{max: 512}
	size, err := io.Copy(io.MultiWriter(tmp, h, sniff), f.Body)
	if err != nil {
		if errors.Is(err, fetch.ErrTooLarge) && !isPermanentFetch(err) {
			err = &channels.PermanentError{Err: err}
		}
		return nil, fmt.Errorf("download: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	key := blob.AttachmentKey(sum)
	mimeType := chooseMIME(a.MimeType, f.ContentType, sniff.b)

	// Register the blob before writing it, so that an object left by a
	// crash from here on is still known to (and collected by) the prune.
	if err := db.InTx(ctx, s.w.Pool, func(tx pgx.Tx) error {
		if err := db.MediaBlobLock(ctx, tx, sum); err != nil {
			return err
		}
		return db.MediaBlobReserve(ctx, tx, sum, key, size)
	}); err != nil {
		return nil, fmt.Errorf("reserve blob: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("temp file: %w", err)
	}
	_, created, err := s.w.Blob.Put(ctx, key, tmp, blob.PutOptions{ContentType: mimeType})
	if err != nil {
		return nil, err
	}
	if created && s.w.Metrics != nil {
		s.w.Metrics.BytesStored.WithLabelValues(s.msg.ChannelType).Add(float64(size))
	}

	row := s.row(a)
	row.Status, row.StorageKey, row.ContentSHA256, row.Size, row.MimeType = db.AttachmentStored, key, sum, size, mimeType
	err = db.InTenantTx(ctx, s.w.Pool, s.msg.TenantID, func(tx pgx.Tx) error {
		// Under the blob's lock the prune cannot delete the object
		// between this check and the reference's commit.
		if err := db.MediaBlobLock(ctx, tx, sum); err != nil {
			return err
		}
		if _, err := s.w.Blob.Stat(ctx, key); err != nil {
			return fmt.Errorf("check stored blob: %w", err)
		}
		inserted, err := db.AttachmentInsert(ctx, tx, row)
		if err != nil || !inserted {
			return err
		}
		return db.MediaBlobRef(ctx, tx, sum, key, size)
	})
	if err != nil {
		return nil, fmt.Errorf("record stored attachment: %w", err)
	}
	return row, nil
}

// chooseMIME prefers the type the platform declared in the webhook, then
// the download's Content-Type, then sniffing the first bytes.
func chooseMIME(declared, contentType string, first []byte) string {
	if declared != "" {
		return declared
	}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt != "application/octet-stream" && mt != "" {
		return mt
	}
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(first))
	return mt
}

// sniffHead keeps the first max bytes written to it.
type sniffHead struct {
	b   []byte
	max int
}

func (h *sniffHead) Write(p []byte) (int, error) {
	if n := h.max - len(h.b); n > 0 {
		h.b = append(h.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

// AddEnrich registers the enrich worker on the enrich queue with
// maxWorkers concurrent jobs (default 10).
func (s *Set) AddEnrich(w *EnrichWorker, maxWorkers int) {
	if maxWorkers <= 0 {
		maxWorkers = 10
	}
	addWorker(s, w, jobs.QueueEnrich, maxWorkers)
}
