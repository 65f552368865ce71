// Package sim simulates a fleet of patchd agents in one process: N endpoints
// with a believable, deterministic inventory (Generate) that enroll, send
// their inventory and long-poll for commands over the real agent protocol
// (docs/design/agent-protocol.md), run those commands with realistic
// durations and outcomes, and count what happened (Stats). patchd-sim is its
// command line; tests of other packages use it as a ready-made fleet.
package sim

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes a simulated fleet.
type Config struct {
	Server      string // base address, e.g. http://127.0.0.1:8080
	EnrollToken string
	Endpoints   int
	// Checkin is the time between check-ins; 0 follows the server's checkinSeconds.
	Checkin time.Duration
	// Wait is the long-poll wait; negative means min(55s, check-in interval).
	Wait        time.Duration
	FailureRate float64 // chance that a command (or one update of it) fails
	Seed        int64
	Concurrency int // simultaneous enrollments; default 64
	// StatePath, when set, keeps endpoint ids and secrets so a restarted
	// simulator resumes the same fleet.
	StatePath string
	// Speed divides command durations: 1 is real time, 1000 turns the
	// 5-30 s an update takes into 5-30 ms.
	Speed float64
	// FirstIndex offsets the endpoints' indexes, so several simulators can
	// share one seed without sharing computers.
	FirstIndex  int
	InsecureTLS bool
	// HTTPClient replaces the shared client (tests); nil builds one.
	HTTPClient *http.Client
	// Logf receives progress lines; nil is silent.
	Logf func(format string, args ...any)
	// ProgressEvery is the interval of progress lines; default 10s.
	ProgressEvery time.Duration
	// ReleaseKey (base64 of an Ed25519 public key, as the agent is built
	// with) makes the agents follow the check-in's agentTarget: they
	// download the signed release from the server and verify it as the
	// real agent does, then report its version. Without one they stay at
	// AgentVersion, as a real agent without a release key does.
	ReleaseKey string
	// UpdateFailureRate is the share of endpoints whose update to a release
	// fails as a new agent that does not start (reported as the check-in's
	// updateFailure); each endpoint's lot is drawn per release.
	UpdateFailureRate float64
	// ReleaseCheckEvery is how often an agent reads the published release
	// while its target stays the same; default 15 minutes, as the agent.
	ReleaseCheckEvery time.Duration
	// MaxDownloads bounds the fleet's simultaneous agent downloads; default 16.
	MaxDownloads int
}

func (c *Config) validate() error {
	var problems []string
	u, err := url.Parse(c.Server)
	if c.Server == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		problems = append(problems, "server must be an http(s) URL")
	}
	if c.EnrollToken == "" {
		problems = append(problems, "an enrollment token is required")
	}
	if c.Endpoints < 1 {
		problems = append(problems, "endpoints must be at least 1")
	}
	if c.FailureRate < 0 || c.FailureRate > 1 {
		problems = append(problems, "failure rate must be between 0 and 1")
	}
	if c.UpdateFailureRate < 0 || c.UpdateFailureRate > 1 {
		problems = append(problems, "update failure rate must be between 0 and 1")
	}
	if c.ReleaseKey != "" {
		if _, err := parseReleaseKeys(c.ReleaseKey); err != nil {
			problems = append(problems, "release key: "+err.Error())
		}
	}
	if c.Checkin < 0 {
		problems = append(problems, "check-in interval must not be negative")
	}
	if c.Wait > 60*time.Second {
		problems = append(problems, "long-poll wait must be at most 60s")
	}
	if c.Speed < 0 {
		problems = append(problems, "speed must be positive")
	}
	if len(problems) > 0 {
		return fmt.Errorf("sim: %s", strings.Join(problems, "; "))
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.Speed == 0 {
		c.Speed = 1
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 10 * time.Second
	}
	if c.ReleaseCheckEvery <= 0 {
		c.ReleaseCheckEvery = 15 * time.Minute
	}
	if c.MaxDownloads <= 0 {
		c.MaxDownloads = 16
	}
	c.Server = strings.TrimRight(c.Server, "/")
	return nil
}

// Fleet is a running simulation.
type Fleet struct {
	cfg    Config
	client *client
	agents []*agent
	stats  *counters

	// releaseKeys are the release keys the agents trust (Config.ReleaseKey).
	releaseKeys []ed25519.PublicKey
	// downloads holds a slot per agent download in progress.
	downloads chan struct{}

	enrollOnce sync.Once
	enrollErr  error
	saveMu     sync.Mutex
}

// ErrEnrollToken reports that the server refused the enrollment token.
var ErrEnrollToken = errors.New("sim: the server refused the enrollment token")

// New builds the fleet (and reads the state file when one is configured);
// it does not contact the server.
func New(cfg Config) (*Fleet, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	keys, _ := parseReleaseKeys(cfg.ReleaseKey) // checked by validate
	f := &Fleet{cfg: cfg, stats: newCounters(), releaseKeys: keys, downloads: make(chan struct{}, cfg.MaxDownloads)}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: newTransport(cfg.Endpoints+cfg.Concurrency, simTLS(cfg.InsecureTLS, cfg.EnrollToken))}
	}
	f.client = &client{base: cfg.Server, http: hc}
	f.agents = make([]*agent, cfg.Endpoints)
	for i := range f.agents {
		f.agents[i] = newAgent(f, cfg.FirstIndex+i)
	}
	if cfg.StatePath != "" {
		if err := f.loadState(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *Fleet) logf(format string, args ...any) {
	if f.cfg.Logf != nil {
		f.cfg.Logf(format, args...)
	}
}

// Stats returns the counters so far.
func (f *Fleet) Stats() Stats { return f.stats.snapshot(len(f.agents)) }

// EndpointIDs returns the server's id of each enrolled endpoint, by position.
func (f *Fleet) EndpointIDs() []string {
	ids := make([]string, len(f.agents))
	for i, a := range f.agents {
		ids[i], _ = a.credentials()
	}
	return ids
}

// Enroll brings every endpoint on line, at most Concurrency at a time:
// it enrolls those the state file does not know, checks each in once and
// uploads its inventory when the server asks for it. The time it takes is
// Stats().EnrollInventorySeconds. It fails when the server refuses the
// token; other failures are counted and the agents retry in Run.
func (f *Fleet) Enroll(ctx context.Context) error {
	f.enrollOnce.Do(func() { f.enrollErr = f.enroll(ctx) })
	return f.enrollErr
}

// isBusy tells a refusal for now (503, 429) from a failure.
func isBusy(err error) bool {
	var se *statusError
	return errors.As(err, &se) && (se.code == http.StatusServiceUnavailable || se.code == http.StatusTooManyRequests)
}

func (f *Fleet) enroll(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan *agent)
	var wg sync.WaitGroup
	var done, failed atomic.Int64
	for range f.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range work {
				err := a.start(ctx)
				// A server that refuses for now (503, 429) is asked again
				// after its Retry-After, up to a third of it with jitter:
				// enrollment is done when the inventory is stored.
				for wait := time.Second; isBusy(err) && ctx.Err() == nil; wait = min(2*wait, 30*time.Second) {
					d := wait/2 + time.Duration(rand.Int64N(int64(wait)))
					var se *statusError
					if errors.As(err, &se) && se.retryAfter > 0 {
						d = min(d, se.retryAfter)
					}
					if !sleep(ctx, d) {
						break
					}
					err = a.start(ctx)
				}
				done.Add(1)
				if err == nil || errors.Is(err, errStopped) {
					continue
				}
				failed.Add(1)
				var se *statusError
				if errors.As(err, &se) && se.code == http.StatusUnauthorized {
					if _, secret := a.credentials(); secret == "" {
						cancel(fmt.Errorf("%w: %s", ErrEnrollToken, se.body))
					}
				}
			}
		}()
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	go func() {
		defer close(work)
		for _, a := range f.agents {
			if a.isStopped() {
				continue
			}
			select {
			case work <- a:
			case <-ctx.Done():
				return
			}
		}
	}()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-tick.C:
			s := f.Stats()
			f.logf("enroll: %d/%d done, %d enrolled, %d inventories, %d errors%s (%.0fs)",
				done.Load(), len(f.agents), s.Enrolled, s.InventoriesSent, s.errorTotal(), s.topErrors(3), time.Since(start).Seconds())
		}
	}
	elapsed := time.Since(start)
	f.stats.enrollSeconds.Store(math.Float64bits(elapsed.Seconds()))
	if err := f.saveState(); err != nil {
		f.logf("state: %v", err)
	}
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, ErrEnrollToken) {
		return cause
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s := f.Stats()
	f.logf("enroll: finished in %.1fs: %d enrolled, %d resumed, %d inventories, %d failed", elapsed.Seconds(), s.Enrolled, s.Resumed, s.InventoriesSent, failed.Load())
	return nil
}

// Run enrolls the fleet if Enroll has not run yet, then lets every agent
// check in, send inventories and run commands until ctx ends (or
// Config.Duration passes, see cmd/patchd-sim). It saves the state file on
// the way out and returns nil when ctx ended it.
func (f *Fleet) Run(ctx context.Context) error {
	if err := f.Enroll(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	for _, a := range f.agents {
		if a.isStopped() {
			continue
		}
		wg.Add(1)
		f.stats.active.Add(1)
		go func() {
			defer wg.Done()
			defer f.stats.active.Add(-1)
			a.loop(ctx)
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(f.cfg.ProgressEvery)
	defer tick.Stop()
	saveEvery := time.NewTicker(time.Minute)
	defer saveEvery.Stop()
	var last Stats
	lastAt := time.Now()
	for {
		select {
		case <-finished:
			if err := f.saveState(); err != nil {
				f.logf("state: %v", err)
			}
			return nil
		case <-saveEvery.C:
			if err := f.saveState(); err != nil {
				f.logf("state: %v", err)
			}
		case now := <-tick.C:
			s := f.Stats()
			secs := now.Sub(lastAt).Seconds()
			f.logf("run: %d active, %.0f check-ins/s, %d commands (%d ok, %d failed), %d inventories, check-in p50 %.1fms p99 %.1fms, %d errors%s",
				s.Active, float64(s.Checkins-last.Checkins)/secs, s.CommandsReceived, s.CommandsSucceeded, s.CommandsFailed,
				s.InventoriesSent, s.CheckinLatencyMs.P50, s.CheckinLatencyMs.P99, s.errorTotal(), s.topErrors(3))
			last, lastAt = s, now
		}
	}
}

// Run builds a fleet from cfg and runs it until ctx ends.
func Run(ctx context.Context, cfg Config) (Stats, error) {
	f, err := New(cfg)
	if err != nil {
		return Stats{}, err
	}
	err = f.Run(ctx)
	return f.Stats(), err
}
