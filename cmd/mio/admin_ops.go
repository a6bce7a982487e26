package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
)

// The `mio admin` commands beyond tenants and account creation
// (admin.go): account changes, tokens, consumers, dead letters, audit.

// devDatabaseURL is the database_url of the mio dev whose data dir is
// dataDir ("" when there is none).
func devDatabaseURL(dataDir string) string {
	var info devInfo
	b, err := os.ReadFile(filepath.Join(dataDir, "dev.json"))
	if err != nil || json.Unmarshal(b, &info) != nil {
		return ""
	}
	return info.DatabaseURL
}

// devMasterKey is the master key mio dev generated in dataDir, if any.
func devMasterKey(dataDir string) []byte {
	b, err := os.ReadFile(filepath.Join(dataDir, "master.key"))
	if err != nil {
		return nil
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(k) != 32 {
		return nil
	}
	return k
}

// oneID is the one positional argument, a uuid naming a what.
func (a *adminArgs) oneID(what string) (uuid.UUID, error) {
	if len(a.positional) != 1 {
		return uuid.Nil, &usageError{"give one " + what + " id"}
	}
	id, err := uuid.Parse(a.positional[0])
	if err != nil {
		return uuid.Nil, &usageError{"the " + what + " id must be a uuid"}
	}
	return id, nil
}

// optionalTenant is --tenant when given (uuid.Nil: every tenant).
func (a *adminArgs) optionalTenant() (uuid.UUID, error) {
	if a.tenant == "" {
		return uuid.Nil, nil
	}
	return a.tenantID()
}

// intFlag parses a numeric flag ("": 0).
func intFlag(name, v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, &usageError{"--" + name + " must be a number"}
	}
	return n, nil
}

func adminAccount(ctx context.Context, svc *admin.Service, command string, a *adminArgs, getenv env) (any, error) {
	tid, id, err := a.account(ctx, svc)
	if err != nil {
		return nil, err
	}
	switch command {
	case "account show":
		return svc.AccountShow(ctx, tid, id)
	case "account disable":
		return svc.AccountSetStatus(ctx, tid, id, db.AccountDisabled)
	case "account enable":
		return svc.AccountSetStatus(ctx, tid, id, db.AccountActive)
	case "account update":
		u, err := a.accountUpdate()
		if err != nil {
			return nil, err
		}
		return svc.AccountUpdate(ctx, tid, id, u)
	case "account rotate-secret":
		secret, err := readSecret(a.secretFile, a.secretEnv, getenv, "webhook secret")
		if err != nil {
			return nil, err
		}
		if secret == "" {
			return nil, &usageError{"give the new webhook secret with --webhook-secret-file or --webhook-secret-env"}
		}
		grace := admin.DefaultSecretGrace
		if a.grace != "" {
			if grace, err = time.ParseDuration(a.grace); err != nil {
				return nil, &usageError{"--grace must be a duration such as 24h"}
			}
		}
		return svc.AccountRotateWebhookSecret(ctx, tid, id, secret, grace)
	case "account rotate-credentials":
		cred, err := readSecret(a.credFile, a.credEnv, getenv, "credentials")
		if err != nil {
			return nil, err
		}
		if cred == "" {
			return nil, &usageError{"give the new credentials with --credentials-file or --credentials-env"}
		}
		return svc.AccountRotateCredentials(ctx, tid, id, json.RawMessage(cred))
	}
	return nil, errors.New("unreachable")
}

// accountUpdate builds the update from the flags; "default" resets a
// limit to the channel's default.
func (a *adminArgs) accountUpdate() (admin.AccountUpdate, error) {
	var u admin.AccountUpdate
	if a.name != "" {
		u.DisplayName = admin.Optional[string]{Set: true, Value: &a.name}
	}
	num := func(flagName, v string, bits int, dst func(float64)) error {
		if v == "" || v == "default" {
			return nil
		}
		f, err := strconv.ParseFloat(v, bits)
		if err != nil {
			return &usageError{"--" + flagName + " must be a number or 'default'"}
		}
		dst(f)
		return nil
	}
	if a.rateLimit != "" {
		u.RateLimitPerSec.Set = true
		if err := num("rate-limit", a.rateLimit, 64, func(f float64) { u.RateLimitPerSec.Value = &f }); err != nil {
			return u, err
		}
	}
	for _, f := range []struct {
		name, v string
		dst     *admin.Optional[int32]
	}{{"burst", a.burst, &u.RateLimitBurst}, {"max-attempts", a.maxAttempts, &u.MaxAttempts}} {
		if f.v == "" {
			continue
		}
		f.dst.Set = true
		if f.v == "default" {
			continue
		}
		n, err := strconv.ParseInt(f.v, 10, 32)
		if err != nil {
			return u, &usageError{"--" + f.name + " must be a whole number or 'default'"}
		}
		v := int32(n)
		f.dst.Value = &v
	}
	patch := map[string]any{}
	if a.settingsFile != "" {
		b, err := os.ReadFile(a.settingsFile)
		if err != nil {
			return u, err
		}
		if err := json.Unmarshal(b, &patch); err != nil {
			return u, &usageError{"--settings-file must hold a JSON object"}
		}
	}
	switch a.apiBaseURL {
	case "":
	case "default":
		patch["api_base_url"] = nil
	default:
		patch["api_base_url"] = a.apiBaseURL
	}
	if len(patch) > 0 {
		b, _ := json.Marshal(patch)
		u.Settings = b
	}
	return u, nil
}

func adminToken(ctx context.Context, svc *admin.Service, command string, a *adminArgs) (any, error) {
	tid, err := a.tenantID()
	if err != nil {
		return nil, err
	}
	switch command {
	case "token create":
		var roles []db.Role
		for _, r := range strings.Split(a.roles, ",") {
			if r = strings.TrimSpace(r); r != "" {
				roles = append(roles, db.Role(r))
			}
		}
		token, meta, err := svc.TokenCreate(ctx, tid, a.name, roles)
		if err != nil {
			return nil, err
		}
		return struct {
			Token string `json:"token"`
			*db.APIToken
		}{token, meta}, nil
	case "token list":
		n, err := intFlag("limit", a.limit)
		if err != nil {
			return nil, err
		}
		return svc.TokenPage(ctx, tid, a.after, n)
	default:
		id, err := a.oneID("token")
		if err != nil {
			return nil, err
		}
		tok, ch, err := svc.TokenRevoke(ctx, tid, id)
		return changedResult{tok, ch}, err
	}
}

func adminAdminToken(ctx context.Context, svc *admin.Service, command string, a *adminArgs) (any, error) {
	switch command {
	case "admin-token create":
		p := admin.AdminTokenCreateParams{Name: a.name}
		for _, r := range strings.Split(a.roles, ",") {
			if r = strings.TrimSpace(r); r != "" {
				p.Roles = append(p.Roles, db.AdminRole(r))
			}
		}
		if a.ttl != "" {
			d, err := time.ParseDuration(a.ttl)
			if err != nil || d <= 0 {
				return nil, &usageError{"--ttl must be a positive duration such as 720h"}
			}
			p.TTL = d
		}
		token, meta, err := svc.AdminTokenCreate(ctx, p)
		if err != nil {
			return nil, err
		}
		return struct {
			Token string `json:"token"`
			*db.AdminToken
		}{token, meta}, nil
	case "admin-token list":
		n, err := intFlag("limit", a.limit)
		if err != nil {
			return nil, err
		}
		return svc.AdminTokenList(ctx, a.after, n)
	default:
		id, err := a.oneID("admin token")
		if err != nil {
			return nil, err
		}
		tok, ch, err := svc.AdminTokenRevoke(ctx, id)
		return changedResult{tok, ch}, err
	}
}

func adminConsumer(ctx context.Context, svc *admin.Service, command string, a *adminArgs) (any, error) {
	if command == "consumer list" {
		tid, err := a.optionalTenant()
		if err != nil {
			return nil, err
		}
		n, err := intFlag("limit", a.limit)
		if err != nil {
			return nil, err
		}
		return svc.ConsumerPage(ctx, tid, a.after, n)
	}
	tid, err := a.tenantID()
	if err != nil {
		return nil, err
	}
	if len(a.positional) != 1 {
		return nil, &usageError{"give one consumer name"}
	}
	name := a.positional[0]
	switch command {
	case "consumer show":
		return svc.ConsumerShow(ctx, tid, name)
	case "consumer seek":
		at, err := time.Parse(time.RFC3339Nano, a.seekTime)
		if err != nil {
			return nil, &usageError{"--time must be an RFC 3339 time such as 2026-11-22T06:00:00Z"}
		}
		return svc.ConsumerSeek(ctx, tid, name, at)
	}
	if err := svc.ConsumerDelete(ctx, tid, name); err != nil {
		return nil, err
	}
	return map[string]any{"tenant_id": tid, "name": name, "deleted": true}, nil
}

func adminDeadApply(ctx context.Context, svc *admin.Service, command string, a *adminArgs) (any, error) {
	tid, err := a.optionalTenant()
	if err != nil {
		return nil, err
	}
	action := admin.DeadRequeue
	if strings.HasPrefix(command, "dead discard") {
		action = admin.DeadDiscard
	}
	if strings.HasSuffix(command, "-all") {
		n, err := intFlag("limit", a.limit)
		if err != nil {
			return nil, err
		}
		items, err := svc.DeadApplyAll(ctx, action, admin.DeadFilter{TenantID: tid, Kind: a.kind, ChannelType: a.channel, Limit: n})
		return admin.Page[*admin.DeadResult]{Items: items}, err
	}
	id, err := a.oneID("dead letter")
	if err != nil {
		return nil, err
	}
	res, err := svc.DeadApply(ctx, action, tid, id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errors.New("no dead letter or message " + id.String())
	}
	if err != nil {
		return nil, err
	}
	return changedResult{res, res.Items > 0}, nil
}

func adminAuditList(ctx context.Context, svc *admin.Service, a *adminArgs) (any, error) {
	tid, err := a.optionalTenant()
	if err != nil {
		return nil, err
	}
	p := db.AuditListParams{TenantID: tid, Action: a.action}
	if p.Limit, err = intFlag("limit", a.limit); err != nil {
		return nil, err
	}
	before, err := intFlag("before", a.before)
	if err != nil {
		return nil, err
	}
	p.BeforeID = int64(before)
	return svc.AuditList(ctx, p)
}

func adminOutboundSearch(ctx context.Context, svc *admin.Service, a *adminArgs) (any, error) {
	tid, err := a.tenantID()
	if err != nil {
		return nil, err
	}
	q := admin.OutboundSearch{Filter: db.OutboxListParams{HandoffState: db.HandoffState(a.state), ConversationID: a.conversation}}
	if a.state != "" && !q.Filter.HandoffState.Valid() {
		return nil, &usageError{"--state must be queued, sending, handed_off or dead"}
	}
	for _, f := range []struct {
		name, v string
		dst     *uuid.UUID
	}{{"account", a.accountID, &q.Filter.AccountID}, {"after", a.after, &q.Filter.BeforeID}} {
		if f.v == "" {
			continue
		}
		if *f.dst, err = uuid.Parse(f.v); err != nil {
			return nil, &usageError{"--" + f.name + " must be a uuid"}
		}
	}
	for _, f := range []struct {
		name, v string
		dst     *time.Time
	}{{"since", a.since, &q.Since}, {"until", a.until, &q.Until}} {
		if f.v == "" {
			continue
		}
		if *f.dst, err = time.Parse(time.RFC3339Nano, f.v); err != nil {
			return nil, &usageError{"--" + f.name + " must be an RFC 3339 time"}
		}
	}
	if q.Filter.Limit, err = intFlag("limit", a.limit); err != nil {
		return nil, err
	}
	page, err := svc.OutboundSearch(ctx, tid, q)
	if err != nil {
		return nil, err
	}
	out := struct {
		Items []outboundRow `json:"items"`
		Next  *uuid.UUID    `json:"next,omitempty"`
	}{Items: make([]outboundRow, len(page.Items))}
	for i, o := range page.Items {
		out.Items[i] = outboundRow{ID: o.ID, AccountID: o.AccountID, ChannelType: o.ChannelType, ConversationID: o.ConversationID,
			State: string(o.HandoffState), ProviderState: string(o.ProviderState), Attempts: o.Attempts, LastError: o.LastError,
			CreatedAt: o.CreatedAt, HandedOffAt: o.HandedOffAt, DeadAt: o.DeadAt}
	}
	if page.Next != uuid.Nil {
		out.Next = &page.Next
	}
	return out, nil
}

// outboundRow is what `mio admin outbound search` shows of a message
// (GET /v1/outbound/{id} has the rest).
type outboundRow struct {
	ID             uuid.UUID  `json:"id"`
	AccountID      uuid.UUID  `json:"account_id"`
	ChannelType    string     `json:"channel_type"`
	ConversationID string     `json:"conversation_id"`
	State          string     `json:"state"`
	ProviderState  string     `json:"provider_state"`
	Attempts       int        `json:"attempts"`
	LastError      string     `json:"last_error,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	HandedOffAt    *time.Time `json:"handed_off_at,omitempty"`
	DeadAt         *time.Time `json:"dead_at,omitempty"`
}
