package fetch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
)

// refusedNets are the ranges, beyond what netip.Addr's predicates catch,
// that never hold a platform's public file host.
var refusedNets = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT shared address space
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated), ::, ::1
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// Prefixes whose addresses embed an IPv4 address that is what is really
// reached; that IPv4 address is checked instead.
var (
	nat64Net  = netip.MustParsePrefix("64:ff9b::/96") // bytes 12-15
	sixToFour = netip.MustParsePrefix("2002::/16")    // bytes 2-5
)

// refused reports whether a is not a public unicast address.
func refused(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	if !a.IsValid() {
		return true
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64Net.Contains(a):
			return refused(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(a):
			return refused(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, n := range refusedNets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// allowed applies the policy to one address about to be dialed.
func (p Policy) allowed(a netip.Addr) bool {
	if p.AllowPrivate || !refused(a) {
		return true
	}
	a = a.WithZone("").Unmap()
	for _, n := range p.AllowedNets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// control is the net.Dialer.Control hook: it runs once the socket exists
// but before connect(2), for every address tried, so a refused address
// never receives a packet.
func (p Policy) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("%w: network %s", ErrForbiddenAddress, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
	}
	if !p.allowed(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, ap.Addr())
	}
	return nil
}

// dialContext dials through checked (whose Control checks each address),
// or through open for a host named in InternalHosts. With a Resolve hook,
// host names are resolved by the hook and its addresses dialed in turn;
// otherwise the dialer resolves them itself.
func (p Policy) dialContext(checked, open *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := checked
		if slices.Contains(p.InternalHosts, normalizeHost(host)) {
			d = open
		}
		if p.Resolve == nil {
			return d.DialContext(ctx, network, addr)
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, addr)
		}
		addrs, err := p.Resolve(ctx, host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: no addresses", host)
		}
		var firstErr error
		for _, a := range addrs {
			conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return conn, nil
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		return nil, firstErr
	}
}
