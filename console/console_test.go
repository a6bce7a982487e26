package console_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels/builtin"
	"github.com/miohq/mio/console"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/db/dbtest"
	"github.com/miohq/mio/envelope"
	"github.com/miohq/mio/secretbox"
)

type testBundle struct {
	env     *dbtest.Env
	svc     *admin.Service
	srv     *httptest.Server
	tenant  uuid.UUID
	account uuid.UUID
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	env := dbtest.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	svc := admin.New(env.Pool, box, "http://mio.test")
	con, err := console.New(console.Deps{Pool: env.Pool, Admin: svc, Registry: builtin.Registry(builtin.Options{})})
	require.NoError(t, err)
	srv := httptest.NewServer(con.Handler())
	t.Cleanup(srv.Close)
	tenant, _, err := svc.TenantCreate(ctx, "console")
	require.NoError(t, err)
	acct, err := svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: tenant.ID, ChannelType: "webhook", WebhookSecret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0"})
	require.NoError(t, err)
	return &testBundle{env: env, svc: svc, srv: srv, tenant: tenant.ID, account: acct.ID}
}

// token creates an admin token with roles.
func (b *testBundle) token(t *testing.T, roles ...db.AdminRole) string {
	t.Helper()
	tok, _, err := b.svc.AdminTokenCreate(context.Background(), admin.AdminTokenCreateParams{Name: "t", Roles: roles})
	require.NoError(t, err)
	return tok
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// client is a browser-like client: a cookie jar, redirects not followed.
func (b *testBundle) client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get returns the status and body of GET path.
func (b *testBundle) get(t *testing.T, c *http.Client, path string) (int, string) {
	t.Helper()
	resp, err := c.Get(b.srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// post returns the status and body of a form POST.
func (b *testBundle) post(t *testing.T, c *http.Client, path string, form url.Values) (int, string) {
	t.Helper()
	resp, err := c.PostForm(b.srv.URL+path, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// login signs c in with token and returns the session's CSRF token.
func (b *testBundle) login(t *testing.T, c *http.Client, token string) (int, string) {
	t.Helper()
	_, page := b.get(t, c, "/login")
	m := csrfField.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	status, _ := b.post(t, c, "/login", url.Values{"csrf": {m[1]}, "token": {token}})
	if status != http.StatusSeeOther {
		return status, ""
	}
	_, page = b.get(t, c, "/")
	m = csrfField.FindStringSubmatch(page)
	require.NotNil(t, m, page)
	return status, m[1]
}

func (b *testBundle) auditCount(t *testing.T) int {
	t.Helper()
	p, err := b.svc.AuditList(context.Background(), db.AuditListParams{Limit: 1000})
	require.NoError(t, err)
	return len(p.Items)
}

func TestConsoleLoginFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(t)

	status, _ := b.get(t, c, "/")
	require.Equal(t, http.StatusSeeOther, status, "not signed in: to the login form")

	status, _ = b.login(t, c, "mioa_wrong")
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = b.get(t, c, "/")
	require.Equal(t, http.StatusSeeOther, status, "a failed login opens no session")

	// A login form posted without its CSRF pair (another site's form).
	status, _ = b.post(t, b.client(t), "/login", url.Values{"token": {b.token(t, db.AdminRoleViewer)}})
	require.Equal(t, http.StatusForbidden, status)

	// A revoked token's session ends.
	tok := b.token(t, db.AdminRoleViewer)
	status, _ = b.login(t, c, tok)
	require.Equal(t, http.StatusSeeOther, status)
	status, _ = b.get(t, c, "/")
	require.Equal(t, http.StatusOK, status)
	list, err := b.svc.AdminTokenList(context.Background(), "", 100)
	require.NoError(t, err)
	for _, at := range list.Items {
		_, _, err := b.svc.AdminTokenRevoke(context.Background(), at.ID)
		require.NoError(t, err)
	}
	status, _ = b.get(t, c, "/")
	require.Equal(t, http.StatusSeeOther, status)
}

func TestConsoleCSRFRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(t)
	_, csrf := b.login(t, c, b.token(t, db.AdminRoleOperator))
	other := b.client(t)
	_, otherCSRF := b.login(t, other, b.token(t, db.AdminRoleOperator))
	before := b.auditCount(t)
	path := "/accounts/" + b.account.String() + "/disable"
	for _, form := range []url.Values{{}, {"csrf": {"forged"}}, {"csrf": {csrf + "x"}}} {
		status, body := b.post(t, c, path, form)
		require.Equal(t, http.StatusForbidden, status, body)
		require.Contains(t, body, "CSRF")
	}
	// Another session's token does not fit this session.
	status, _ := b.post(t, c, path, url.Values{"csrf": {otherCSRF}})
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, before, b.auditCount(t), "nothing written")
	acct, err := b.svc.AccountShow(context.Background(), b.tenant, b.account)
	require.NoError(t, err)
	require.Equal(t, db.AccountActive, acct.Status)

	status, _ = b.post(t, c, path, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, before+1, b.auditCount(t), "the disable is audited")
}

func TestConsoleRolesRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	viewer, operator, credAdmin := b.client(t), b.client(t), b.client(t)
	_, vCSRF := b.login(t, viewer, b.token(t, db.AdminRoleViewer))
	_, oCSRF := b.login(t, operator, b.token(t, db.AdminRoleOperator))
	_, cCSRF := b.login(t, credAdmin, b.token(t, db.AdminRoleCredentialAdmin))
	before := b.auditCount(t)
	acct := "/accounts/" + b.account.String()
	rotate := url.Values{"webhook_secret": {"whsec_bmV3c2VjcmV0bmV3c2VjcmV0"}, "grace": {"1h"}}

	// Every page renders for a viewer.
	for _, p := range []string{"/", "/accounts", "/consumers", "/messages", "/outbound", "/dead-letters", "/audit", "/tail"} {
		status, body := b.get(t, viewer, p)
		require.Equal(t, http.StatusOK, status, "%s: %s", p, body)
	}
	// A viewer sees but does not act, nor sees the buttons.
	_, page := b.get(t, viewer, "/accounts")
	require.NotContains(t, page, "Disable")
	require.NotContains(t, page, "Rotate secret")
	status, _ := b.post(t, viewer, acct+"/disable", url.Values{"csrf": {vCSRF}})
	require.Equal(t, http.StatusForbidden, status)
	status, _ = b.post(t, viewer, "/dead-letters/bulk", url.Values{"csrf": {vCSRF}, "action": {"requeue"}})
	require.Equal(t, http.StatusForbidden, status)
	status, _ = b.get(t, viewer, "/accounts/new")
	require.Equal(t, http.StatusForbidden, status)
	// An operator acts but does not rotate secrets nor create accounts.
	rotate.Set("csrf", oCSRF)
	status, _ = b.post(t, operator, acct+"/rotate-webhook-secret", rotate)
	require.Equal(t, http.StatusForbidden, status)
	status, _ = b.post(t, operator, "/accounts", url.Values{"csrf": {oCSRF}, "tenant_id": {b.tenant.String()}, "channel_type": {"webhook"}})
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, before, b.auditCount(t), "nothing written")
	// A credential-admin rotates.
	rotate.Set("csrf", cCSRF)
	status, body := b.post(t, credAdmin, acct+"/rotate-webhook-secret", rotate)
	require.Equal(t, http.StatusSeeOther, status, body)
	p, err := b.svc.AuditList(context.Background(), db.AuditListParams{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, "account.rotate_webhook_secret", p.Items[0].Action)
	require.True(t, strings.HasPrefix(p.Items[0].Actor, "admin:"), p.Items[0].Actor)
	// Bad input: a clear 400, nothing written.
	status, body = b.post(t, credAdmin, "/accounts", url.Values{"csrf": {cCSRF}, "tenant_id": {b.tenant.String()},
		"channel_type": {"webhook"}, "settings": {"{not json"}})
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Equal(t, before+1, b.auditCount(t))
}

// TestConsoleMessagesPages: the messages page pages by id, filters by
// conversation, and shows a message's envelope and raw payload.
func TestConsoleMessagesPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	rows := make([]db.InboxRow, 150)
	for i := range rows {
		id := uuid.Must(uuid.NewV7())
		conv := "conv-a"
		if i%3 == 0 {
			conv = "conv-b"
		}
		env, _ := json.Marshal(envelope.Message{ID: id, TenantID: b.tenant, AccountID: b.account, ChannelType: "webhook",
			SourceMessageID: id.String(), Conversation: envelope.Conversation{ID: conv, Type: "dm"}, Text: fmt.Sprintf("text %d", i),
			Attachments: []envelope.Attachment{}})
		rows[i] = db.InboxRow{ID: id, AccountID: b.account, ChannelType: "webhook", SourceMessageID: id.String(),
			ConversationID: conv, State: db.InboxReady, Envelope: env, Raw: []byte(fmt.Sprintf(`{"n":%d}`, i)), ReceivedAt: time.Now()}
	}
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		_, err := db.InboxInsertBatch(ctx, tx, b.tenant, rows)
		return err
	}))
	c := b.client(t)
	b.login(t, c, b.token(t, db.AdminRoleViewer))
	link := regexp.MustCompile(`class="message" href="(/messages/[^"]+)"`)
	next := regexp.MustCompile(`id="next" href="([^"]+)"`)

	status, page := b.get(t, c, "/messages?tenant_id="+b.tenant.String())
	require.Equal(t, http.StatusOK, status)
	require.Len(t, link.FindAllStringSubmatch(page, -1), 100)
	m := next.FindStringSubmatch(page)
	require.NotNil(t, m)
	_, page = b.get(t, c, html.UnescapeString(m[1]))
	require.Len(t, link.FindAllStringSubmatch(page, -1), 50)
	require.NotRegexp(t, next, page)

	_, page = b.get(t, c, "/messages?tenant_id="+b.tenant.String()+"&conversation=conv-b")
	links := link.FindAllStringSubmatch(page, -1)
	require.Len(t, links, 50)
	require.NotContains(t, page, "conv-a")

	_, page = b.get(t, c, links[1][1])
	require.Contains(t, page, "text 3")
	require.Contains(t, page, `&#34;n&#34;: 3`)

	status, _ = b.get(t, c, "/messages?tenant_id="+b.tenant.String()+"&since=yesterday")
	require.Equal(t, http.StatusBadRequest, status)
}

// TestConsoleShowsDisabledReason: the accounts page says why MIO
// disabled an account (its credential grant was refused).
func TestConsoleShowsDisabledReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	acct, err := b.svc.AccountCreate(ctx, admin.AccountCreateParams{TenantID: b.tenant, ChannelType: "zoho_cliq",
		Credentials: json.RawMessage(`{"access_token":"1000.x"}`), WebhookSecret: "cliq"})
	require.NoError(t, err)
	require.NoError(t, db.InTenantTx(ctx, b.env.Pool, b.tenant, func(tx pgx.Tx) error {
		row, err := db.AccountGet(ctx, tx, b.tenant, acct.ID)
		if err != nil {
			return err
		}
		_, err = db.AccountDisableRefused(ctx, tx, b.tenant, acct.ID, row.CredentialsEnc, "zoho refresh token refused: invalid_code")
		return err
	}))
	viewer := b.client(t)
	b.login(t, viewer, b.token(t, db.AdminRoleViewer))
	status, page := b.get(t, viewer, "/accounts?tenant_id="+b.tenant.String())
	require.Equal(t, http.StatusOK, status, page)
	require.Contains(t, page, "zoho refresh token refused: invalid_code")
}

// TestConsoleAccountFormShowsFields: the account form lists the
// channel's settings and credentials keys from the registry.
func TestConsoleAccountFormShowsFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cred := b.client(t)
	b.login(t, cred, b.token(t, db.AdminRoleCredentialAdmin))
	status, page := b.get(t, cred, "/accounts/new?tenant_id="+b.tenant.String()+"&channel=telegram")
	require.Equal(t, http.StatusOK, status, page)
	for _, want := range []string{"<code>mode</code>", "<code>delete_webhook</code>", "<code>bot_token</code>", "required",
		"The bot&#39;s token from @BotFather"} {
		require.Contains(t, page, want)
	}
}
