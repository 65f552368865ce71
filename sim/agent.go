package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// agent is one simulated endpoint. Its loop runs in one goroutine that
// sleeps on timers and blocks in long polls; it never spins.
type agent struct {
	f     *Fleet
	index int
	prof  *profile
	rng   *rand.Rand // used only by the goroutine that drives the agent

	mu            sync.Mutex
	endpointID    string
	secret        string
	invHash       string
	invDirty      bool
	ch            changes
	lastBoot      time.Time
	pendingReboot bool
	stopped       bool
	checkinSecs   int
	pending       []agentproto.Command
	outbox        []statusReport
	// Self-update (selfupdate.go): the version it runs, the target whose
	// release it read last and when, the releases (SHA-256) it refused, and
	// the failure to report with the next check-in.
	version       string
	releaseTarget string
	releaseAt     time.Time
	refused       []string
	// downgrades are releases refused under "latest" for not being newer.
	downgrades    []string
	updateFailure *agentproto.UpdateFailure
}

type statusReport struct {
	commandID string
	body      agentproto.CommandStatus
}

// errStopped ends an agent's work: it was uninstalled or lost its secret.
var errStopped = errors.New("agent stopped")

func newAgent(f *Fleet, index int) *agent {
	p := newProfile(f.cfg.Seed, index)
	return &agent{
		f: f, index: index, prof: p,
		rng:           newRand(f.cfg.Seed, index, "agent"),
		lastBoot:      time.Now().Add(-p.bootAgo).UTC().Truncate(time.Second),
		pendingReboot: p.rebootDue,
		version:       AgentVersion,
	}
}

func (a *agent) isStopped() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopped
}

func (a *agent) credentials() (id, secret string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.endpointID, a.secret
}

func (a *agent) stop(unauthorized bool) {
	a.mu.Lock()
	was := a.stopped
	a.stopped = true
	a.mu.Unlock()
	if was {
		return
	}
	if unauthorized {
		a.f.stats.unauthorized.Add(1)
	} else {
		a.f.stats.uninstalled.Add(1)
	}
}

// authed calls the server with the agent's secret; a 401 stops the agent.
func (a *agent) authed(ctx context.Context, call, method, path string, body []byte, gz bool, out any, headers ...string) error {
	_, secret := a.credentials()
	err := a.f.client.call(ctx, method, path, secret, body, gz, out, headers...)
	if err != nil {
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusUnauthorized {
			a.stop(true)
			a.f.stats.fail(call, err)
			return errStopped
		}
		if ctx.Err() == nil {
			a.f.stats.fail(call, err)
		}
	}
	return err
}

// enroll enrolls the agent with what it reports of the computer in inv.
func (a *agent) enroll(ctx context.Context, inv *agentproto.Inventory) error {
	p := a.prof
	req := agentproto.EnrollRequest{
		EnrollToken: a.f.cfg.EnrollToken, MachineUID: p.machineUID, Hostname: p.hostname,
		Platform: p.platform, OS: p.osName, OSVersion: *inv.System.OSVersion, Arch: p.arch(),
		AgentVersion: a.agentVersion(),
	}
	var resp agentproto.EnrollResponse
	start := time.Now()
	if err := a.f.client.callJSON(ctx, http.MethodPost, agentproto.PathEnroll, "", req, &resp); err != nil {
		if ctx.Err() == nil {
			a.f.stats.fail("enroll", err)
		}
		return err
	}
	a.f.stats.enrollLatency.observe(time.Since(start))
	if resp.EndpointID == "" || resp.AgentSecret == "" {
		err := fmt.Errorf("%w: enroll answer lacks endpointId or agentSecret", errDecode)
		a.f.stats.fail("enroll", err)
		return err
	}
	a.mu.Lock()
	a.endpointID, a.secret, a.checkinSecs = resp.EndpointID, resp.AgentSecret, resp.CheckinSeconds
	a.invHash = ""
	a.mu.Unlock()
	a.f.stats.enrolled.Add(1)
	return nil
}

// interval is the time between check-ins.
func (a *agent) interval() time.Duration {
	if a.f.cfg.Checkin > 0 {
		return a.f.cfg.Checkin
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.checkinSecs > 0 {
		return time.Duration(a.checkinSecs) * time.Second
	}
	return 60 * time.Second
}

// longPollWait is how long a check-in may be held by the server.
func (a *agent) longPollWait() int {
	if a.f.cfg.Wait >= 0 {
		return min(int(a.f.cfg.Wait/time.Second), agentproto.MaxWaitSeconds)
	}
	return min(55, int(a.interval()/time.Second))
}

func (a *agent) checkin(ctx context.Context, wait int) (agentproto.CheckinResponse, error) {
	p := a.prof
	a.mu.Lock()
	boot := a.lastBoot
	req := agentproto.CheckinRequest{
		LastBootAt: &boot, PendingReboot: a.pendingReboot, IPAddresses: []string{p.ip},
		AgentVersion: a.version, InventoryHash: a.invHash, UpdateFailure: a.updateFailure,
	}
	a.mu.Unlock()
	if p.hasUser {
		req.User = ptr(p.loginName())
	}
	body, _ := json.Marshal(req)
	var resp agentproto.CheckinResponse
	cctx, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Second+30*time.Second)
	defer cancel()
	start := time.Now()
	err := a.authed(cctx, "checkin", http.MethodPost, fmt.Sprintf("%s?wait=%d", agentproto.PathCheckin, wait), body, false, &resp)
	if err != nil {
		return resp, err
	}
	took := time.Since(start)
	a.f.stats.checkins.Add(1)
	if wait == 0 {
		a.f.stats.checkinLatency.observe(took)
	} else if len(resp.Commands) > 0 && took < time.Duration(wait)*time.Second {
		a.f.stats.wakeups.Add(1)
	}
	now := time.Now()
	for _, c := range resp.Commands {
		a.f.stats.received.Add(1)
		if !c.CreatedAt.IsZero() && now.After(c.CreatedAt) {
			a.f.stats.pickup.observe(now.Sub(c.CreatedAt))
		}
	}
	a.mu.Lock()
	if a.updateFailure == req.UpdateFailure {
		a.updateFailure = nil // answered: the server has it
	}
	if resp.CheckinSeconds > 0 {
		a.checkinSecs = resp.CheckinSeconds
	}
	if resp.InventoryWanted {
		a.invDirty = true
	}
	a.pending = appendNew(a.pending, resp.Commands)
	a.mu.Unlock()
	if resp.Uninstall {
		a.stop(false)
		return resp, errStopped
	}
	return resp, nil
}

// appendNew queues commands not already queued (a command stays PENDING on
// the server until the agent reports RUNNING, so a check-in may repeat it).
func appendNew(queue, cmds []agentproto.Command) []agentproto.Command {
	for _, c := range cmds {
		dup := false
		for _, q := range queue {
			if q.ID == c.ID {
				dup = true
				break
			}
		}
		if !dup {
			queue = append(queue, c)
		}
	}
	return queue
}

// inventoryNow generates the endpoint's current inventory.
func (a *agent) inventoryNow() agentproto.Inventory {
	a.mu.Lock()
	ch := a.ch
	ch.Installed = make(map[string]string, len(a.ch.Installed))
	for k, v := range a.ch.Installed {
		ch.Installed[k] = v
	}
	a.mu.Unlock()
	return generate(a.prof, &ch)
}

// sendInventory uploads the inventory collected now, or collected when it
// is not nil.
func (a *agent) sendInventory(ctx context.Context, collected *agentproto.Inventory) error {
	var inv agentproto.Inventory
	if collected != nil {
		inv = *collected
	} else {
		inv = a.inventoryNow()
	}
	// Like patchd-agent, hash the document with collectedAt zeroed, so an
	// unchanged computer hashes alike on every collection; then stamp the
	// real time into the body (collectedAt is its first field).
	inv.CollectedAt = time.Time{}
	body, err := json.Marshal(inv)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	now, _ := json.Marshal(time.Now().UTC().Truncate(time.Second))
	body = bytes.Replace(body, []byte(`{"collectedAt":"0001-01-01T00:00:00Z"`), append([]byte(`{"collectedAt":`), now...), 1)
	gz := gzipBytes(body)
	hash := hex.EncodeToString(sum[:])
	start := time.Now()
	if err := a.authed(ctx, "inventory", http.MethodPut, agentproto.PathInventory, gz, true, nil, agentproto.HeaderInventoryHash, hash); err != nil {
		return err
	}
	a.f.stats.inventoryLatency.observe(time.Since(start))
	a.f.stats.inventories.Add(1)
	a.f.stats.inventoryBytes.Add(int64(len(gz)))
	a.mu.Lock()
	a.invHash = hash
	a.invDirty = false
	a.mu.Unlock()
	return nil
}

// settle sends what the agent owes the server: queued statuses and a wanted
// or changed inventory (collected, when not nil, is the computer's as it is).
func (a *agent) settle(ctx context.Context, collected *agentproto.Inventory) error {
	if err := a.flushOutbox(ctx); err != nil {
		return err
	}
	a.mu.Lock()
	dirty := a.invDirty
	a.mu.Unlock()
	if dirty {
		return a.sendInventory(ctx, collected)
	}
	return nil
}

// start brings a fresh or resumed agent on line: enroll when it has no
// secret, check in once without waiting, and send the inventory if wanted.
// A fresh agent's enrollment reports the OS version of the inventory it
// collects, and that inventory is the one it sends: nothing changes the
// computer in between (commands the first check-in brings run after
// start), and generating it twice made it most of what the load generator
// spent on an enrolling endpoint.
func (a *agent) start(ctx context.Context) error {
	var collected *agentproto.Inventory
	if _, secret := a.credentials(); secret == "" {
		inv := a.inventoryNow()
		if err := a.enroll(ctx, &inv); err != nil {
			return err
		}
		collected = &inv
	}
	if _, err := a.checkin(ctx, 0); err != nil {
		return err
	}
	return a.settle(ctx, collected)
}

// loop is the agent's life after Enroll: long-poll check-ins spread over the
// interval, commands one at a time, back-off with jitter on failures.
func (a *agent) loop(ctx context.Context) {
	backoff := time.Second
	fail := func() bool {
		d := backoff/2 + time.Duration(a.rng.Int64N(int64(backoff)))
		backoff = min(backoff*2, 2*time.Minute)
		return sleep(ctx, d)
	}
	// first poll somewhere in the first interval, so the fleet does not poll in step
	if !sleep(ctx, time.Duration(a.rng.Int64N(int64(a.interval())))) {
		return
	}
	for !a.isStopped() && ctx.Err() == nil {
		if _, secret := a.credentials(); secret == "" {
			if err := a.start(ctx); err != nil {
				if errors.Is(err, errStopped) || isFatalEnroll(err) {
					return
				}
				if !fail() {
					return
				}
			}
			continue
		}
		if err := a.settle(ctx, nil); err != nil {
			if errors.Is(err, errStopped) || !fail() {
				return
			}
			continue
		}
		began := time.Now()
		resp, err := a.checkin(ctx, a.longPollWait())
		if err != nil {
			if errors.Is(err, errStopped) || !fail() {
				return
			}
			continue
		}
		backoff = time.Second
		if a.selfUpdate(ctx, resp.AgentTarget) {
			// the new agent checks in at once, as the restarted real one does
			if _, err := a.checkin(ctx, 0); errors.Is(err, errStopped) {
				return
			}
		}
		if a.runPending(ctx) {
			// report the new state at once and pick up what was queued meanwhile
			if err := a.settle(ctx, nil); err == nil {
				if _, err := a.checkin(ctx, 0); errors.Is(err, errStopped) {
					return
				}
			}
			continue
		}
		// an inventory the server just asked for goes now, not after the sleep
		if err := a.settle(ctx, nil); errors.Is(err, errStopped) {
			return
		}
		// A long poll held to its end is followed by the next at once, as
		// patchd-agent does; an answer that came at once waits the interval.
		if wait := a.longPollWait(); wait > 0 && len(resp.Commands) == 0 && time.Since(began) >= time.Duration(wait)*time.Second/2 {
			continue
		}
		iv := a.interval()
		next := began.Add(iv + time.Duration(a.rng.Int64N(int64(iv)/5+1)) - iv/10)
		if !sleep(ctx, time.Until(next)) {
			return
		}
	}
}

func isFatalEnroll(err error) bool {
	var se *statusError
	return errors.As(err, &se) && (se.code == http.StatusUnauthorized || se.code == http.StatusBadRequest)
}

// sleep waits d or until ctx ends; it reports whether ctx is still alive.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// runPending executes queued commands one at a time; it reports whether it ran any.
func (a *agent) runPending(ctx context.Context) bool {
	ran := false
	for ctx.Err() == nil && !a.isStopped() {
		a.mu.Lock()
		if len(a.pending) == 0 {
			a.mu.Unlock()
			return ran
		}
		cmd := a.pending[0]
		a.pending = a.pending[1:]
		a.mu.Unlock()
		a.execute(ctx, cmd)
		ran = true
	}
	return ran
}

// report sends a status now, or queues it behind earlier unsent ones.
func (a *agent) report(ctx context.Context, id, status, result string, exitCode *int) {
	a.mu.Lock()
	a.outbox = append(a.outbox, statusReport{commandID: id, body: agentproto.CommandStatus{
		Status: status, Result: result, ExitCode: exitCode, At: time.Now().UTC(),
	}})
	a.mu.Unlock()
	a.flushOutbox(ctx)
}

// flushOutbox sends queued statuses in order and stops at the first that
// cannot be delivered; a 409 or 404 answer is final and drops the status.
func (a *agent) flushOutbox(ctx context.Context) error {
	for {
		a.mu.Lock()
		if len(a.outbox) == 0 {
			a.mu.Unlock()
			return nil
		}
		r := a.outbox[0]
		a.mu.Unlock()
		body, _ := json.Marshal(r.body)
		err := a.authed(ctx, "status", http.MethodPost, fmt.Sprintf(agentproto.PathCommandStatus, r.commandID), body, false, nil)
		var se *statusError
		if err != nil && !(errors.As(err, &se) && (se.code == http.StatusConflict || se.code == http.StatusNotFound)) {
			return err
		}
		if err == nil {
			a.f.stats.statusReports.Add(1)
		}
		a.mu.Lock()
		a.outbox = a.outbox[1:]
		a.mu.Unlock()
	}
}

// pause is a command's working time, shortened by the fleet's speed factor.
func (a *agent) pause(ctx context.Context, lo, hi time.Duration) bool {
	d := lo + time.Duration(a.rng.Int64N(int64(hi-lo)+1))
	return sleep(ctx, time.Duration(float64(d)/a.f.cfg.Speed))
}

func (a *agent) fails() bool { return a.rng.Float64() < a.f.cfg.FailureRate }

// execute runs one command and reports RUNNING, then SUCCESS or FAILED.
func (a *agent) execute(ctx context.Context, cmd agentproto.Command) {
	if cmd.NotAfter != nil && time.Now().After(*cmd.NotAfter) {
		a.report(ctx, cmd.ID, agentproto.StatusFailed, fmt.Sprintf("Not started: the maintenance window ended at %s.\n", cmd.NotAfter.UTC().Format(time.RFC3339)), nil)
		a.f.stats.failed.Add(1)
		return
	}
	a.report(ctx, cmd.ID, agentproto.StatusRunning, fmt.Sprintf("[%s] %s started on %s\n", stamp(), cmd.Type, a.prof.hostname), nil)
	var out outcome
	switch cmd.Type {
	case agentproto.TypeRunScript:
		out = a.runScript(ctx, cmd)
	case agentproto.TypeDeployUpdates:
		out = a.deployUpdates(ctx, cmd)
	case agentproto.TypeReboot:
		out = a.reboot(ctx, cmd)
	case agentproto.TypeDeploySoftware:
		out = a.deploySoftware(ctx, cmd)
	case agentproto.TypeUninstallSoftware:
		out = a.uninstallSoftware(ctx, cmd)
	default:
		out = outcome{log: fmt.Sprintf("Unsupported command type %q.\n", cmd.Type), exit: 1}
	}
	if ctx.Err() != nil {
		return // the simulator is stopping; the command stays RUNNING, as with a killed agent
	}
	status := agentproto.StatusSuccess
	if out.exit != 0 {
		status = agentproto.StatusFailed
		a.f.stats.failed.Add(1)
	} else {
		a.f.stats.succeeded.Add(1)
	}
	a.report(ctx, cmd.ID, status, out.log, &out.exit)
}

type outcome struct {
	log  string
	exit int
}

func stamp() string { return time.Now().UTC().Format("2006-01-02 15:04:05") }

var echoLine = regexp.MustCompile(`^\s*(?:echo|Write-Output|Write-Host|print|puts)\s*\(?\s*(?:"([^"]*)"|'([^']*)'|([^;|>]+?))\s*\)?\s*;?\s*$`)

// scriptOutput is what the script would print: the text of its echo /
// Write-Output / print lines with the usual variables filled in, or a
// status summary when it prints nothing recognizable.
func (a *agent) scriptOutput(script string, params map[string]string) string {
	p := a.prof
	repl := strings.NewReplacer("$env:COMPUTERNAME", p.hostname, "%COMPUTERNAME%", p.hostname, "$(hostname)", p.hostname,
		"$HOSTNAME", p.hostname, "${HOSTNAME}", p.hostname, "$env:USERNAME", "SYSTEM", "$(whoami)", "root", "$USER", "root")
	var b strings.Builder
	for _, line := range strings.Split(script, "\n") {
		m := echoLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		text := m[1] + m[2] + m[3]
		for k, v := range params {
			text = strings.ReplaceAll(text, "{{"+k+"}}", v)
			text = strings.ReplaceAll(text, "$"+k, v)
		}
		b.WriteString(repl.Replace(text))
		b.WriteByte('\n')
	}
	if b.Len() > 0 {
		return b.String()
	}
	inv := a.inventoryNow()
	free := ""
	for _, d := range inv.Disks {
		free += fmt.Sprintf("  %-4s %7.1f GB free of %7.1f GB\n", d.Drive, *d.FreeGB, *d.SizeGB)
	}
	a.mu.Lock()
	up := time.Since(a.lastBoot).Truncate(time.Minute)
	a.mu.Unlock()
	return fmt.Sprintf("Host:    %s\nOS:      %s %s (%s)\nUptime:  %s\nDisks:\n%sDone.\n",
		p.hostname, *inv.System.OS, *inv.System.OSVersion, *inv.System.OSBuild, up, free)
}

func (a *agent) runScript(ctx context.Context, cmd agentproto.Command) outcome {
	var pl agentproto.RunScriptPayload
	if err := json.Unmarshal(cmd.Payload, &pl); err != nil {
		return outcome{log: fmt.Sprintf("Invalid RUN_SCRIPT payload: %v\n", err), exit: 2}
	}
	if !a.pause(ctx, time.Second, 5*time.Second) {
		return outcome{}
	}
	out := a.scriptOutput(pl.Script, pl.Parameters)
	if a.fails() {
		code := 1
		msg := "/tmp/patchd-run-" + cmd.ID + ".sh: line 4: /opt/app/bin/healthcheck: No such file or directory"
		switch pl.Language {
		case "powershell":
			msg = "Get-Item : Cannot find path 'C:\\ProgramData\\Example\\config.json' because it does not exist.\n" +
				"    + CategoryInfo          : ObjectNotFound: (C:\\ProgramData\\Example\\config.json:String) [Get-Item], ItemNotFoundException\n" +
				"    + FullyQualifiedErrorId : PathNotFound,Microsoft.PowerShell.Commands.GetItemCommand"
		case "cmd":
			msg = "The system cannot find the path specified."
		case "python":
			msg = "Traceback (most recent call last):\n  File \"<script>\", line 3, in <module>\nFileNotFoundError: [Errno 2] No such file or directory: '/etc/app/config.yaml'"
		default:
			code = 127
		}
		return outcome{log: out + msg + "\n", exit: code}
	}
	return outcome{log: out}
}

// installer describes how the platform installs an update, for the log.
func (a *agent) installLine(u agentproto.Update) (start, done string) {
	p := a.prof
	switch {
	case u.WingetID != nil:
		return fmt.Sprintf("winget upgrade --id %s --version %s --silent --accept-package-agreements", *u.WingetID, *u.LatestVersion),
			fmt.Sprintf("Found %s [%s] Version %s\nSuccessfully installed", strings.TrimSuffix(u.Title, " "+*u.LatestVersion), *u.WingetID, *u.LatestVersion)
	case u.PackageName != nil && p.kind == kindMac:
		return fmt.Sprintf("brew upgrade %s", *u.PackageName), fmt.Sprintf("==> Upgrading %s\n  %s -> %s", *u.PackageName, *u.InstalledVersion, *u.LatestVersion)
	case u.PackageName != nil && p.os.family == "rpm":
		return fmt.Sprintf("dnf -y upgrade %s-%s", *u.PackageName, *u.LatestVersion),
			fmt.Sprintf("Upgraded:\n  %s-%s.x86_64\nComplete!", *u.PackageName, *u.LatestVersion)
	case u.PackageName != nil:
		return fmt.Sprintf("apt-get install -y --only-upgrade %s=%s", *u.PackageName, *u.LatestVersion),
			fmt.Sprintf("Preparing to unpack .../%s_%s_amd64.deb ...\nUnpacking %s (%s) over (%s) ...\nSetting up %s (%s) ...", *u.PackageName, *u.LatestVersion, *u.PackageName, *u.LatestVersion, *u.InstalledVersion, *u.PackageName, *u.LatestVersion)
	case u.ProductKey != nil:
		return fmt.Sprintf("softwareupdate --install '%s' --agree-to-license", *u.ProductKey), fmt.Sprintf("Downloaded %s\nDone with %s", u.Title, *u.ProductKey)
	default:
		return fmt.Sprintf("Windows Update: downloading %s", u.Title), "Installation Result: Succeeded (0x00000000)"
	}
}

func (a *agent) deployUpdates(ctx context.Context, cmd agentproto.Command) outcome {
	var pl agentproto.DeployUpdatesPayload
	if err := json.Unmarshal(cmd.Payload, &pl); err != nil {
		return outcome{log: fmt.Sprintf("Invalid DEPLOY_UPDATES payload: %v\n", err), exit: 2}
	}
	inv := a.inventoryNow()
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %d update(s) to install\n", stamp(), len(pl.Updates))
	failed, installed, reboot := 0, 0, false
	for _, d := range pl.Updates {
		var match *agentproto.Update
		for i := range inv.Updates {
			if matches(d, inv.Updates[i]) {
				match = &inv.Updates[i]
				break
			}
		}
		if match == nil {
			fmt.Fprintf(&b, "[%s] %s: not applicable or already installed\n", stamp(), d.Title)
			continue
		}
		start, done := a.installLine(*match)
		fmt.Fprintf(&b, "[%s] %s\n", stamp(), start)
		if !a.pause(ctx, 5*time.Second, 30*time.Second) {
			return outcome{}
		}
		if a.fails() {
			failed++
			reason := "Installation Result: Failed (0x80070643: Fatal error during installation)"
			switch {
			case match.PackageName != nil && a.prof.os.family == "deb":
				reason = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 2311 (unattended-upgr)"
			case match.PackageName != nil:
				reason = "Error: Failed to download metadata for repo 'baseos': Cannot download repomd.xml"
			case match.WingetID != nil:
				reason = "Installer failed with exit code: 1603"
			}
			fmt.Fprintf(&b, "[%s] %s\n", stamp(), reason)
			continue
		}
		fmt.Fprintf(&b, "[%s] %s\n", stamp(), done)
		installed++
		reboot = reboot || match.RebootRequired
		a.mu.Lock()
		if a.ch.Installed == nil {
			a.ch.Installed = map[string]string{}
		}
		a.ch.Installed[updateIdentity(*match)] = time.Now().UTC().Format(time.RFC3339)
		a.invDirty = true
		a.mu.Unlock()
	}
	if reboot {
		a.mu.Lock()
		a.pendingReboot = true
		a.mu.Unlock()
		b.WriteString("A restart is required to complete the installation.\n")
	}
	fmt.Fprintf(&b, "[%s] %d installed, %d failed, %d not applicable\n", stamp(), installed, failed, len(pl.Updates)-installed-failed)
	if failed > 0 {
		return outcome{log: b.String(), exit: 1}
	}
	return outcome{log: b.String()}
}

func (a *agent) reboot(ctx context.Context, cmd agentproto.Command) outcome {
	var pl agentproto.RebootPayload
	if len(cmd.Payload) > 0 && string(cmd.Payload) != "null" {
		if err := json.Unmarshal(cmd.Payload, &pl); err != nil {
			return outcome{log: fmt.Sprintf("Invalid REBOOT payload: %v\n", err), exit: 2}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] Restart in %d s: %s\n", stamp(), pl.TimeoutSeconds, pl.Message)
	if !sleep(ctx, time.Duration(float64(time.Duration(pl.TimeoutSeconds)*time.Second)/a.f.cfg.Speed)) {
		return outcome{}
	}
	if a.fails() {
		fmt.Fprintf(&b, "[%s] The restart was cancelled: a user with unsaved work blocked the shutdown.\n", stamp())
		return outcome{log: b.String(), exit: 1}
	}
	// the computer is down, then boots
	if !a.pause(ctx, 20*time.Second, 90*time.Second) {
		return outcome{}
	}
	a.mu.Lock()
	a.lastBoot = time.Now().UTC().Truncate(time.Second)
	a.pendingReboot = false
	a.mu.Unlock()
	fmt.Fprintf(&b, "[%s] System is back up (boot time %s).\n", stamp(), a.lastBoot.Format(time.RFC3339))
	return outcome{log: b.String()}
}

func (a *agent) deploySoftware(ctx context.Context, cmd agentproto.Command) outcome {
	var pl agentproto.DeploySoftwarePayload
	if err := json.Unmarshal(cmd.Payload, &pl); err != nil {
		return outcome{log: fmt.Sprintf("Invalid DEPLOY_SOFTWARE payload: %v\n", err), exit: 2}
	}
	if !a.pause(ctx, 10*time.Second, 60*time.Second) {
		return outcome{}
	}
	if pl.WingetID == "" {
		if pl.URL == "" {
			return outcome{log: "Nothing to install: the payload names neither a package nor a URL.\n", exit: 2}
		}
		if a.fails() {
			return outcome{log: fmt.Sprintf("Downloading %s\nInstaller exited with code 1603\n", pl.URL), exit: 1603}
		}
		return outcome{log: fmt.Sprintf("Downloading %s\nRunning installer %s\nInstaller exited with code 0\n", pl.URL, pl.Args)}
	}
	pr, ok := catalogByID(a.prof, pl.WingetID)
	if !ok {
		return outcome{log: fmt.Sprintf("No package found matching input criteria: %s\n", pl.WingetID), exit: 1}
	}
	if a.fails() {
		return outcome{log: fmt.Sprintf("Found %s [%s] Version %s\nInstaller failed with exit code: 1618 (another installation is in progress)\n", pr.name, pl.WingetID, pr.latest()), exit: 1618}
	}
	a.mu.Lock()
	a.ch.Added = append(a.ch.Added, pl.WingetID)
	a.invDirty = true
	a.mu.Unlock()
	return outcome{log: fmt.Sprintf("Found %s [%s] Version %s\nSuccessfully installed\n", pr.name, pl.WingetID, pr.latest())}
}

func (a *agent) uninstallSoftware(ctx context.Context, cmd agentproto.Command) outcome {
	var pl agentproto.UninstallSoftwarePayload
	if err := json.Unmarshal(cmd.Payload, &pl); err != nil || pl.Name == "" {
		return outcome{log: "Invalid UNINSTALL_SOFTWARE payload: a name is required.\n", exit: 2}
	}
	inv := a.inventoryNow()
	found := false
	for _, s := range inv.Software {
		if s.Name == pl.Name {
			found = true
			break
		}
	}
	if !found {
		return outcome{log: fmt.Sprintf("%s is not installed.\n", pl.Name), exit: 1}
	}
	if !a.pause(ctx, 5*time.Second, 30*time.Second) {
		return outcome{}
	}
	if a.fails() {
		return outcome{log: fmt.Sprintf("Uninstalling %s\nThe uninstaller exited with code 1605\n", pl.Name), exit: 1605}
	}
	a.mu.Lock()
	a.ch.Removed = append(a.ch.Removed, pl.Name)
	a.invDirty = true
	a.mu.Unlock()
	return outcome{log: fmt.Sprintf("Uninstalling %s\nSuccessfully uninstalled\n", pl.Name)}
}
