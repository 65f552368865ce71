package httpx

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP is the address of the caller of r: the peer's address, or, when
// the peer is one of the trusted proxies, the rightmost address of
// X-Forwarded-For that is not itself a trusted proxy. The REST API and the
// console both key their failed-attempt limits on it.
func ClientIP(r *http.Request, trustedProxies []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(trustedProxies) == 0 && !strings.Contains(host, ":") {
		// An IPv4 peer and no proxy to look behind: the address as it
		// came (parsing and printing it again would give the same text).
		return host
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if !trusted(peer, trustedProxies) {
		return peer.Unmap().String()
	}
	// Walk X-Forwarded-For from the right, skipping trusted proxies.
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		addr, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if !trusted(addr, trustedProxies) {
			return addr.Unmap().String()
		}
	}
	return peer.Unmap().String()
}

func trusted(addr netip.Addr, nets []netip.Prefix) bool {
	addr = addr.Unmap()
	for _, n := range nets {
		if n.Contains(addr) {
			return true
		}
	}
	return false
}
