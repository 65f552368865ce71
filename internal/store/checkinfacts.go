package store

import (
	"slices"
	"sync"
	"time"
)

// checkinFacts remembers, on SQLite, the facts of the last check-in each
// endpoint's row was written with (or found to hold already): its fields
// group rules test and its boot time, as the agent sent them. Applying a
// check-in to a row is idempotent (each fact is set, or left as it is when
// the check-in leaves it out), so a check-in that sends the same facts
// again changes nothing but the last-seen time, and a flush need not read
// the row to find that out. Agents send the same facts check-in after
// check-in; reading their rows was the largest part of a flush.
//
// Only the one process that serves a SQLite database writes it, and what
// else writes these fields, a (re-)enrollment, forgets the endpoint in its
// own transaction. An entry is set just before the flush's commit, under
// the database's write lock (no other write transaction runs then), and
// forgotten when the commit fails: an entry never claims a row the
// database does not hold. Entries last checkinFactsTTL, a safety net as
// the agent API's cache has. PostgreSQL's replicas each write check-ins
// (an agent may move from one to another): there the rows are always read.
type checkinFacts struct {
	mu sync.Mutex
	m  map[string]sentFacts
}

// checkinFactsTTL is how long a remembered check-in is trusted.
const checkinFactsTTL = time.Hour

// sentFacts are the facts of one check-in as it came.
type sentFacts struct {
	reboot           bool
	user             string
	hasUser, hasBoot bool
	boot             int64
	version          string
	ips              []string
	until            time.Time
}

func factsOf(c Checkin) sentFacts {
	f := sentFacts{reboot: c.PendingReboot, version: c.AgentVersion, ips: c.IPAddresses}
	if c.User != nil {
		f.user, f.hasUser = *c.User, true
	}
	if c.LastBootAt != nil {
		f.boot, f.hasBoot = millis(*c.LastBootAt), true
	}
	return f
}

func (f sentFacts) same(g sentFacts) bool {
	return f.reboot == g.reboot && f.user == g.user && f.hasUser == g.hasUser && f.hasBoot == g.hasBoot &&
		f.boot == g.boot && f.version == g.version && slices.Equal(f.ips, g.ips)
}

// toRead answers the check-ins of chunk whose endpoint rows a flush must
// read: those not known to hold what the check-in would write. Without a
// cache (PostgreSQL), all of them.
func (cf *checkinFacts) toRead(chunk []Checkin, now time.Time) []Checkin {
	if cf == nil {
		return chunk
	}
	var out []Checkin
	cf.mu.Lock()
	defer cf.mu.Unlock()
	for i, c := range chunk {
		f, ok := cf.m[c.EndpointID]
		if ok && now.Before(f.until) && f.same(factsOf(c)) {
			if out == nil {
				out = make([]Checkin, i, len(chunk))
				copy(out, chunk[:i])
			}
			continue
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return chunk // nothing known
	}
	return out
}

// remember records the check-ins a transaction about to commit applied.
func (cf *checkinFacts) remember(applied []Checkin, now time.Time) {
	if cf == nil || len(applied) == 0 {
		return
	}
	until := now.Add(checkinFactsTTL)
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if cf.m == nil {
		cf.m = make(map[string]sentFacts, len(applied))
	}
	for _, c := range applied {
		f := factsOf(c)
		f.until = until
		cf.m[c.EndpointID] = f
	}
}

// forget drops what is remembered of the endpoints.
func (cf *checkinFacts) forget(endpointIDs ...string) {
	if cf == nil {
		return
	}
	cf.mu.Lock()
	for _, id := range endpointIDs {
		delete(cf.m, id)
	}
	cf.mu.Unlock()
}
