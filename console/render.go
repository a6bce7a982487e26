package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/miohq/mio/admin"
	"github.com/miohq/mio/db"
)

// view is what every page template receives.
type view struct {
	Title string
	// Me is the signed-in token; nil on the login page.
	Me *db.AdminToken
	// CSRF goes into every form (field "csrf").
	CSRF string
	// Can is what Me may do: "operator", "credential-admin".
	Can    map[string]bool
	Flash  string
	Error  string
	Tenant string // the selected tenant id
	// Tenants lists the tenants for the tenant picker.
	Tenants []*db.Tenant
	Data    any
}

var funcs = template.FuncMap{
	"time": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return ""
			}
			return v.UTC().Format("2006-01-02 15:04:05Z")
		case *time.Time:
			if v == nil {
				return ""
			}
			return v.UTC().Format("2006-01-02 15:04:05Z")
		}
		return fmt.Sprint(t)
	},
	// pretty indents JSON for a <pre>.
	"pretty": func(b []byte) string {
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") != nil {
			return string(b)
		}
		return out.String()
	},
	"deref": func(v any) any {
		switch p := v.(type) {
		case *int64:
			if p != nil {
				return *p
			}
		case *float64:
			if p != nil {
				return fmt.Sprintf("%.1f", *p)
			}
		case *string:
			if p != nil {
				return *p
			}
		case *int32:
			if p != nil {
				return *p
			}
		}
		return ""
	},
	"list": func(v ...string) []string { return v },
	"secs": func(f float64) string { return (time.Duration(f * float64(time.Second))).Round(time.Second).String() },
}

// render executes page with v, filling what every page shows.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, v view) {
	if p := principalFrom(r.Context()); p != nil {
		v.Me, v.CSRF = p.token, p.csrf
		v.Can = map[string]bool{"operator": p.has(db.AdminRoleOperator), "credential-admin": p.has(db.AdminRoleCredentialAdmin)}
		if v.Tenants == nil && page != "error" {
			v.Tenants, _ = c.admin.TenantList(r.Context())
		}
	}
	if v.Flash == "" {
		v.Flash = r.URL.Query().Get("flash")
	}
	var buf bytes.Buffer
	t := c.pages[page]
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		c.log.Error("console: render", "page", page, "err", err)
		http.Error(w, "console: render "+page+" failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail shows an error page with status.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, status, "error", view{Title: http.StatusText(status), Error: msg})
}

// failErr maps an operation's error as the admin API does: invalid input
// 400, not found 404, conflict 409, anything else 503 (logged).
func (c *Console) failErr(w http.ResponseWriter, r *http.Request, what string, err error) {
	switch {
	case errors.Is(err, admin.ErrInvalid):
		c.fail(w, r, http.StatusBadRequest, what+": "+strings.TrimPrefix(err.Error(), admin.ErrInvalid.Error()+": "))
	case errors.Is(err, db.ErrNotFound):
		c.fail(w, r, http.StatusNotFound, what+": not found")
	case errors.Is(err, db.ErrConflict):
		c.fail(w, r, http.StatusConflict, what+": already exists")
	case c.clientGone(r, what, err):
	default:
		c.log.Error("console: "+what, "err", err)
		c.fail(w, r, http.StatusServiceUnavailable, what+": failed (see the server log)")
	}
}

// clientGone reports whether err is the request's context cancelled: the
// client hung up, which is not a database failure. It logs that at debug;
// there is no one to answer, so nothing is written.
func (c *Console) clientGone(r *http.Request, what string, err error) bool {
	if !errors.Is(err, context.Canceled) || !errors.Is(r.Context().Err(), context.Canceled) {
		return false
	}
	c.log.Debug("console: client disconnected", "method", r.Method, "path", r.URL.Path, "step", what)
	return true
}
