package db

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/db/internal/dbsqlc"
)

// AuditEntry is one row of mio.audit_log: who did what to which target,
// when, and the target's secrets-free state before and after.
type AuditEntry struct {
	ID int64     `json:"id"`
	At time.Time `json:"at"`
	// Actor is "admin:<admin token id>" or "cli:<os user>".
	Actor    string          `json:"actor"`
	Action   string          `json:"action"`
	TenantID *uuid.UUID      `json:"tenant_id,omitempty"`
	Target   string          `json:"target"`
	Before   json.RawMessage `json:"before,omitempty"`
	After    json.RawMessage `json:"after,omitempty"`
}

// AuditInsertParams describe one audited mutation. Before and After are
// marshalled to JSON (nil: none); they must not hold secrets.
type AuditInsertParams struct {
	Actor    string
	Action   string
	TenantID uuid.UUID // uuid.Nil: not a tenant's object
	Target   string
	Before   any
	After    any
}

// AuditInsert records a mutation; call it in the mutation's transaction.
func AuditInsert(ctx context.Context, tx DBTX, p *AuditInsertParams) (*AuditEntry, error) {
	before, err := auditJSON(p.Before)
	if err != nil {
		return nil, err
	}
	after, err := auditJSON(p.After)
	if err != nil {
		return nil, err
	}
	var tenant *uuid.UUID
	if p.TenantID != uuid.Nil {
		tenant = &p.TenantID
	}
	r, err := queries().AuditInsert(ctx, tx, &dbsqlc.AuditInsertParams{Actor: p.Actor, Action: p.Action,
		TenantID: tenant, Target: p.Target, Before: before, After: after})
	if err != nil {
		return nil, translate(err)
	}
	return auditFrom(r), nil
}

func auditJSON(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

func auditFrom(r dbsqlc.MioAuditLog) *AuditEntry {
	return &AuditEntry{ID: r.ID, At: r.At, Actor: r.Actor, Action: r.Action, TenantID: r.TenantID,
		Target: r.Target, Before: r.Before, After: r.After}
}

// AuditListParams filter a page of the audit log.
type AuditListParams struct {
	// BeforeID: entries older than this id (0: from the newest).
	BeforeID int64
	// TenantID, when set, keeps one tenant's entries.
	TenantID uuid.UUID
	// Action, when set, keeps one action.
	Action string
	// Limit caps the page. Required.
	Limit int
}

// AuditList returns a keyset page of the log, newest first.
func AuditList(ctx context.Context, tx DBTX, p AuditListParams) ([]*AuditEntry, error) {
	q := &dbsqlc.AuditListParams{BeforeID: p.BeforeID, MaxRows: int32(p.Limit)}
	if q.BeforeID <= 0 {
		q.BeforeID = math.MaxInt64
	}
	if p.TenantID != uuid.Nil {
		q.TenantID = &p.TenantID
	}
	if p.Action != "" {
		q.Action = &p.Action
	}
	rows, err := queries().AuditList(ctx, tx, q)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]*AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = auditFrom(r)
	}
	return out, nil
}
