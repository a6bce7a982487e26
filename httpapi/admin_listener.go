package httpapi

import (
	"net"
	"net/http"
	"net/netip"
)

// adminAllowed answers 403 to clients outside the admin listener's
// allowed networks (MIO_ADMIN_ALLOW_CIDRS), before anything else: the
// metrics, the admin API and pprof alike. The client is the TCP peer;
// X-Forwarded-For is not trusted.
func (s *Server) adminAllowed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.adminClientAllowed(r.RemoteAddr) {
			writeError(w, http.StatusForbidden, "forbidden", "client address not allowed on the admin listener (MIO_ADMIN_ALLOW_CIDRS)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) adminClientAllowed(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range s.adminAllow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
