package teams

import (
	"context"
	"net/url"
	"strings"
	"sync"

	"github.com/google/uuid"
)

// ServiceHosts are the hosts of Microsoft's Bot Connector service URLs
// (public cloud, GCC, GCC High, DoD): an activity's serviceUrl is trusted
// when its host is one of them ("*." matches any subdomain) or the host
// of the account's api_base_url. MIO sends the bot's token only to
// trusted service URLs.
var ServiceHosts = []string{
	"smba.trafficmanager.net",
	"*.botframework.com",
	"smba.infra.gcc.teams.microsoft.com",
	"smba.infra.gov.teams.microsoft.us",
	"smba.infra.dod.teams.microsoft.us",
}

// trustedHosts is ServiceHosts plus the account's API base: its host,
// and whether that host may be reached over plain http (an http base
// the APIBasePolicy allowed).
type trustedHosts struct {
	baseHost string
	baseHTTP bool
}

func (c *Channel) trustedHosts(cfg Config) trustedHosts {
	u, err := url.Parse(cfg.APIBaseURL)
	if err != nil {
		return trustedHosts{}
	}
	return trustedHosts{baseHost: strings.ToLower(u.Hostname()), baseHTTP: u.Scheme == "http"}
}

// trusts reports whether raw is a service URL MIO may send the bot's
// token to: https (http only to an http api_base_url's host), no user
// info, a trusted host.
func (t trustedHosts) trusts(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.Hostname() == "" {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	switch u.Scheme {
	case "https":
	case "http":
		return t.baseHTTP && host == t.baseHost
	default:
		return false
	}
	if host == t.baseHost {
		return true
	}
	return microsoftHost(host)
}

// microsoftHost matches host against ServiceHosts.
func microsoftHost(host string) bool {
	for _, h := range ServiceHosts {
		if suffix, ok := strings.CutPrefix(h, "*"); ok {
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// maxServiceURLs bounds the conversations serviceURLs remembers; when
// full it starts over (the fallback, api_base_url, reaches every
// conversation).
const maxServiceURLs = 100_000

// ServiceURLStore keeps conversations' service URLs beyond one process,
// so that a reply dispatched by another replica, or after a restart, goes
// to the conversation's service URL (mio serve: mio.teams_service_urls).
// Adapters do not touch the database: the process gives the store.
type ServiceURLStore interface {
	// ServiceURL returns the conversation's stored service URL; "" when
	// none is stored.
	ServiceURL(ctx context.Context, tenantID, accountID uuid.UUID, conversation string) (string, error)
	// PutServiceURL stores the service URL of the conversation's latest
	// activity, best effort: the store reports its own failures (the
	// process goes on with the URL in memory).
	PutServiceURL(ctx context.Context, tenantID, accountID uuid.UUID, conversation, serviceURL string)
}

// serviceURLs remembers, per account and conversation, the trusted
// serviceUrl of the latest activity, so that replies go to the service
// URL Teams named, as Microsoft asks. The process keeps them in memory
// and, given a store, writes each new or changed one there and reads a
// conversation it does not know from it. A reply to a conversation no
// activity named yet (or whose URL could not be read) goes to the
// account's api_base_url, which Microsoft keeps working for every
// conversation (the global https://smba.trafficmanager.net/teams by
// default).
type serviceURLs struct {
	store ServiceURLStore // nil: memory only
	mu    sync.Mutex
	m     map[serviceKey]string
}

type serviceKey struct {
	account      uuid.UUID
	conversation string
}

func newServiceURLs(store ServiceURLStore) *serviceURLs {
	return &serviceURLs{store: store, m: map[serviceKey]string{}}
}

// remember keeps serviceURL as the conversation's, and stores it when it
// is new to this process or changed.
func (s *serviceURLs) remember(ctx context.Context, tenant, account uuid.UUID, conversation, serviceURL string) {
	serviceURL = strings.TrimRight(serviceURL, "/")
	k := serviceKey{account, conversation}
	s.mu.Lock()
	prev, ok := s.m[k]
	if !ok && len(s.m) >= maxServiceURLs {
		clear(s.m)
	}
	s.m[k] = serviceURL
	s.mu.Unlock()
	if s.store != nil && prev != serviceURL {
		s.store.PutServiceURL(ctx, tenant, account, conversation, serviceURL)
	}
}

// lookup returns the conversation's service URL, from memory or the
// store.
func (s *serviceURLs) lookup(ctx context.Context, tenant, account uuid.UUID, conversation string) (string, bool) {
	k := serviceKey{account, conversation}
	s.mu.Lock()
	u, ok := s.m[k]
	s.mu.Unlock()
	if ok || s.store == nil {
		return u, ok
	}
	u, err := s.store.ServiceURL(ctx, tenant, account, conversation)
	if err != nil || u == "" {
		return "", false
	}
	s.mu.Lock()
	if _, known := s.m[k]; !known {
		if len(s.m) >= maxServiceURLs {
			clear(s.m)
		}
		s.m[k] = u
	}
	s.mu.Unlock()
	return u, true
}
