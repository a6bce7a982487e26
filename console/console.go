// Package console is MIO's web console on the admin listener: server-
// rendered pages (html/template, assets embedded, no JavaScript build)
// over the same operations as the /admin/v1 API — package admin for
// everything it mutates, so every change is audited as the signed-in
// admin token, and package db for what it reads.
//
// Signing in posts an admin token; it is kept in an HttpOnly,
// SameSite=Strict cookie (Secure on TLS) and checked against
// mio.admin_tokens on every request, so a revoked or expired token stops
// working at once. Every form carries a CSRF token, the HMAC of the
// session cookie under a per-process key, checked on every POST. Roles
// are the admin API's: a viewer sees, an operator acts, a
// credential-admin creates accounts and rotates secrets.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/channels"
	"github.com/miohq/mio/db"
	"github.com/miohq/mio/install"
	"github.com/miohq/mio/notify"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Cookie names.
const (
	sessionCookie = "mio_console"
	loginCookie   = "mio_console_login"
)

// Deps is what the console needs.
type Deps struct {
	Pool *pgxpool.Pool
	// Admin performs the operations (with its registry and master key, as
	// the admin API's).
	Admin *admin.Service
	// Registry lists the channels the account wizard offers, with their
	// setup text. Required.
	Registry *channels.Registry
	// Hub wakes the live tail; nil: it polls every second.
	Hub *notify.Hub
	// ForgetAccount drops a changed account from the process's account
	// cache; nil: none.
	ForgetAccount func(uuid.UUID)
	// Installs begins one-click installs ("Install with <platform>"); nil:
	// the wizard offers none.
	Installs *install.Service
	// CSRFKey keys the forms' CSRF tokens; empty: 32 random bytes (the
	// forms of one replica then fail on another: use sticky sessions or
	// set a shared key).
	CSRFKey []byte
	Logger  *slog.Logger
}

// Console serves the web console.
type Console struct {
	pool   *pgxpool.Pool
	admin  *admin.Service
	reg    *channels.Registry
	hub    *notify.Hub
	forget func(uuid.UUID)
	inst   *install.Service
	key    []byte
	log    *slog.Logger
	pages  map[string]*template.Template
}

// New returns a Console.
func New(d Deps) (*Console, error) {
	c := &Console{pool: d.Pool, admin: d.Admin, reg: d.Registry, hub: d.Hub, forget: d.ForgetAccount, key: d.CSRFKey, log: d.Logger,
		inst: d.Installs}
	if c.reg == nil {
		return nil, errors.New("console: no channel registry")
	}
	if len(c.key) == 0 {
		c.key = make([]byte, 32)
		if _, err := rand.Read(c.key); err != nil {
			return nil, err
		}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.forget == nil {
		c.forget = func(uuid.UUID) {}
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c.pages = pages
	return c, nil
}

// parsePages parses every page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/_*.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		if n == "templates/layout.html" || strings.HasPrefix(n, "templates/_") {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(assets, n)
		if err != nil {
			return nil, err
		}
		pages[n[len("templates/"):len(n)-len(".html")]] = t
	}
	return pages, nil
}

// Handler is the console's route table, mounted at / on the admin
// listener (the listener's allow-list applies first).
func (c *Console) Handler() http.Handler {
	r := chi.NewRouter()
	static, _ := fs.Sub(assets, "static")
	r.Handle("/static/*", http.StripPrefix("/static/", http.FileServerFS(static)))
	r.Get("/login", c.loginForm)
	r.Post("/login", c.login)
	r.Group(func(r chi.Router) {
		r.Use(c.session, c.csrf)
		viewer, operator, credAdmin := c.need(db.AdminRoleViewer), c.need(db.AdminRoleOperator), c.need(db.AdminRoleCredentialAdmin)
		r.Post("/logout", c.logout)
		r.With(viewer).Get("/", c.overview)
		r.With(viewer).Get("/accounts", c.accountList)
		r.With(credAdmin).Get("/accounts/new", c.accountNew)
		r.With(credAdmin).Post("/accounts", c.accountCreate)
		r.With(credAdmin).Post("/accounts/install", c.accountInstall)
		r.With(credAdmin).Post("/accounts/{account_id}/rotate-webhook-secret", c.accountRotateSecret)
		r.With(operator).Post("/accounts/{account_id}/disable", c.accountStatus(db.AccountDisabled))
		r.With(operator).Post("/accounts/{account_id}/enable", c.accountStatus(db.AccountActive))
		r.With(viewer).Get("/consumers", c.consumerList)
		r.With(viewer).Get("/messages", c.messageList)
		r.With(viewer).Get("/messages/{tenant_id}/{id}", c.messageShow)
		r.With(viewer).Get("/outbound", c.outboundList)
		r.With(viewer).Get("/outbound/{tenant_id}/{id}", c.outboundShow)
		r.With(viewer).Get("/dead-letters", c.deadList)
		r.With(viewer).Get("/dead-letters/{tenant_id}/{id}", c.deadShow)
		r.With(operator).Post("/dead-letters/{tenant_id}/{id}/{action}", c.deadApply)
		r.With(operator).Post("/dead-letters/bulk", c.deadBulk)
		r.With(viewer).Get("/audit", c.auditList)
		r.With(viewer).Get("/tail", c.tailPage)
		r.With(viewer).Get("/tail/stream", c.tailStream)
	})
	return r
}

// principal is the signed-in admin token.
type principal struct {
	token *db.AdminToken
	csrf  string
}

type principalKey struct{}

func principalFrom(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey{}).(*principal)
	return p
}

// has reports whether p holds role, as the admin API decides: every role
// may do what a viewer may; operator and credential-admin are separate.
func (p *principal) has(role db.AdminRole) bool {
	return slices.Contains(p.token.Roles, role) || (role == db.AdminRoleViewer && len(p.token.Roles) > 0)
}

// service is the admin service acting as the signed-in token.
func (c *Console) service(r *http.Request) *admin.Service {
	return c.admin.As("admin:" + principalFrom(r.Context()).token.ID.String())
}

// mac is the CSRF token bound to value.
func (c *Console) mac(value string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(value))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// session authenticates the session cookie's admin token; without a
// valid one a page redirects to the login form and a POST answers 401.
func (c *Console) session(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(sessionCookie)
		var tok *db.AdminToken
		if err == nil {
			tok, err = db.AdminTokenAuthenticate(r.Context(), c.pool, ck.Value, time.Now())
		}
		switch {
		case err == nil:
		case errors.Is(err, http.ErrNoCookie) || errors.Is(err, db.ErrBadToken):
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
			} else {
				c.fail(w, r, http.StatusUnauthorized, "not signed in (or the admin token was revoked)")
			}
			return
		case c.clientGone(r, "authenticate", err):
			return
		default:
			c.fail(w, r, http.StatusServiceUnavailable, "database unavailable")
			c.log.Error("console: authenticate", "err", err)
			return
		}
		p := &principal{token: tok, csrf: c.mac("session:" + ck.Value)}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// csrf refuses a POST whose form lacks the session's CSRF token.
func (c *Console) csrf(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			got := r.PostFormValue("csrf")
			if !hmac.Equal([]byte(got), []byte(principalFrom(r.Context()).csrf)) {
				c.fail(w, r, http.StatusForbidden, "missing or wrong CSRF token: reload the page and try again")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// need refuses a caller without role (403), as the admin API does.
func (c *Console) need(role db.AdminRole) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !principalFrom(r.Context()).has(role) {
				c.fail(w, r, http.StatusForbidden, "your admin token lacks role "+string(role))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	c.renderLogin(w, r, http.StatusOK, "")
}

// renderLogin shows the login form with a fresh login CSRF pair: a random
// cookie and its HMAC in the form (a page of another site cannot read
// either).
func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	v := base64.RawURLEncoding.EncodeToString(nonce)
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: v, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: 3600})
	c.render(w, r, status, "login", view{Title: "Sign in", Error: msg, Data: c.mac("login:" + v)})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(loginCookie)
	if err != nil || !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(c.mac("login:"+ck.Value))) {
		c.renderLogin(w, r, http.StatusForbidden, "the login form expired: try again")
		return
	}
	token := r.PostFormValue("token")
	tok, err := db.AdminTokenAuthenticate(r.Context(), c.pool, token, time.Now())
	if errors.Is(err, db.ErrBadToken) || (err == nil && len(tok.Roles) == 0) {
		c.renderLogin(w, r, http.StatusUnauthorized, "invalid, expired or revoked admin token")
		return
	}
	if err == nil {
		err = db.AdminTokenTouch(r.Context(), c.pool, tok.ID)
	}
	if err != nil {
		if c.clientGone(r, "login", err) {
			return
		}
		c.log.Error("console: login", "err", err)
		c.renderLogin(w, r, http.StatusServiceUnavailable, "database unavailable")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: "/", MaxAge: -1})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
