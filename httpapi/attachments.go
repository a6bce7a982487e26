package httpapi

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/blob"
	"github.com/miohq/mio/db"
)

// getAttachment answers GET /v1/attachments/{id}: the bytes of a stored
// attachment of the caller's tenant, with its content type and length
// (ranges and If-None-Match supported when the store gives a seekable
// reader), or a redirect to a short-lived signed URL when configured and
// the store can sign. Bytes are always served as a download (no sniffing,
// sandboxed) so a hostile file cannot run as a page of the API's origin.
func (s *Server) getAttachment(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "attachment id must be a UUID")
		return
	}
	var a *db.Attachment
	err = db.InTenantTx(r.Context(), s.pool, p.TenantID, func(tx pgx.Tx) error {
		var err error
		a, err = db.AttachmentGet(r.Context(), tx, p.TenantID, id)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		writeError(w, http.StatusNotFound, "not_found", "no such attachment, or it is not stored yet")
		return
	}
	if err != nil {
		s.dbError(w, r, "get attachment", err)
		return
	}
	if a.Status != db.AttachmentStored {
		writeError(w, http.StatusNotFound, "attachment_failed", "the attachment could not be fetched from the platform: "+a.Error)
		return
	}
	if s.blob == nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "no blob store configured")
		return
	}
	if signer, ok := s.blob.(blob.URLSigner); ok && s.attachmentTTL > 0 {
		u, err := signer.SignedURL(r.Context(), a.StorageKey, s.attachmentTTL)
		if err != nil {
			s.blobError(w, r, "sign attachment URL", err)
			return
		}
		w.Header().Set("Cache-Control", "private, no-store")
		http.Redirect(w, r, u, http.StatusFound)
		return
	}
	rc, info, err := s.blob.Get(r.Context(), a.StorageKey)
	if err != nil {
		s.blobError(w, r, "open attachment", err)
		return
	}
	defer rc.Close()

	ctype := a.MimeType
	if ctype == "" {
		ctype = info.ContentType
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("ETag", `"`+a.ContentSHA256+`"`)
	h.Set("Cache-Control", "private, max-age=3600, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Content-Disposition", disposition(a.Name, a.ID.String()))
	if rs, ok := rc.(io.ReadSeeker); ok {
		http.ServeContent(w, r, "", info.Updated, rs) // ranges, If-None-Match
		return
	}
	if match := r.Header.Get("If-None-Match"); match != "" && match == h.Get("ETag") {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.FormatInt(info.Size, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(w, rc); err != nil {
		s.log.Warn("attachment stream interrupted", "attachment_id", a.ID, "err", err)
	}
}

// disposition names the download after the platform's file name, falling
// back to the attachment id.
func disposition(name, fallback string) string {
	if name == "" {
		name = fallback
	}
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return mime.FormatMediaType("attachment", map[string]string{"filename": fallback})
}

// blobError answers a blob store failure: a missing object is a 404 (its
// bytes were pruned or lost), anything else a 503 to retry.
func (s *Server) blobError(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, blob.ErrNotFound) {
		s.log.Error("stored attachment missing from the blob store", "step", what, "err", err)
		writeError(w, http.StatusNotFound, "not_found", "the attachment's bytes are no longer stored")
		return
	}
	s.log.Warn("blob store error", "step", what, "err", err)
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, "unavailable", "blob store temporarily unavailable, retry")
}
