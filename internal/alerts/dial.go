package alerts

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrRefusedAddress answers a webhook target on an address that is not
// globally reachable (Refused).
var ErrRefusedAddress = errors.New("webhook target address refused")

// Dialer makes the webhook connections. Unless AllowPrivate is set it
// refuses, in net.Dialer.Control, any address Refused names: the check runs
// on the address being connected to, after DNS resolution, so a name that
// resolves (or re-resolves, DNS rebinding) to an internal address does not
// pass.
type Dialer struct {
	AllowPrivate bool
	Timeout      time.Duration
	// Resolver resolves host names; nil uses the default.
	Resolver *net.Resolver
}

// DialContext connects like net.Dialer.DialContext, with the check.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	nd := &net.Dialer{Timeout: d.Timeout, Resolver: d.Resolver}
	if !d.AllowPrivate {
		nd.Control = control
	}
	return nd.DialContext(ctx, network, address)
}

// control runs for each address the dialer tries, once resolved.
func control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrRefusedAddress, address)
	}
	if Refused(ap.Addr()) {
		return fmt.Errorf("%w: %s is loopback, private, link-local or otherwise internal (start the server with --allow-private-webhooks to allow it)",
			ErrRefusedAddress, ap.Addr())
	}
	return nil
}
