package teams

import (
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

// serviceURLs remembers, per account and conversation, the trusted
// serviceUrl of the latest activity, so that replies go to the service
// URL Teams named, as Microsoft asks. It lives in the process: a reply
// dispatched by a process that did not receive the conversation's last
// activity goes to the account's api_base_url, which Microsoft keeps
// working for every conversation (the global
// https://smba.trafficmanager.net/teams by default).
type serviceURLs struct {
	mu sync.Mutex
	m  map[serviceKey]string
}

type serviceKey struct {
	account      uuid.UUID
	conversation string
}

func newServiceURLs() *serviceURLs { return &serviceURLs{m: map[serviceKey]string{}} }

func (s *serviceURLs) remember(account uuid.UUID, conversation, serviceURL string) {
	k := serviceKey{account, conversation}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; !ok && len(s.m) >= maxServiceURLs {
		clear(s.m)
	}
	s.m[k] = strings.TrimRight(serviceURL, "/")
}

func (s *serviceURLs) lookup(account uuid.UUID, conversation string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.m[serviceKey{account, conversation}]
	return u, ok
}
