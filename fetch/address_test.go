package fetch

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true},
		{"127.255.0.9", true},
		{"10.0.0.1", true},
		{"172.16.5.4", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"169.254.0.1", true},
		{"100.64.0.1", true}, // CGNAT
		{"100.127.255.254", true},
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"224.0.0.1", true},
		{"239.1.2.3", true},
		{"255.255.255.255", true},
		{"192.0.0.8", true},
		{"198.18.0.1", true},
		{"::", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"::10.0.0.1", true}, // IPv4-compatible
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"fec0::1", true},
		{"ff02::1", true},
		{"64:ff9b::a00:1", true},     // NAT64 of 10.0.0.1
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 of 169.254.169.254
		{"2002:a00:1::1", true},      // 6to4 of 10.0.0.1
		{"2001:db8::1", true},        // documentation
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"100.63.255.255", false}, // just below CGNAT
		{"100.128.0.0", false},    // just above CGNAT
		{"172.32.0.1", false},     // just above 172.16/12
		{"::ffff:8.8.8.8", false},
		{"2a00:1450:4001:80e::200e", false},
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", false},  // 6to4 of 8.8.8.8
	} {
		require.Equal(t, tc.refused, refused(netip.MustParseAddr(tc.addr)), tc.addr)
	}
	require.True(t, refused(netip.Addr{}), "invalid address")
}

func TestPolicyAllowed(t *testing.T) {
	t.Parallel()
	loop := netip.MustParseAddr("127.0.0.1")
	meta := netip.MustParseAddr("169.254.169.254")
	require.False(t, Policy{}.allowed(loop))
	require.True(t, Policy{AllowPrivate: true}.allowed(meta))
	p := Policy{AllowedNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	require.True(t, p.allowed(loop))
	require.True(t, p.allowed(netip.MustParseAddr("::ffff:127.0.0.2")))
	require.False(t, p.allowed(meta))
}

func TestControl(t *testing.T) {
	t.Parallel()
	p := Policy{}
	require.NoError(t, p.control("tcp4", "8.8.8.8:443", nil))
	require.NoError(t, p.control("tcp6", "[2a00:1450:4001:80e::200e]:443", nil))
	for _, tc := range [][2]string{
		{"tcp4", "10.0.0.1:443"},
		{"tcp4", "169.254.169.254:80"},
		{"tcp6", "[::1]:443"},
		{"tcp6", "[fe80::1%eth0]:443"},
		{"tcp4", "not-an-address:443"},
		{"udp4", "8.8.8.8:53"},
	} {
		require.ErrorIs(t, p.control(tc[0], tc[1], nil), ErrForbiddenAddress, tc[1])
	}
}
