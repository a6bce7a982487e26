package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/install"
)

// pageSize is how many rows a list page shows.
const pageSize = 100

// tenantOf reads ?tenant_id= (uuid.Nil when absent); false after
// answering 400 to a malformed one.
func (c *Console) tenantOf(w http.ResponseWriter, r *http.Request, v string) (uuid.UUID, bool) {
	if v == "" {
		return uuid.Nil, true
	}
	id, err := uuid.Parse(v)
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "tenant_id must be a UUID")
		return uuid.Nil, false
	}
	return id, true
}

// tenantPicked is the selected tenant of a tenant-scoped page: ?tenant_id=
// or else the first tenant (uuid.Nil when there is none).
func (c *Console) tenantPicked(w http.ResponseWriter, r *http.Request, v *view) (uuid.UUID, bool) {
	id, ok := c.tenantOf(w, r, r.URL.Query().Get("tenant_id"))
	if !ok {
		return uuid.Nil, false
	}
	tenants, err := c.admin.TenantList(r.Context())
	if err != nil {
		c.failErr(w, r, "list tenants", err)
		return uuid.Nil, false
	}
	v.Tenants = tenants
	if id == uuid.Nil && len(tenants) > 0 {
		id = tenants[0].ID
	}
	if id != uuid.Nil {
		v.Tenant = id.String()
	}
	return id, true
}

func idParam(r *http.Request, name string) (uuid.UUID, error) {
	return uuid.Parse(chi.URLParam(r, name))
}

// tenantAndID reads the {tenant_id} and {id} of a page about one item;
// false after answering 400 to a malformed one.
func (c *Console) tenantAndID(w http.ResponseWriter, r *http.Request) (tid, id uuid.UUID, ok bool) {
	tid, err1 := idParam(r, "tenant_id")
	id, err2 := idParam(r, "id")
	if err1 != nil || err2 != nil {
		c.fail(w, r, http.StatusBadRequest, "the tenant and item ids must be UUIDs")
		return uuid.Nil, uuid.Nil, false
	}
	return tid, id, true
}

// back redirects (303) to path with a flash message.
func back(w http.ResponseWriter, r *http.Request, path, flash string) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	http.Redirect(w, r, path+sep+"flash="+url.QueryEscape(flash), http.StatusSeeOther)
}

// --- overview

type overviewData struct {
	Consumers []*db.QueueHealth
	Queues    []*db.QueueHealth
	// DeadByChannel counts the newest dead letters (up to deadSample) by
	// channel type.
	DeadByChannel []channelCount
	DeadSample    int
	LastErrors    []*db.DeadLetter
	Ingest        []tenantRate
}

type channelCount struct {
	Channel string
	Count   int
}

// tenantRate is how many messages a tenant received in the last minute,
// counted up to ingestCap.
type tenantRate struct {
	Tenant  *db.Tenant
	PerMin  int
	AtLeast bool
}

const (
	deadSample     = 1000
	ingestCap      = 1000
	ingestTenants  = 20
	lastErrorCount = 10
)

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	health, err := c.admin.QueueHealth(ctx, uuid.Nil)
	if err != nil {
		c.failErr(w, r, "queue health", err)
		return
	}
	var d overviewData
	for _, h := range health {
		if h.Consumer != nil {
			d.Consumers = append(d.Consumers, h)
		} else {
			d.Queues = append(d.Queues, h)
		}
	}
	dead, err := db.DeadLettersList(ctx, c.pool, uuid.Nil, db.DeadLetterListParams{Limit: deadSample})
	if err != nil {
		c.failErr(w, r, "dead letters", err)
		return
	}
	d.DeadSample = len(dead)
	by := map[string]int{}
	for _, dl := range dead {
		by[dl.ChannelType]++
		if dl.LastError != "" && len(d.LastErrors) < lastErrorCount {
			d.LastErrors = append(d.LastErrors, dl)
		}
	}
	for ch, n := range by {
		d.DeadByChannel = append(d.DeadByChannel, channelCount{ch, n})
	}
	sort.Slice(d.DeadByChannel, func(i, j int) bool { return d.DeadByChannel[i].Count > d.DeadByChannel[j].Count })
	tenants, err := c.admin.TenantList(ctx)
	if err != nil {
		c.failErr(w, r, "tenants", err)
		return
	}
	floor := db.IDFloor(time.Now().Add(-time.Minute))
	for i, t := range tenants {
		if i == ingestTenants {
			break
		}
		var msgs []*db.TailMessage
		err := db.InTenantTx(ctx, c.pool, t.ID, func(tx pgx.Tx) error {
			var err error
			msgs, err = db.InboxTail(ctx, tx, t.ID, floor, ingestCap)
			return err
		})
		if err != nil {
			c.failErr(w, r, "ingest rate", err)
			return
		}
		d.Ingest = append(d.Ingest, tenantRate{Tenant: t, PerMin: len(msgs), AtLeast: len(msgs) == ingestCap})
	}
	c.render(w, r, http.StatusOK, "overview", view{Title: "Overview", Tenants: tenants, Data: d})
}

// --- accounts

func (c *Console) accountList(w http.ResponseWriter, r *http.Request) {
	v := view{Title: "Accounts"}
	tid, ok := c.tenantPicked(w, r, &v)
	if !ok {
		return
	}
	if tid != uuid.Nil {
		list, err := c.admin.AccountList(r.Context(), tid)
		if err != nil {
			c.failErr(w, r, "list accounts", err)
			return
		}
		v.Data = list
	}
	c.render(w, r, http.StatusOK, "accounts", v)
}

type accountNewData struct {
	Channels []string
	Channel  string
	Setup    channelSetup
}

// accountNew is the creation wizard: pick the tenant and channel, then
// fill in the channel's settings and secrets.
func (c *Console) accountNew(w http.ResponseWriter, r *http.Request) {
	v := view{Title: "New account"}
	if _, ok := c.tenantPicked(w, r, &v); !ok {
		return
	}
	ch := r.URL.Query().Get("channel")
	d := accountNewData{Channels: c.channelTypes(), Channel: ch}
	if ch != "" {
		s, ok := c.setup(ch)
		if !ok {
			c.fail(w, r, http.StatusBadRequest, "unknown channel "+strconv.Quote(ch))
			return
		}
		d.Setup = s
	}
	v.Data = d
	c.render(w, r, http.StatusOK, "account_new", v)
}

// channelTypes are the channels the wizard offers.
func (c *Console) channelTypes() []string {
	return c.reg.Types()
}

type accountCreatedData struct {
	Account *admin.AccountInfo
	Setup   channelSetup
}

func (c *Console) accountCreate(w http.ResponseWriter, r *http.Request) {
	tid, ok := c.tenantOf(w, r, r.PostFormValue("tenant_id"))
	if !ok {
		return
	}
	if tid == uuid.Nil {
		c.fail(w, r, http.StatusBadRequest, "pick a tenant")
		return
	}
	p := admin.AccountCreateParams{TenantID: tid, ChannelType: r.PostFormValue("channel_type"),
		DisplayName: r.PostFormValue("display_name"), ExternalID: r.PostFormValue("external_id"),
		WebhookSecret: r.PostFormValue("webhook_secret")}
	for _, f := range []struct {
		name string
		dst  *json.RawMessage
	}{{"settings", &p.Settings}, {"credentials", &p.Credentials}} {
		if s := strings.TrimSpace(r.PostFormValue(f.name)); s != "" {
			if !json.Valid([]byte(s)) {
				c.fail(w, r, http.StatusBadRequest, f.name+": not valid JSON")
				return
			}
			*f.dst = json.RawMessage(s)
		}
	}
	info, err := c.service(r).AccountCreate(r.Context(), p)
	if err != nil {
		c.failErr(w, r, "create account", err)
		return
	}
	c.render(w, r, http.StatusCreated, "account_created", view{Title: "Account created", Tenant: tid.String(),
		Data: accountCreatedData{Account: info, Setup: c.setupOrZero(info.ChannelType)}})
}

// accountInstall begins a one-click install and sends the browser to the
// platform's consent page; the platform sends it back to MIO's public
// callback, which creates the account and returns it to the account list.
func (c *Console) accountInstall(w http.ResponseWriter, r *http.Request) {
	if c.inst == nil {
		c.fail(w, r, http.StatusServiceUnavailable, "installs need the master key (MIO_MASTER_KEY)")
		return
	}
	tid, ok := c.tenantOf(w, r, r.PostFormValue("tenant_id"))
	if !ok {
		return
	}
	if tid == uuid.Nil {
		c.fail(w, r, http.StatusBadRequest, "pick a tenant")
		return
	}
	p := install.BeginParams{TenantID: tid, ChannelType: r.PostFormValue("channel_type"),
		DisplayName: r.PostFormValue("display_name"), WebhookSecret: r.PostFormValue("webhook_secret"),
		ReturnURL: consoleURL(r) + "/accounts?tenant_id=" + tid.String(), Actor: c.service(r).Actor()}
	for _, f := range []struct {
		name string
		dst  *json.RawMessage
	}{{"install_settings", &p.Settings}, {"app_credentials", &p.Credentials}} {
		if s := strings.TrimSpace(r.PostFormValue(f.name)); s != "" {
			if !json.Valid([]byte(s)) {
				c.fail(w, r, http.StatusBadRequest, f.name+": not valid JSON")
				return
			}
			*f.dst = json.RawMessage(s)
		}
	}
	begun, err := c.inst.Begin(r.Context(), p)
	switch {
	case errors.Is(err, install.ErrInvalid), errors.Is(err, install.ErrNotInstallable):
		c.fail(w, r, http.StatusBadRequest, "install: "+err.Error())
	case err != nil:
		c.failErr(w, r, "install", err)
	default:
		http.Redirect(w, r, begun.AuthorizeURL, http.StatusSeeOther)
	}
}

// consoleURL is the console's origin as the browser reached it.
func consoleURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// accountTarget reads {account_id} and its tenant.
func (c *Console) accountTarget(w http.ResponseWriter, r *http.Request) (tid, id uuid.UUID, ok bool) {
	id, err := idParam(r, "account_id")
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "account_id must be a UUID")
		return uuid.Nil, uuid.Nil, false
	}
	tid, err = c.admin.TenantOfAccount(r.Context(), id)
	if err != nil {
		c.failErr(w, r, "account", err)
		return uuid.Nil, uuid.Nil, false
	}
	return tid, id, true
}

func (c *Console) accountStatus(status string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tid, id, ok := c.accountTarget(w, r)
		if !ok {
			return
		}
		if _, err := c.service(r).AccountSetStatus(r.Context(), tid, id, status); err != nil {
			c.failErr(w, r, "account", err)
			return
		}
		c.forget(id)
		back(w, r, "/accounts?tenant_id="+tid.String(), "account "+id.String()+" is "+status)
	}
}

func (c *Console) accountRotateSecret(w http.ResponseWriter, r *http.Request) {
	tid, id, ok := c.accountTarget(w, r)
	if !ok {
		return
	}
	grace := admin.DefaultSecretGrace
	if g := r.PostFormValue("grace"); g != "" {
		d, err := time.ParseDuration(g)
		if err != nil {
			c.fail(w, r, http.StatusBadRequest, "grace: want a duration such as 24h")
			return
		}
		grace = d
	}
	if _, err := c.service(r).AccountRotateWebhookSecret(r.Context(), tid, id, r.PostFormValue("webhook_secret"), grace); err != nil {
		c.failErr(w, r, "rotate webhook secret", err)
		return
	}
	c.forget(id)
	back(w, r, "/accounts?tenant_id="+tid.String(), "webhook secret of "+id.String()+" rotated; the previous one verifies for "+grace.String())
}

// --- consumers

func (c *Console) consumerList(w http.ResponseWriter, r *http.Request) {
	tid, ok := c.tenantOf(w, r, r.URL.Query().Get("tenant_id"))
	if !ok {
		return
	}
	list, err := c.admin.ConsumerList(r.Context(), tid)
	if err != nil {
		c.failErr(w, r, "list consumers", err)
		return
	}
	c.render(w, r, http.StatusOK, "consumers", view{Title: "Consumers", Tenant: r.URL.Query().Get("tenant_id"), Data: list})
}

// --- messages

type messagesData struct {
	Since        string
	Conversation string
	Items        []*db.TailMessage
	// Next is the id the following page starts after; empty on the last.
	Next string
}

// messageScan bounds the rows read for one page (a conversation filter
// skips rows of other conversations among them).
const messageScan = 1000

// messageList shows a tenant's inbound messages received from ?since=
// (RFC 3339 or the form's local datetime, UTC; default an hour ago) or
// after the message ?after= (the next page), oldest first, optionally of
// one ?conversation=.
func (c *Console) messageList(w http.ResponseWriter, r *http.Request) {
	v := view{Title: "Messages"}
	tid, ok := c.tenantPicked(w, r, &v)
	if !ok {
		return
	}
	q := r.URL.Query()
	d := messagesData{Since: q.Get("since"), Conversation: q.Get("conversation")}
	since := time.Now().Add(-time.Hour)
	if d.Since != "" {
		t, err := parseTime(d.Since)
		if err != nil {
			c.fail(w, r, http.StatusBadRequest, "since: want a time such as 2026-01-02T15:04")
			return
		}
		since = t
	}
	d.Since = since.UTC().Format("2006-01-02T15:04:05")
	after := db.IDFloor(since)
	if a := q.Get("after"); a != "" {
		id, err := uuid.Parse(a)
		if err != nil {
			c.fail(w, r, http.StatusBadRequest, "after must be a message id")
			return
		}
		after = id
	}
	if tid != uuid.Nil {
		var msgs []*db.TailMessage
		err := db.InTenantTx(r.Context(), c.pool, tid, func(tx pgx.Tx) error {
			var err error
			msgs, err = db.InboxTail(r.Context(), tx, tid, after, messageScan)
			return err
		})
		if err != nil {
			c.failErr(w, r, "list messages", err)
			return
		}
		for _, m := range msgs {
			if d.Conversation != "" && m.ConversationID != d.Conversation {
				continue
			}
			d.Items = append(d.Items, m)
			if len(d.Items) == pageSize {
				d.Next = m.ID.String()
				break
			}
		}
		if d.Next == "" && len(msgs) == messageScan {
			d.Next = msgs[len(msgs)-1].ID.String()
		}
	}
	v.Data = d
	c.render(w, r, http.StatusOK, "messages", v)
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad time %q", s)
}

type messageData struct {
	Message *db.InboxMessage
}

func (c *Console) messageShow(w http.ResponseWriter, r *http.Request) {
	tid, id, ok := c.tenantAndID(w, r)
	if !ok {
		return
	}
	var m *db.InboxMessage
	err := db.InTenantTx(r.Context(), c.pool, tid, func(tx pgx.Tx) error {
		var err error
		m, err = db.InboxGet(r.Context(), tx, tid, id)
		return err
	})
	if err != nil {
		c.failErr(w, r, "message", err)
		return
	}
	c.render(w, r, http.StatusOK, "message", view{Title: "Message " + id.String(), Tenant: tid.String(), Data: messageData{m}})
}

// --- outbound

type outboundListData struct {
	State        string
	Conversation string
	Items        []*db.Outbound
	Next         string
}

func (c *Console) outboundList(w http.ResponseWriter, r *http.Request) {
	v := view{Title: "Outbound"}
	tid, ok := c.tenantPicked(w, r, &v)
	if !ok {
		return
	}
	q := r.URL.Query()
	d := outboundListData{State: q.Get("state"), Conversation: q.Get("conversation")}
	f := db.OutboxListParams{HandoffState: db.HandoffState(d.State), ConversationID: d.Conversation, Limit: pageSize}
	if d.State != "" && !f.HandoffState.Valid() {
		c.fail(w, r, http.StatusBadRequest, "state: want queued, sending, handed_off or dead")
		return
	}
	if b := q.Get("before"); b != "" {
		id, err := uuid.Parse(b)
		if err != nil {
			c.fail(w, r, http.StatusBadRequest, "before must be a UUID")
			return
		}
		f.BeforeID = id
	}
	if tid != uuid.Nil {
		page, err := c.admin.OutboundSearch(r.Context(), tid, admin.OutboundSearch{Filter: f})
		if err != nil {
			c.failErr(w, r, "search outbound", err)
			return
		}
		d.Items = page.Items
		if page.Next != uuid.Nil {
			d.Next = page.Next.String()
		}
	}
	v.Data = d
	c.render(w, r, http.StatusOK, "outbound", v)
}

type outboundData struct {
	Out    *db.Outbound
	Events []db.OutboxEvent
}

// outboundShow is one send with the timeline of both its state machines
// (hand-off and provider), from mio.outbox_events.
func (c *Console) outboundShow(w http.ResponseWriter, r *http.Request) {
	tid, id, ok := c.tenantAndID(w, r)
	if !ok {
		return
	}
	var d outboundData
	err := db.InTenantTx(r.Context(), c.pool, tid, func(tx pgx.Tx) error {
		var err error
		if d.Out, err = db.OutboxGet(r.Context(), tx, tid, id); err != nil {
			return err
		}
		d.Events, err = db.OutboxEventList(r.Context(), tx, tid, id)
		return err
	})
	if err != nil {
		c.failErr(w, r, "outbound", err)
		return
	}
	c.render(w, r, http.StatusOK, "outbound_show", view{Title: "Outbound " + id.String(), Tenant: tid.String(), Data: d})
}

// --- dead letters

type deadData struct {
	Kind, Channel string
	Items         []*db.DeadLetter
}

// deadFilter reads the dead-letter filter of a list or bulk request.
func (c *Console) deadFilter(w http.ResponseWriter, r *http.Request, get func(string) string) (admin.DeadFilter, bool) {
	tid, ok := c.tenantOf(w, r, get("tenant_id"))
	if !ok {
		return admin.DeadFilter{}, false
	}
	f := admin.DeadFilter{TenantID: tid, Kind: get("kind"), ChannelType: get("channel_type"), Limit: pageSize}
	switch f.Kind {
	case "", db.DeadLetterOutbound, db.DeadLetterConsumer, "attachment":
	default:
		c.fail(w, r, http.StatusBadRequest, "kind: want outbound, consumer or attachment")
		return admin.DeadFilter{}, false
	}
	return f, true
}

func (c *Console) deadList(w http.ResponseWriter, r *http.Request) {
	f, ok := c.deadFilter(w, r, r.URL.Query().Get)
	if !ok {
		return
	}
	items, err := db.DeadLettersList(r.Context(), c.pool, f.TenantID, db.DeadLetterListParams{Kind: f.Kind, ChannelType: f.ChannelType, Limit: f.Limit})
	if err != nil {
		c.failErr(w, r, "list dead letters", err)
		return
	}
	c.render(w, r, http.StatusOK, "dead", view{Title: "Dead letters", Tenant: r.URL.Query().Get("tenant_id"),
		Data: deadData{Kind: f.Kind, Channel: f.ChannelType, Items: items}})
}

func (c *Console) deadShow(w http.ResponseWriter, r *http.Request) {
	tid, id, ok := c.tenantAndID(w, r)
	if !ok {
		return
	}
	items, err := db.DeadLettersFind(r.Context(), c.pool, tid, id)
	if err != nil {
		c.failErr(w, r, "dead letter", err)
		return
	}
	c.render(w, r, http.StatusOK, "dead_show", view{Title: "Dead letter " + id.String(), Tenant: tid.String(), Data: items})
}

func (c *Console) deadApply(w http.ResponseWriter, r *http.Request) {
	tid, id, ok := c.tenantAndID(w, r)
	if !ok {
		return
	}
	action := chi.URLParam(r, "action")
	res, err := c.service(r).DeadApply(r.Context(), action, tid, id)
	if err != nil {
		c.failErr(w, r, action+" dead letter", err)
		return
	}
	msg := fmt.Sprintf("%s %s: %d item(s) changed", action, id, res.Items)
	if res.Items == 0 {
		msg = fmt.Sprintf("%s %s: no longer a dead letter, nothing to do", action, id)
	}
	back(w, r, "/dead-letters?tenant_id="+tid.String(), msg)
}

func (c *Console) deadBulk(w http.ResponseWriter, r *http.Request) {
	f, ok := c.deadFilter(w, r, r.PostFormValue)
	if !ok {
		return
	}
	action := r.PostFormValue("action")
	res, err := c.service(r).DeadApplyAll(r.Context(), action, f)
	if err != nil {
		c.failErr(w, r, action+" dead letters", err)
		return
	}
	q := url.Values{"kind": {f.Kind}, "channel_type": {f.ChannelType}}
	if f.TenantID != uuid.Nil {
		q.Set("tenant_id", f.TenantID.String())
	}
	back(w, r, "/dead-letters?"+q.Encode(), fmt.Sprintf("%s: %d dead letter(s) acted on", action, len(res)))
}

// --- audit

type auditData struct {
	Action string
	Page   *admin.Page[*db.AuditEntry]
}

func (c *Console) auditList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tid, ok := c.tenantOf(w, r, q.Get("tenant_id"))
	if !ok {
		return
	}
	p := db.AuditListParams{TenantID: tid, Action: q.Get("action"), Limit: pageSize}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			c.fail(w, r, http.StatusBadRequest, "before: want an audit entry id")
			return
		}
		p.BeforeID = n
	}
	page, err := c.admin.AuditList(r.Context(), p)
	if err != nil {
		c.failErr(w, r, "audit log", err)
		return
	}
	c.render(w, r, http.StatusOK, "audit", view{Title: "Audit log", Tenant: q.Get("tenant_id"), Data: auditData{Action: p.Action, Page: page}})
}

// --- live tail

func (c *Console) tailPage(w http.ResponseWriter, r *http.Request) {
	v := view{Title: "Live tail"}
	if _, ok := c.tenantPicked(w, r, &v); !ok {
		return
	}
	c.render(w, r, http.StatusOK, "tail", v)
}

// tailStream is the tail page's Server-Sent Events: the admin API's live
// tail (admin.Service.Tail), authenticated by the session cookie.
func (c *Console) tailStream(w http.ResponseWriter, r *http.Request) {
	tid, ok := c.tenantOf(w, r, r.URL.Query().Get("tenant_id"))
	if !ok {
		return
	}
	if tid == uuid.Nil {
		c.fail(w, r, http.StatusBadRequest, "tenant_id is required")
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		c.fail(w, r, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	opts := admin.TailOptions{Live: func() {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": mio console live tail\n\n")
		flusher.Flush()
	}}
	if c.hub != nil {
		sub := c.hub.Subscribe(tid)
		defer sub.Close()
		opts.Wake = sub.C
	}
	_ = c.admin.Tail(r.Context(), tid, opts, func(m *db.TailMessage) error {
		b, _ := json.Marshal(m)
		if _, err := fmt.Fprintf(w, "event: message\nid: %s\ndata: %s\n\n", m.ID, b); err != nil {
			return err
		}
		flusher.Flush()
		return nil
	})
}
