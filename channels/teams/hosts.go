package teams

import (
	"net/url"
	"strings"
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
