package agent

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// errPollCut: a long poll was ended by the network path between the agent
// and the server (a proxy's or a firewall's idle timeout), not refused by
// the server. It is not a failure: the agent checks in again at once.
var errPollCut = errors.New("the long poll was cut by the network path")

// minCut is the least time a long poll must have been held for its end to
// count as a cut: a connection refused or reset at once is a failure.
const minCut = time.Second

// forgetCutAfter is how long a shortened wait lasts after the last cut:
// then the full wait is tried again (a proxy may have been changed).
const forgetCutAfter = time.Hour

// cutByPath tells whether err, which ended a long poll whose request was
// sent, is the path's doing: the connection ended without an answer
// (closed, reset, a tunnel torn down), or a proxy answered 502 or 504 (a
// gateway timeout) with no error of patchd's. patchd's own errors, the
// agent's own deadline and a connection never made are failures.
func cutByPath(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Code == "" && (he.Status == http.StatusBadGateway || he.Status == http.StatusGatewayTimeout)
	}
	return true
}

// pollWait adapts the long-poll wait to the path. A long poll cut after
// about the same time twice in a row (a proxy that ends idle connections
// after N seconds cuts every one at N, give or take its timer's second)
// sets the wait to two thirds of that, at least Config.MinWait; a single cut (a server restarting, a
// connection lost once) changes nothing. An answered check-in clears the
// count; an hour after the last cut the full wait is tried again.
type pollWait struct {
	seconds int           // the shortened wait; 0 for Config.Wait
	lastCut time.Duration // the previous cut not followed by an answer
	cutAt   time.Time     // when the wait was last shortened
}

// wait answers the wait of the next long poll.
func (p *pollWait) wait(cfg Config, now time.Time) int {
	if p.seconds > 0 && now.Sub(p.cutAt) > forgetCutAfter {
		p.seconds = 0
	}
	if p.seconds > 0 {
		return p.seconds
	}
	return cfg.Wait
}

// cut notes a long poll of wait seconds cut after held; it answers whether
// the wait was shortened.
func (p *pollWait) cut(cfg Config, held time.Duration, wait int, now time.Time) bool {
	if held < minCut || held >= time.Duration(wait)*time.Second {
		p.lastCut = 0
		return false
	}
	prev := p.lastCut
	p.lastCut = held
	if prev == 0 || max(held-prev, prev-held) > max(2*time.Second, prev/4) {
		return false
	}
	p.lastCut = 0
	p.seconds = max(cfg.MinWait, int((held*2/3)/time.Second))
	if p.seconds >= wait {
		p.seconds = 0
		return false
	}
	p.cutAt = now
	return true
}

// answered notes a check-in the server answered.
func (p *pollWait) answered() { p.lastCut = 0 }
