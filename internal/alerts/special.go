package alerts

import (
	"net/netip"
)

// specialRange is one row of an IANA special-purpose address registry: a
// prefix and whether its addresses are globally reachable. The most specific
// row that holds an address decides (192.0.0.9/32 is reachable inside the
// 192.0.0.0/24 that is not).
type specialRange struct {
	prefix netip.Prefix
	name   string
	global bool
}

func special(prefix, name string, global bool) specialRange {
	return specialRange{netip.MustParsePrefix(prefix), name, global}
}

// specialIPv4 is the IANA IPv4 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv4-special-registry/, RFC 6890
// and the RFCs named per row), with its "Globally Reachable" column. Rows
// the registry marks N/A (a deprecated block) count as not reachable.
var specialIPv4 = []specialRange{
	special("0.0.0.0/8", "this network (RFC 791)", false),
	special("0.0.0.0/32", "this host on this network (RFC 1122)", false),
	special("10.0.0.0/8", "private use (RFC 1918)", false),
	special("100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)", false),
	special("127.0.0.0/8", "loopback (RFC 1122)", false),
	special("169.254.0.0/16", "link local (RFC 3927)", false),
	special("172.16.0.0/12", "private use (RFC 1918)", false),
	special("192.0.0.0/24", "IETF protocol assignments (RFC 6890)", false),
	special("192.0.0.0/29", "IPv4 service continuity prefix (RFC 7335)", false),
	special("192.0.0.8/32", "IPv4 dummy address (RFC 7600)", false),
	special("192.0.0.9/32", "Port Control Protocol anycast (RFC 7723)", true),
	special("192.0.0.10/32", "TURN anycast (RFC 8155)", true),
	special("192.0.0.170/32", "NAT64/DNS64 discovery (RFC 8880)", false),
	special("192.0.0.171/32", "NAT64/DNS64 discovery (RFC 8880)", false),
	special("192.0.2.0/24", "documentation, TEST-NET-1 (RFC 5737)", false),
	special("192.31.196.0/24", "AS112-v4 (RFC 7535)", true),
	special("192.52.193.0/24", "AMT (RFC 7450)", true),
	special("192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)", false),
	special("192.168.0.0/16", "private use (RFC 1918)", false),
	special("192.175.48.0/24", "direct delegation AS112 service (RFC 7534)", true),
	special("198.18.0.0/15", "benchmarking (RFC 2544)", false),
	special("198.51.100.0/24", "documentation, TEST-NET-2 (RFC 5737)", false),
	special("203.0.113.0/24", "documentation, TEST-NET-3 (RFC 5737)", false),
	special("240.0.0.0/4", "reserved (RFC 1112)", false),
	special("255.255.255.255/32", "limited broadcast (RFC 919)", false),
}

// specialIPv6 is the IANA IPv6 Special-Purpose Address Registry
// (https://www.iana.org/assignments/iana-ipv6-special-registry/, RFC 6890
// and the RFCs named per row), with its "Globally Reachable" column. The
// rows that embed an IPv4 address (IPv4-mapped, NAT64, 6to4, Teredo) are
// also unwrapped by embeddedIPv4, and their IPv4 address checked; 6to4 and
// Teredo, N/A in the registry, are reachable here when that address is.
var specialIPv6 = []specialRange{
	special("::1/128", "loopback (RFC 4291)", false),
	special("::/128", "unspecified (RFC 4291)", false),
	special("::ffff:0:0/96", "IPv4-mapped (RFC 4291)", false),
	special("64:ff9b::/96", "IPv4-IPv6 translation, NAT64 (RFC 6052)", true),
	special("64:ff9b:1::/48", "local-use IPv4/IPv6 translation (RFC 8215)", false),
	special("100::/64", "discard-only (RFC 6666)", false),
	special("2001::/23", "IETF protocol assignments (RFC 2928)", false),
	special("2001::/32", "Teredo (RFC 4380)", true),
	special("2001:1::1/128", "Port Control Protocol anycast (RFC 7723)", true),
	special("2001:1::2/128", "TURN anycast (RFC 8155)", true),
	special("2001:1::3/128", "DNS-SD service registration protocol anycast (RFC 9665)", true),
	special("2001:2::/48", "benchmarking (RFC 5180)", false),
	special("2001:3::/32", "AMT (RFC 7450)", true),
	special("2001:4:112::/48", "AS112-v6 (RFC 7535)", true),
	special("2001:10::/28", "deprecated ORCHID (RFC 4843)", false),
	special("2001:20::/28", "ORCHIDv2 (RFC 7343)", true),
	special("2001:30::/28", "drone remote ID entity tags (RFC 9374)", true),
	special("2001:db8::/32", "documentation (RFC 3849)", false),
	special("2002::/16", "6to4 (RFC 3056)", true),
	special("2620:4f:8000::/48", "direct delegation AS112 service (RFC 7534)", true),
	special("3fff::/20", "documentation (RFC 9637)", false),
	special("5f00::/16", "segment routing SIDs (RFC 9602)", false),
	special("fc00::/7", "unique local (RFC 4193)", false),
	special("fe80::/10", "link-local unicast (RFC 4291)", false),
}

// globalUnicast6 is the only IPv6 space IANA allocates for global unicast
// (IANA IPv6 Address Space registry); the rest is reserved, deprecated
// (site-local fec0::/10, IPv4-compatible ::/96), local or multicast.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// lookupSpecial answers the most specific row of table holding addr.
func lookupSpecial(table []specialRange, addr netip.Addr) (specialRange, bool) {
	var best specialRange
	found := false
	for _, r := range table {
		if r.prefix.Contains(addr) && (!found || r.prefix.Bits() > best.prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}

var (
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	teredo      = netip.MustParsePrefix("2001::/32")
	compatible4 = netip.MustParsePrefix("::/96")
)

// embeddedIPv4 answers the IPv4 addresses an IPv6 address carries and
// would reach through: IPv4-mapped (::ffff:a.b.c.d), the deprecated
// IPv4-compatible form (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d, RFC 6052),
// 6to4 (2002:aabb:ccdd::/48, RFC 3056) and Teredo (2001:0:server:…:client
// with the client address inverted, RFC 4380: both the server and the
// client).
func embeddedIPv4(a netip.Addr) []netip.Addr {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	last4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	switch {
	case a.Is4In6(), nat64.Contains(a), compatible4.Contains(a):
		return []netip.Addr{last4(12)}
	case sixToFour.Contains(a):
		return []netip.Addr{last4(2)}
	case teredo.Contains(a):
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []netip.Addr{last4(4), client}
	}
	return nil
}

// Refused tells whether a webhook must not connect to addr: an address the
// IANA special-purpose registries do not mark globally reachable, multicast,
// IPv6 outside global unicast space, or an IPv6 address that embeds an IPv4
// address Refused names.
func Refused(addr netip.Addr) bool {
	if !addr.IsValid() {
		return true
	}
	addr = addr.WithZone("") // a zone makes Prefix.Contains false
	for _, v4 := range embeddedIPv4(addr) {
		if Refused(v4) {
			return true
		}
	}
	if addr.Is4In6() {
		return false // the IPv4 address decided
	}
	if addr.IsMulticast() {
		return true
	}
	if addr.Is4() {
		r, ok := lookupSpecial(specialIPv4, addr)
		return ok && !r.global
	}
	if r, ok := lookupSpecial(specialIPv6, addr); ok {
		return !r.global
	}
	return !globalUnicast6.Contains(addr)
}
