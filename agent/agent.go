package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/patchd/patchd/agent/collect"
	"github.com/patchd/patchd/agent/execute"
	"github.com/patchd/patchd/agentproto"
)

// Config tells Run how to work. Zero fields take the defaults of a real
// agent; tests replace the collectors, the executor and the timings.
type Config struct {
	StateDir string
	Logger   *slog.Logger
	HTTP     *http.Client

	// Wait is the long-poll wait of a check-in in seconds (55).
	Wait int
	// MinWait is the shortest wait the agent shortens its long polls to
	// when the network path cuts them (10 s, at most Wait): see pollWait.
	MinWait int
	// InventoryEvery is how often the inventory is collected again to
	// see whether it changed (1 hour).
	InventoryEvery time.Duration
	// FactsEvery is how long check-in facts are reused (5 minutes).
	FactsEvery time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failure (1 s, 5 min).
	MinBackoff, MaxBackoff time.Duration

	Collect  func(ctx context.Context) *agentproto.Inventory
	Facts    func(ctx context.Context) collect.Facts
	Executor interface {
		Execute(context.Context, agentproto.Command) execute.Outcome
	}
	// Uninstall removes the agent when the server removed its endpoint
	// (default: SelfUninstall, which reports to the server).
	Uninstall func(ctx context.Context) error
	// Refresh refreshes the package metadata before a scan's inventory
	// (apt-get update, dnf makecache; nothing on Windows and macOS, whose
	// update searches are online); it answers what ran. Default: the
	// Executor's RefreshPackageLists when it is an *execute.Executor.
	Refresh func(ctx context.Context) (string, error)

	// Executable is this agent's binary, which a self-update replaces
	// (os.Executable by default).
	Executable string
	// Restart starts the agent anew from exe after a self-update or a
	// rollback (default: re-executes exe in this process, on Unix).
	Restart func(exe string) error
	// UpdateGrace is how long a new agent has to check in before the old
	// one is put back (DefaultUpdateGrace).
	UpdateGrace time.Duration
	// ReleaseCheckEvery is how often the agent reads the published
	// release while the server asks for the same agentTarget
	// (DefaultReleaseCheckEvery); a new target is read at once.
	ReleaseCheckEvery time.Duration
	// StartWatchdog starts `old update-watchdog` for this process
	// (default: a detached child process) and answers its pid when this
	// process must wait for it (0 when not).
	StartWatchdog func(old, stateDir string, pid int) (int, error)
	// ServiceRoot is the root under which the agent looks for the service
	// definition patchd-agent install wrote for it, to bring it up to date
	// ("/"; tests give a folder of their own). On Windows the agent's
	// service's recovery is brought up to date instead.
	ServiceRoot string
}

// DefaultRefreshInterval is how often the package metadata is refreshed
// until the server says otherwise (refreshSeconds).
const DefaultRefreshInterval = 4 * time.Hour

// ErrUnauthorized: the server does not know this agent's secret any more.
// The agent stops; enroll again to come back.
var ErrUnauthorized = errors.New("the server refused this agent's secret (401): enroll again")

// ErrUninstalled: the server removed this endpoint and the agent
// uninstalled itself.
var ErrUninstalled = errors.New("the endpoint was removed on the server: the agent uninstalled itself")

func (c *Config) defaults() {
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if c.Wait == 0 {
		c.Wait = 55
	}
	if c.MinWait <= 0 {
		c.MinWait = 10
	}
	c.MinWait = min(c.MinWait, c.Wait)
	if c.InventoryEvery == 0 {
		c.InventoryEvery = time.Hour
	}
	if c.FactsEvery == 0 {
		c.FactsEvery = 5 * time.Minute
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = time.Second
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Minute
	}
	if c.Collect == nil {
		log := c.Logger
		c.Collect = func(ctx context.Context) *agentproto.Inventory {
			return collect.Inventory(ctx, collect.Options{Logger: log})
		}
	}
	if c.Facts == nil {
		c.Facts = func(ctx context.Context) collect.Facts { return collect.CheckinFacts(ctx, collect.Options{}) }
	}
	if c.Executor == nil {
		e := &execute.Executor{Runner: execute.ExecRunner{}, TempDir: filepath.Join(c.StateDir, "tmp"), Log: c.Logger}
		if os.MkdirAll(e.TempDir, 0o700) != nil {
			e.TempDir = ""
		}
		setPlatformTools(e)
		c.Executor = e
	}
	if c.Refresh == nil {
		if e, ok := c.Executor.(*execute.Executor); ok {
			c.Refresh = e.RefreshPackageLists
		} else {
			c.Refresh = func(context.Context) (string, error) { return "", nil }
		}
	}
	if c.Executable == "" {
		if exe, err := os.Executable(); err == nil {
			if resolved, err := filepath.EvalSymlinks(exe); err == nil {
				exe = resolved
			}
			c.Executable = exe
		}
	}
	if c.Restart == nil {
		c.Restart = reexec
	}
	if c.UpdateGrace == 0 {
		c.UpdateGrace = DefaultUpdateGrace
	}
	if c.ReleaseCheckEvery == 0 {
		c.ReleaseCheckEvery = DefaultReleaseCheckEvery
	}
	if c.StartWatchdog == nil {
		c.StartWatchdog = startWatchdog
	}
	if c.ServiceRoot == "" {
		c.ServiceRoot = "/"
	}
}

// runner is one running agent.
type runner struct {
	cfg    Config
	log    *slog.Logger
	state  *State
	client *Client
	out    *outbox

	facts       collect.Facts
	factsAt     time.Time
	collectedAt time.Time
	dirty       bool // a command changed software or updates
	warnedNoKey bool
	// releaseTarget and releaseAt: the agentTarget the release was last
	// read for, and when.
	releaseTarget string
	releaseAt     time.Time
	// serviceRefreshed: the service definition was looked at (once a run).
	serviceRefreshed bool
	// restart: a self-update or rollback asks the service manager to start
	// the agent again (ErrRestart, Windows).
	restart bool
	// poll adapts the long-poll wait to a network path that cuts it.
	poll pollWait
}

// refreshService brings the agent's own service definition up to date,
// once a run, after the first check-in: an agent known to work, and after
// a self-update the new agent once confirmed (a rolled-back update leaves
// the definition as it was).
func (r *runner) refreshService(ctx context.Context) {
	if r.serviceRefreshed || r.state.Update != nil {
		return
	}
	r.serviceRefreshed = true
	if err := refreshServiceDefinition(ctx, r.cfg, r.log); err != nil {
		r.log.Warn("service definition not brought up to date", "err", err)
	}
}

// Run checks in until ctx ends, the server refuses the agent (401:
// ErrUnauthorized) or removes it (ErrUninstalled, after uninstalling).
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	st, err := LoadState(cfg.StateDir)
	if err != nil {
		return err
	}
	ob, err := newOutbox(cfg.StateDir)
	if err != nil {
		return err
	}
	// Every call to the server trusts what enrollment decided (the pinned
	// CA, --ca-file, or the system store), and the state's server address
	// is checked again: a state edited to plain HTTP is refused.
	if _, err := CheckServerURL(st.Server, st.InsecureHTTP); err != nil {
		return fmt.Errorf("state %s: %w; this agent was enrolled without it: enroll again", filepath.Join(cfg.StateDir, StateFileName), err)
	}
	if cfg.HTTP == nil {
		if cfg.HTTP, err = st.HTTPClient(); err != nil {
			return err
		}
	}
	if e, ok := cfg.Executor.(*execute.Executor); ok && e.ServerHTTP == nil {
		e.ServerBase, e.ServerHTTP = st.Server, cfg.HTTP
	}
	r := &runner{cfg: cfg, log: cfg.Logger, state: st, out: ob,
		client: &Client{Base: st.Server, Secret: st.AgentSecret, HTTP: cfg.HTTP}}
	if r.cfg.Uninstall == nil {
		r.cfg.Uninstall = func(ctx context.Context) error { return SelfUninstall(ctx, cfg.StateDir, r.client, cfg.Logger) }
	}
	r.log.Info("patchd-agent running", "server", st.Server, "endpoint", st.EndpointID, "version", Version)
	r.resumeUpdate()
	defer func() {
		if ctx.Err() != nil {
			r.updateStopped()
			r.sayStopping(ctx)
		}
	}()
	backoff := cfg.MinBackoff
	for {
		if ctx.Err() != nil {
			return nil
		}
		if r.updateOverdue() {
			r.rollback()
			if r.restart {
				r.log.Info("the agent ends; the service manager starts it again")
				return ErrRestart
			}
		}
		err := r.cycle(ctx)
		if r.restart {
			r.log.Info("the agent ends; the service manager starts it again")
			return ErrRestart
		}
		switch {
		case errors.Is(err, errPollCut):
			// The server answered the call (the path ended it): not a
			// failure of the server, the next check-in goes now.
		case errors.Is(err, ErrUninstalled):
			return err
		case StatusOf(err) == http.StatusUnauthorized:
			// An endpoint removed while the agent sent something else
			// than a check-in (an inventory, a command's result): the
			// server tells it to uninstall at a check-in, once.
			if r.removed(ctx) {
				return ErrUninstalled
			}
			r.log.Error("stopping", "err", err)
			return ErrUnauthorized
		case err != nil && ctx.Err() == nil:
			wait := jitter(backoff)
			r.log.Warn("server unreachable or refusing; retrying", "err", err, "in", wait.Round(time.Millisecond))
			if !sleep(ctx, wait) {
				return nil
			}
			backoff = min(backoff*2, cfg.MaxBackoff)
		default:
			backoff = cfg.MinBackoff
		}
	}
}

// StoppingTimeout bounds the stopping call: a server that does not answer
// in time keeps the agent's stop waiting no longer (the endpoint then
// shows disconnected after three check-in intervals).
const StoppingTimeout = 3 * time.Second

// ErrServiceStop is the cause of the context the Windows service's Run
// gets when the Service Control Manager stops the service (stop, or
// shutdown).
var ErrServiceStop = errors.New("the service manager stops the service")

// sayStopping tells the server that the agent stops (POST
// /agent/v1/stopping), so that its endpoint shows disconnected at once:
// called when ctx, Run's, ended, which is a signal (SIGTERM or SIGINT:
// systemd, OpenRC, SysV init and launchd stop it so, also when the
// computer shuts down or restarts) or the Windows service's stop. Not when
// the agent ends on its own to be started again (a self-update's re-exec
// or ErrRestart: it checks in again within seconds), nor after a removal
// or a refused secret. Bounded by StoppingTimeout; a failure is only
// logged.
func (r *runner) sayStopping(ctx context.Context) {
	reason := agentproto.StopSignal
	if errors.Is(context.Cause(ctx), ErrServiceStop) {
		reason = agentproto.StopService
	}
	call, cancel := context.WithTimeout(context.WithoutCancel(ctx), StoppingTimeout)
	defer cancel()
	if err := r.client.Stopping(call, agentproto.StoppingReport{Reason: reason}); err != nil {
		r.log.Info("stopping; the server was not told", "err", err)
		return
	}
	r.log.Info("stopping; the server was told", "reason", reason)
}

// jitter spreads retries of a fleet: a uniform wait in [d/2, d).
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(half)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// cycle is one check-in and what follows from it.
func (r *runner) cycle(ctx context.Context) error {
	// Results first: a command whose RUNNING is still queued must not be
	// handed out again as pending.
	if n, err := r.out.flush(ctx, r.client); err != nil {
		return fmt.Errorf("send queued results: %w", err)
	} else if n > 0 {
		r.log.Info("sent queued results", "count", n)
	}
	req := r.checkinRequest(ctx)
	start := time.Now()
	wait := r.poll.wait(r.cfg, start)
	var sent atomic.Bool
	cctx, cancel := context.WithTimeout(ctx, time.Duration(wait+30)*time.Second)
	cctx = httptrace.WithClientTrace(cctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) { sent.Store(i.Err == nil) }})
	resp, err := r.client.Checkin(cctx, req, wait)
	cancel()
	if err != nil {
		if held := time.Since(start); ctx.Err() == nil && sent.Load() && held >= minCut && held < time.Duration(wait)*time.Second && cutByPath(err) {
			if r.poll.cut(r.cfg, held, wait, time.Now()) {
				r.log.Warn("long polls are cut by the network path (a proxy's idle timeout?): they are shortened", "cut after", held.Round(time.Second),
					"wait now", time.Duration(r.poll.seconds)*time.Second, "err", err)
			} else {
				r.log.Info("the long poll was cut by the network path; checking in again", "after", held.Round(time.Second), "err", err)
			}
			return errPollCut
		}
		return fmt.Errorf("check in: %w", err)
	}
	r.poll.answered()
	if req.UpdateFailure != nil && r.state.UpdateFailure == req.UpdateFailure {
		r.state.UpdateFailure = nil // reported: not again
		r.save()
	}
	r.confirmUpdate()
	if resp.Uninstall {
		r.uninstall(ctx)
		return ErrUninstalled
	}
	r.refreshService(ctx)
	if resp.CheckinSeconds > 0 && resp.CheckinSeconds != r.state.CheckinSeconds {
		r.state.CheckinSeconds = resp.CheckinSeconds
		r.save()
	}
	r.setRefreshInterval(resp.RefreshSeconds)
	// A scan (asked now, or due at the refresh interval) refreshes the
	// package metadata, then collects; asked, it sends even an unchanged
	// inventory, so the server sees when it scanned.
	wanted := resp.InventoryWanted
	if resp.ScanNow || r.refreshDue() {
		r.refresh(ctx, resp.ScanNow)
		wanted = wanted || resp.ScanNow
	}
	// Commands run even when the inventory could not be sent: the
	// inventory is retried, the commands would not be handed out again.
	invErr := r.inventory(ctx, wanted)
	for _, cmd := range resp.Commands {
		if ctx.Err() != nil {
			return nil
		}
		r.runCommand(ctx, cmd)
	}
	if invErr != nil {
		return invErr
	}
	if resp.AgentTarget != "" && ctx.Err() == nil {
		r.selfUpdate(ctx, resp.AgentTarget)
		if r.restart {
			return nil // Run ends for the service manager's restart, now
		}
	}
	// A server that answers at once (no long poll) is asked again after
	// checkinSeconds, not in a tight loop. An answer that asked for the
	// inventory came at once by design: the long poll follows right away.
	if len(resp.Commands) == 0 && !resp.InventoryWanted && !resp.ScanNow && time.Since(start) < time.Duration(wait)*time.Second/2 {
		every := time.Duration(max(r.state.CheckinSeconds, 1)) * time.Second
		sleep(ctx, every-time.Since(start))
	}
	return nil
}

// uninstall removes the agent: the server removed its endpoint.
func (r *runner) uninstall(ctx context.Context) {
	r.log.Warn("the server removed this endpoint: uninstalling")
	if err := r.cfg.Uninstall(ctx); err != nil {
		r.log.Error("uninstall failed", "err", err)
	}
}

// removed asks the server, after a 401, whether the endpoint was removed
// (a check-in answered "uninstall": the agent uninstalls itself) or the
// secret is not known (another 401).
func (r *runner) removed(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	resp, err := r.client.Checkin(cctx, r.checkinRequest(ctx), 0)
	cancel()
	if err != nil || !resp.Uninstall {
		return false
	}
	r.uninstall(ctx)
	return true
}

// setRefreshInterval takes the server's refresh interval (0: an older
// server; the current one stays); a shorter one brings the next refresh
// forward.
func (r *runner) setRefreshInterval(seconds int) {
	if seconds <= 0 || seconds == r.state.RefreshSeconds {
		return
	}
	r.state.RefreshSeconds = seconds
	if next := r.state.NextRefreshAt; next != nil {
		if latest := time.Now().Add(spread(r.refreshInterval())); next.After(latest) {
			r.state.NextRefreshAt = &latest
		}
	}
	r.save()
}

func (r *runner) refreshInterval() time.Duration {
	if r.state.RefreshSeconds > 0 {
		return time.Duration(r.state.RefreshSeconds) * time.Second
	}
	return DefaultRefreshInterval
}

// spread is d give or take a quarter, at random: agents enrolled together
// drift apart, and a fleet does not refresh from its mirrors at once.
func spread(d time.Duration) time.Duration {
	q := d / 4
	if q <= 0 {
		return d
	}
	return d - q + rand.N(2*q)
}

func (r *runner) refreshDue() bool {
	next := r.state.NextRefreshAt
	return next == nil || !time.Now().Before(*next)
}

// refresh refreshes the package metadata and has the inventory collected
// again; a failure is logged and the inventory read from the lists at hand.
func (r *runner) refresh(ctx context.Context, asked bool) {
	start := time.Now()
	ran, err := r.cfg.Refresh(ctx)
	if ctx.Err() != nil {
		return
	}
	next := time.Now().Add(spread(r.refreshInterval()))
	r.state.NextRefreshAt = &next
	r.save()
	r.dirty = true
	switch {
	case err != nil:
		r.log.Warn("package lists not refreshed; the inventory uses the lists at hand", "err", err, "asked", asked)
	case ran != "":
		r.log.Info("package lists refreshed", "cmd", ran, "asked", asked, "in", time.Since(start).Round(time.Millisecond), "next", next.Round(time.Second))
	default:
		r.log.Info("scan: the update search of the inventory is online", "asked", asked, "next", next.Round(time.Second))
	}
}

func (r *runner) checkinRequest(ctx context.Context) agentproto.CheckinRequest {
	if r.factsAt.IsZero() || time.Since(r.factsAt) > r.cfg.FactsEvery {
		r.facts = r.cfg.Facts(ctx)
		r.factsAt = time.Now()
	}
	f := r.facts
	pending := f.PendingReboot
	if since := r.state.RebootPendingSince; since != nil {
		if f.LastBootAt != nil && f.LastBootAt.After(since.Add(time.Minute)) {
			r.state.RebootPendingSince = nil // it rebooted since
			r.save()
		} else {
			pending = true
		}
	}
	ips := f.IPAddresses
	if ips == nil {
		ips = []string{}
	}
	return agentproto.CheckinRequest{LastBootAt: f.LastBootAt, PendingReboot: pending, User: f.User,
		IPAddresses: ips, AgentVersion: Version, InventoryHash: r.state.InventoryHash, UpdateFailure: r.state.UpdateFailure}
}

// inventory collects when the server asks, when a command changed the
// computer or when the last collection is old, and sends it when the
// server asked or its hash differs from the one the server has.
func (r *runner) inventory(ctx context.Context, wanted bool) error {
	if !wanted && !r.dirty && !r.collectedAt.IsZero() && time.Since(r.collectedAt) < r.cfg.InventoryEvery {
		return nil
	}
	start := time.Now()
	inv := r.cfg.Collect(ctx)
	r.collectedAt = time.Now()
	r.dirty = false
	hash := collect.Hash(inv)
	if !wanted && hash == r.state.InventoryHash {
		return nil
	}
	ictx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := r.client.PutInventory(ictx, inv, hash); err != nil {
		switch StatusOf(err) {
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			// The server will refuse this document again: say so and
			// try with the next collection rather than at every check-in.
			r.log.Error("the server refused the inventory", "err", err)
			return nil
		case http.StatusUnauthorized:
			return err
		}
		r.collectedAt = time.Time{} // try again at the next check-in
		return fmt.Errorf("send inventory: %w", err)
	}
	r.state.InventoryHash = hash
	r.save()
	r.log.Info("inventory sent", "software", len(inv.Software), "updates", len(inv.Updates), "collected in", time.Since(start).Round(time.Millisecond))
	return nil
}

// runCommand runs one command, reporting RUNNING before and the outcome
// after through the outbox.
func (r *runner) runCommand(ctx context.Context, cmd agentproto.Command) {
	if r.state.done(cmd.ID) {
		r.log.Info("command already ran; not running it again", "command", cmd.ID)
		return
	}
	r.log.Info("running command", "command", cmd.ID, "type", cmd.Type)
	r.report(ctx, cmd.ID, agentproto.CommandStatus{Status: agentproto.StatusRunning, At: time.Now().UTC()})
	r.state.markDone(cmd.ID)
	r.save()

	o := r.cfg.Executor.Execute(ctx, cmd)
	r.log.Info("command finished", "command", cmd.ID, "status", o.Status)
	if o.RebootPending {
		boot := time.Now().UTC()
		if f := r.cfg.Facts(ctx); f.LastBootAt != nil {
			boot = *f.LastBootAt
		}
		r.state.RebootPendingSince = &boot
		r.save()
		r.factsAt = time.Time{}
	}
	final := agentproto.CommandStatus{Status: o.Status, Result: o.Result, ExitCode: o.ExitCode, At: time.Now().UTC()}
	if !o.InventoryChanged {
		r.report(ctx, cmd.ID, final)
		return
	}
	// The software changed: the new inventory goes now, not after the
	// next long poll, and before the final status, so that a run never
	// shows SUCCESS while its updates are still listed as missing. The
	// status is queued on disk first: it survives a failed inventory or
	// a restart, and goes out right after.
	r.dirty = true
	queued := r.queue(cmd.ID, final)
	if err := r.inventory(ctx, false); err != nil {
		r.log.Warn("inventory after the command not sent; retried at the next check-in", "command", cmd.ID, "err", err)
	}
	if queued {
		r.flush(ctx, cmd.ID)
	}
}

// report queues a status and tries to send the queue at once; what
// cannot be sent now goes with the next check-in.
func (r *runner) report(ctx context.Context, id string, st agentproto.CommandStatus) {
	if r.queue(id, st) {
		r.flush(ctx, id)
	}
}

func (r *runner) queue(id string, st agentproto.CommandStatus) bool {
	if err := r.out.add(id, st); err != nil {
		r.log.Error("cannot queue status", "command", id, "err", err)
		return false
	}
	return true
}

func (r *runner) flush(ctx context.Context, id string) {
	if _, err := r.out.flush(ctx, r.client); err != nil {
		r.log.Warn("status queued; the server will get it later", "command", id, "err", err)
	}
}

var saveMu sync.Mutex

func (r *runner) save() {
	saveMu.Lock()
	defer saveMu.Unlock()
	if err := r.state.Save(r.cfg.StateDir); err != nil {
		r.log.Error("cannot save state", "err", err)
	}
}
