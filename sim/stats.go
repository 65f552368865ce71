package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Stats is what a fleet has done so far.
type Stats struct {
	Endpoints         int   `json:"endpoints"`
	Active            int64 `json:"active"`
	Enrolled          int64 `json:"enrolled"`
	Resumed           int64 `json:"resumed"`
	InventoriesSent   int64 `json:"inventoriesSent"`
	InventoryBytes    int64 `json:"inventoryBytesGzip"`
	Checkins          int64 `json:"checkins"`
	LongPollWakeups   int64 `json:"longPollWakeups"`
	CommandsReceived  int64 `json:"commandsReceived"`
	CommandsSucceeded int64 `json:"commandsSucceeded"`
	CommandsFailed    int64 `json:"commandsFailed"`
	StatusReports     int64 `json:"statusReports"`
	Uninstalled       int64 `json:"uninstalled"`
	Unauthorized      int64 `json:"unauthorized"`
	// AgentUpdates counts agents that updated themselves to a release,
	// AgentUpdateFailures the releases refused or failed.
	AgentUpdates        int64 `json:"agentUpdates"`
	AgentUpdateFailures int64 `json:"agentUpdateFailures"`
	// Errors counts failed calls by "call: kind" (kind: http_500, timeout, connection…).
	Errors map[string]int64 `json:"errors"`
	// EnrollInventorySeconds is how long Enroll took to enroll every endpoint
	// and have its first inventory accepted (0 until Enroll has finished).
	EnrollInventorySeconds float64 `json:"enrollInventorySeconds"`
	// CheckinLatencyMs covers check-ins without a long poll (wait=0): the
	// first one after enrollment and the one after running commands.
	CheckinLatencyMs   Percentiles `json:"checkinLatencyMs"`
	EnrollLatencyMs    Percentiles `json:"enrollLatencyMs"`
	InventoryLatencyMs Percentiles `json:"inventoryLatencyMs"`
	// CommandPickupMs runs from a command's createdAt to the agent receiving it.
	CommandPickupMs Percentiles `json:"commandPickupMs"`
	ElapsedSeconds  float64     `json:"elapsedSeconds"`
}

// Percentiles summarizes a latency histogram.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// histogram counts durations in buckets growing by 10%, from 10 µs to about
// 15 minutes: lock-free, and percentiles within 10%.
type histogram struct {
	buckets [200]atomic.Int64
	count   atomic.Int64
	maxUS   atomic.Int64
}

const (
	histBase   = 10.0 // µs
	histFactor = 1.1
)

func (h *histogram) observe(d time.Duration) {
	us := d.Microseconds()
	i := 0
	if float64(us) > histBase {
		i = int(math.Ceil(math.Log(float64(us)/histBase) / math.Log(histFactor)))
	}
	i = min(max(i, 0), len(h.buckets)-1)
	h.buckets[i].Add(1)
	h.count.Add(1)
	for {
		m := h.maxUS.Load()
		if us <= m || h.maxUS.CompareAndSwap(m, us) {
			break
		}
	}
}

func (h *histogram) percentiles() Percentiles {
	var counts [len(h.buckets)]int64
	total := int64(0)
	for i := range h.buckets {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	p := Percentiles{Count: total, Max: round2(float64(h.maxUS.Load()) / 1000)}
	if total == 0 {
		return p
	}
	at := func(q float64) float64 {
		rank := int64(math.Ceil(q * float64(total)))
		seen := int64(0)
		for i, c := range counts {
			seen += c
			if seen >= rank {
				return math.Min(round2(histBase*math.Pow(histFactor, float64(i))/1000), p.Max)
			}
		}
		return p.Max
	}
	p.P50, p.P90, p.P99 = at(0.50), at(0.90), at(0.99)
	return p
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// counters is the live, concurrently updated form of Stats.
type counters struct {
	active, enrolled, resumed, inventories, inventoryBytes, checkins, wakeups atomic.Int64
	received, succeeded, failed, statusReports, uninstalled, unauthorized     atomic.Int64
	agentUpdates, agentUpdateFailures                                         atomic.Int64

	checkinLatency, enrollLatency, inventoryLatency, pickup histogram

	mu     sync.Mutex
	errors map[string]int64

	enrollSeconds atomic.Uint64 // float64 bits
	started       time.Time
}

func newCounters() *counters {
	return &counters{errors: map[string]int64{}, started: time.Now()}
}

func (c *counters) fail(call string, err error) {
	key := call + ": " + errorKind(err)
	c.mu.Lock()
	c.errors[key]++
	c.mu.Unlock()
}

func (c *counters) snapshot(endpoints int) Stats {
	s := Stats{
		Endpoints:              endpoints,
		Active:                 c.active.Load(),
		Enrolled:               c.enrolled.Load(),
		Resumed:                c.resumed.Load(),
		InventoriesSent:        c.inventories.Load(),
		InventoryBytes:         c.inventoryBytes.Load(),
		Checkins:               c.checkins.Load(),
		LongPollWakeups:        c.wakeups.Load(),
		CommandsReceived:       c.received.Load(),
		CommandsSucceeded:      c.succeeded.Load(),
		CommandsFailed:         c.failed.Load(),
		StatusReports:          c.statusReports.Load(),
		Uninstalled:            c.uninstalled.Load(),
		Unauthorized:           c.unauthorized.Load(),
		AgentUpdates:           c.agentUpdates.Load(),
		AgentUpdateFailures:    c.agentUpdateFailures.Load(),
		EnrollInventorySeconds: round2(math.Float64frombits(c.enrollSeconds.Load())),
		CheckinLatencyMs:       c.checkinLatency.percentiles(),
		EnrollLatencyMs:        c.enrollLatency.percentiles(),
		InventoryLatencyMs:     c.inventoryLatency.percentiles(),
		CommandPickupMs:        c.pickup.percentiles(),
		ElapsedSeconds:         round2(time.Since(c.started).Seconds()),
		Errors:                 map[string]int64{},
	}
	c.mu.Lock()
	for k, v := range c.errors {
		s.Errors[k] = v
	}
	c.mu.Unlock()
	return s
}

func (s Stats) errorTotal() int64 {
	n := int64(0)
	for _, v := range s.Errors {
		n += v
	}
	return n
}

// topErrors formats the most frequent error kinds for a progress line.
func (s Stats) topErrors(n int) string {
	type kv struct {
		k string
		v int64
	}
	var list []kv
	for k, v := range s.Errors {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v || list[i].v == list[j].v && list[i].k < list[j].k })
	out := ""
	for i, e := range list {
		if i == n {
			break
		}
		out += fmt.Sprintf(" [%s ×%d]", e.k, e.v)
	}
	return out
}

// statusError is an unexpected HTTP answer.
type statusError struct {
	code int
	body string
	// retryAfter is the server's Retry-After (503, 429), 0 when absent.
	retryAfter time.Duration
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

func errorKind(err error) string {
	var se *statusError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("http_%d", se.code)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection_reset"
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "too_many_open_files"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no_free_ports"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.Is(err, errDecode):
		return "bad_response"
	default:
		var oe *net.OpError
		if errors.As(err, &oe) {
			return "network"
		}
		return "other"
	}
}

var errDecode = errors.New("undecodable response")
