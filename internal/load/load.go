// Package load runs a whole-system scenario against running patchd
// replicas and reports what it measured: a simulated fleet (the sim
// package) enrolls, inventories and checks in, spread over the replicas,
// while API clients page through endpoints, updates, software and
// vulnerabilities, approve updates, start actions and read reports. The
// report holds throughput and latency percentiles per operation, errors,
// the servers' CPU and memory (from /proc, given their process ids) and the
// database size. It starts no server itself.
package load

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // pg_database_size

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/sim"
)

// Config describes one run.
type Config struct {
	// Servers are the replicas' base URLs; agents and API clients are
	// spread over them in turn.
	Servers      []string
	EnrollToken  string
	ClientID     string
	ClientSecret string
	// Endpoints is the fleet size, split evenly over Servers.
	Endpoints int
	// Duration of the steady phase after enrollment.
	Duration time.Duration
	// Warmup runs the fleet this long after enrollment before the steady
	// phase is measured: agents start their first check-in spread over an
	// interval, so the first minute is not yet steady.
	Warmup time.Duration
	// Checkin is the agents' check-in interval (0 follows the server).
	Checkin time.Duration
	// Wait is the long-poll wait per check-in (negative: the sim default).
	Wait time.Duration
	// Clients is the number of concurrent API clients; 0 runs none, to
	// measure what the fleet alone costs.
	Clients int
	// ActionEvery paces action fan-out and approvals: each client starts
	// one at most this often (default 5 s).
	ActionEvery time.Duration
	// FanOut is how many endpoints one action targets (default 500).
	FanOut int
	// Concurrency bounds the enrollments in progress at once per server
	// (the sim's default, 64, when 0).
	Concurrency int
	// Seed of the simulated fleet.
	Seed int64
	// FirstIndex is the index of the fleet's first endpoint, so that
	// several patchd-load processes (one socket per agent each) share one
	// seed without enrolling the same machines.
	FirstIndex int
	// StateDir keeps one sim state file per replica, so a second run
	// resumes the same fleet instead of enrolling again; empty is none.
	StateDir string
	// ServerPIDs are the replicas' process ids, for CPU and memory.
	ServerPIDs []int
	// DBPID is the database server's process id (PostgreSQL's postmaster;
	// its backends are counted with it), for its CPU; 0 is none.
	DBPID int
	// DB is the database the servers use: a SQLite file path or a
	// postgres:// URL, for its size.
	DB string
	// Logf receives progress lines; nil is silent.
	Logf func(format string, args ...any)
}

// Report is what a run measured.
type Report struct {
	Endpoints int      `json:"endpoints"`
	Servers   []string `json:"servers"`
	// LoadAverage is /proc/loadavg at the start and the end (the machine
	// is shared).
	LoadAverage    [2]string `json:"loadAverage"`
	EnrollSeconds  float64   `json:"enrollSeconds"`
	SteadySeconds  float64   `json:"steadySeconds"`
	Checkins       int64     `json:"checkins"`
	CheckinsPerSec float64   `json:"checkinsPerSecond"`
	// ServerCPUPerCheckinMicros is the servers' CPU time in the steady
	// phase over the check-ins served in it, in microseconds: with no API
	// clients (Clients 0), what a check-in costs end to end through real
	// sockets, the servers' background work included.
	ServerCPUPerCheckinMicros float64 `json:"serverCpuPerCheckinMicros,omitempty"`
	// DatabaseCPUPercent and DatabaseCPUPerCheckinMicros are the database
	// server's (Config.DBPID) over the same phase.
	DatabaseCPUPercent          float64 `json:"databaseCpuPercent,omitempty"`
	DatabaseCPUPerCheckinMicros float64 `json:"databaseCpuPerCheckinMicros,omitempty"`
	// API holds one entry per operation of the API clients.
	API map[string]OpStats `json:"api"`
	// Fleet is the simulator's own count (enrollment, inventories,
	// check-in latency, command pickup), summed over the replicas.
	Fleet     []sim.Stats   `json:"fleet"`
	Processes []ProcessStat `json:"processes,omitempty"`
	DBBytes   int64         `json:"databaseBytes,omitempty"`
	DBError   string        `json:"databaseError,omitempty"`
}

// OpStats is one API operation's throughput and latency.
type OpStats struct {
	Count     int            `json:"count"`
	Errors    int            `json:"errors"`
	PerSecond float64        `json:"perSecond"`
	P50Ms     float64        `json:"p50Ms"`
	P95Ms     float64        `json:"p95Ms"`
	P99Ms     float64        `json:"p99Ms"`
	MaxMs     float64        `json:"maxMs"`
	ErrorText map[string]int `json:"errorText,omitempty"`
}

// ProcessStat is one server process over the steady phase.
type ProcessStat struct {
	PID int `json:"pid"`
	// CPUPercent is CPU time over wall time in the steady phase (200 is
	// both cores of a 2-core machine).
	CPUPercent float64 `json:"cpuPercent"`
	RSSMiB     float64 `json:"rssMiB"`
	PeakRSSMiB float64 `json:"peakRssMiB"`
	Error      string  `json:"error,omitempty"`
}

func (c *Config) check() error {
	var problems []string
	if len(c.Servers) == 0 {
		problems = append(problems, "at least one server URL is required")
	}
	if c.EnrollToken == "" {
		problems = append(problems, "an enrollment token is required")
	}
	if c.ClientID == "" || c.ClientSecret == "" {
		problems = append(problems, "an API client id and secret are required")
	}
	if c.Endpoints < 1 {
		problems = append(problems, "endpoints must be at least 1")
	}
	if c.Duration <= 0 {
		problems = append(problems, "duration must be positive")
	}
	if c.Clients < 0 {
		problems = append(problems, "clients must not be negative")
	}
	if len(problems) > 0 {
		return fmt.Errorf("load: %s", strings.Join(problems, "; "))
	}
	if c.ActionEvery <= 0 {
		c.ActionEvery = 5 * time.Second
	}
	if c.FanOut <= 0 {
		c.FanOut = 500
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return nil
}

// Run enrolls the fleet, runs the steady phase for cfg.Duration and
// answers the report. Enrollment failures the simulator retries are in the
// fleet's errors; a refused token ends the run.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.check(); err != nil {
		return Report{}, err
	}
	rep := Report{Endpoints: cfg.Endpoints, Servers: cfg.Servers, API: map[string]OpStats{}}
	rep.LoadAverage[0] = loadAverage()
	if cfg.StateDir != "" {
		// The simulators write their state files into it and only log a
		// failure: a missing folder meant no state was ever saved. It holds
		// agent secrets, hence 0700.
		if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
			return rep, fmt.Errorf("load: state folder: %w", err)
		}
	}

	fleets := make([]*sim.Fleet, len(cfg.Servers))
	first := cfg.FirstIndex
	for i, srv := range cfg.Servers {
		n := cfg.Endpoints / len(cfg.Servers)
		if i < cfg.Endpoints%len(cfg.Servers) {
			n++
		}
		sc := sim.Config{Server: srv, EnrollToken: cfg.EnrollToken, Endpoints: n, Checkin: cfg.Checkin, Wait: cfg.Wait,
			FailureRate: 0.02, Seed: cfg.Seed, FirstIndex: first, Concurrency: cfg.Concurrency, Speed: 100, ProgressEvery: 30 * time.Second,
			Logf: cfg.Logf}
		if cfg.StateDir != "" {
			sc.StatePath = filepath.Join(cfg.StateDir, fmt.Sprintf("sim-%d.json", i))
		}
		first += n
		f, err := sim.New(sc)
		if err != nil {
			return rep, err
		}
		fleets[i] = f
	}

	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(fleets))
	for i, f := range fleets {
		wg.Go(func() { errs[i] = f.Enroll(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return rep, err
	}
	rep.EnrollSeconds = round(time.Since(start).Seconds())
	cfg.Logf("load: %d endpoints enrolled with inventory in %.1fs", cfg.Endpoints, rep.EnrollSeconds)

	var ids []string
	for _, f := range fleets {
		ids = append(ids, f.EndpointIDs()...)
	}
	steady, stop := context.WithTimeout(ctx, cfg.Warmup+cfg.Duration)
	defer stop()
	for _, f := range fleets {
		wg.Go(func() { f.Run(steady) })
	}
	if cfg.Warmup > 0 {
		cfg.Logf("load: warming up for %s", cfg.Warmup)
		select {
		case <-steady.Done():
		case <-time.After(cfg.Warmup):
		}
	}
	before := checkins(fleets)
	cpu0 := cpuTimes(cfg.ServerPIDs)
	db0 := -1.0
	if cfg.DBPID > 0 {
		db0 = treeCPU(cfg.DBPID)
	}
	steadyStart := time.Now()
	rec := newRecorder()
	for i := range cfg.Clients {
		c := client.New(cfg.Servers[i%len(cfg.Servers)], cfg.ClientID, cfg.ClientSecret)
		w := &apiWorker{c: c, rec: rec, ids: ids, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i))), cfg: &cfg}
		wg.Go(func() { w.run(steady) })
	}
	<-steady.Done()
	elapsed := time.Since(steadyStart)
	cpu1 := cpuTimes(cfg.ServerPIDs)
	db1 := -1.0
	if cfg.DBPID > 0 {
		db1 = treeCPU(cfg.DBPID)
	}
	wg.Wait()

	rep.SteadySeconds = round(elapsed.Seconds())
	rep.Checkins = checkins(fleets) - before
	rep.CheckinsPerSec = round(float64(rep.Checkins) / elapsed.Seconds())
	rep.API = rec.report(elapsed)
	for _, f := range fleets {
		rep.Fleet = append(rep.Fleet, f.Stats())
	}
	var cpu float64
	for i, pid := range cfg.ServerPIDs {
		ps := processStat(pid)
		if cpu0[i] >= 0 && cpu1[i] >= 0 {
			ps.CPUPercent = round(100 * (cpu1[i] - cpu0[i]) / elapsed.Seconds())
			cpu += cpu1[i] - cpu0[i]
		}
		rep.Processes = append(rep.Processes, ps)
	}
	if rep.Checkins > 0 && cpu > 0 {
		rep.ServerCPUPerCheckinMicros = round(cpu * 1e6 / float64(rep.Checkins))
	}
	if db0 >= 0 && db1 >= 0 {
		rep.DatabaseCPUPercent = round(100 * (db1 - db0) / elapsed.Seconds())
		if rep.Checkins > 0 {
			rep.DatabaseCPUPerCheckinMicros = round((db1 - db0) * 1e6 / float64(rep.Checkins))
		}
	}
	if cfg.DB != "" {
		n, err := databaseSize(ctx, cfg.DB)
		rep.DBBytes = n
		if err != nil {
			rep.DBError = err.Error()
		}
	}
	rep.LoadAverage[1] = loadAverage()
	return rep, nil
}

func checkins(fleets []*sim.Fleet) int64 {
	var n int64
	for _, f := range fleets {
		n += f.Stats().Checkins
	}
	return n
}

// apiWorker is one API client: it reads pages in turn and, at most every
// ActionEvery, approves updates or starts an action.
type apiWorker struct {
	c   *client.Client
	rec *recorder
	ids []string
	rng *rand.Rand
	cfg *Config
}

func (w *apiWorker) run(ctx context.Context) {
	lastAction := time.Now().Add(-time.Duration(w.rng.Int64N(int64(w.cfg.ActionEvery))))
	// Approvals and actions take turns (by their own count: the step's
	// parity could hand every turn to one of them).
	turns := 0
	for step := 0; ctx.Err() == nil; step++ {
		if time.Since(lastAction) >= w.cfg.ActionEvery {
			lastAction = time.Now()
			turns++
			if turns%2 == 1 {
				w.approve(ctx)
			} else {
				w.action(ctx)
			}
			continue
		}
		page := client.PageQuery{Limit: 50, Offset: 50 * w.rng.IntN(20)}
		switch step % 7 {
		case 0:
			w.time(ctx, "GET /endpoints", func() error { _, err := w.c.ListEndpoints(ctx, client.EndpointQuery{PageQuery: page}); return err })
		case 1:
			w.time(ctx, "GET /updates", func() error { _, err := w.c.ListUpdates(ctx, client.UpdateQuery{PageQuery: page}); return err })
		case 2:
			w.time(ctx, "GET /software", func() error { _, err := w.c.ListSoftware(ctx, client.SoftwareQuery{PageQuery: page}); return err })
		case 3:
			w.time(ctx, "GET /vulnerabilities", func() error {
				_, err := w.c.ListVulnerabilities(ctx, client.VulnerabilityQuery{PageQuery: page})
				return err
			})
		case 4:
			w.time(ctx, "GET /groups", func() error { _, err := w.c.ListGroups(ctx); return err })
		case 5:
			id := w.ids[w.rng.IntN(len(w.ids))]
			w.time(ctx, "GET /endpoints/{id}", func() error { _, err := w.c.GetEndpoint(ctx, id); return err })
		case 6:
			w.time(ctx, "GET /runs", func() error { _, err := w.c.ListRuns(ctx, client.RunQuery{Limit: 50}); return err })
		}
		if step%50 == 49 {
			w.time(ctx, "GET /reports/{key}", func() error { _, err := w.c.Report(ctx, "missing-critical-updates"); return err })
		}
	}
}

// approve approves the updates of one page of the missing-updates list.
func (w *apiWorker) approve(ctx context.Context) {
	var page apiv1.Page[apiv1.Update]
	offset := 20 * w.rng.IntN(50)
	for {
		err := w.time(ctx, "GET /updates", func() (err error) {
			page, err = w.c.ListUpdates(ctx, client.UpdateQuery{PageQuery: client.PageQuery{Limit: 20, Offset: offset}})
			return err
		})
		if err != nil {
			return
		}
		if len(page.Items) > 0 || offset == 0 {
			break
		}
		offset = 0 // past the end of a small fleet's list: the first page
	}
	if len(page.Items) == 0 {
		return
	}
	body := apiv1.ApprovalBody{Status: "APPROVED"}
	for _, u := range page.Items {
		body.Keys = append(body.Keys, apiv1.ApprovalKey{Key: u.Key})
	}
	w.time(ctx, "POST /updates/approvals", func() error { _, err := w.c.SetApproval(ctx, body); return err })
}

// action deploys the critical updates of FanOut random endpoints (their
// inventories change when the simulated agents install them).
func (w *apiWorker) action(ctx context.Context) {
	n := min(w.cfg.FanOut, len(w.ids))
	body := apiv1.ActionBody{Type: "DEPLOY_UPDATES", Label: "load", Payload: []byte(`{"mode":"filters","filters":{"severities":["Critical"]}}`)}
	for _, i := range w.rng.Perm(len(w.ids))[:n] {
		body.EndpointIDs = append(body.EndpointIDs, w.ids[i])
	}
	w.time(ctx, "POST /actions", func() error {
		_, err := w.c.RunAction(ctx, body)
		if client.IsStatus(err, http.StatusUnprocessableEntity) && strings.Contains(err.Error(), "nothing_to_install") {
			// The endpoints drawn have no critical update left (the
			// simulated agents installed them): the spec's answer, not
			// a failure.
			return nil
		}
		return err
	})
}

func (w *apiWorker) time(ctx context.Context, op string, call func() error) error {
	start := time.Now()
	err := call()
	if ctx.Err() != nil {
		return err // cut short by the end of the run: not a measurement
	}
	w.rec.observe(op, time.Since(start), err)
	return err
}

// recorder keeps every latency by operation (a run makes at most a few
// hundred thousand calls).
type recorder struct {
	mu   sync.Mutex
	ops  map[string][]time.Duration
	errs map[string]map[string]int
}

func newRecorder() *recorder {
	return &recorder{ops: map[string][]time.Duration{}, errs: map[string]map[string]int{}}
}

func (r *recorder) observe(op string, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if r.errs[op] == nil {
			r.errs[op] = map[string]int{}
		}
		msg := err.Error()
		if len(msg) > 120 {
			msg = msg[:120]
		}
		r.errs[op][msg]++
		return
	}
	r.ops[op] = append(r.ops[op], d)
}

func (r *recorder) report(elapsed time.Duration) map[string]OpStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]OpStats{}
	names := map[string]bool{}
	for op := range r.ops {
		names[op] = true
	}
	for op := range r.errs {
		names[op] = true
	}
	for op := range names {
		ds := slices.Clone(r.ops[op])
		slices.Sort(ds)
		st := OpStats{Count: len(ds), PerSecond: round(float64(len(ds)) / elapsed.Seconds()), ErrorText: r.errs[op]}
		for _, n := range r.errs[op] {
			st.Errors += n
		}
		if len(ds) > 0 {
			st.P50Ms, st.P95Ms, st.P99Ms = pct(ds, 0.50), pct(ds, 0.95), pct(ds, 0.99)
			st.MaxMs = ms(ds[len(ds)-1])
		}
		out[op] = st
	}
	return out
}

func pct(sorted []time.Duration, p float64) float64 {
	i := int(p*float64(len(sorted))+0.5) - 1
	return ms(sorted[max(0, min(i, len(sorted)-1))])
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

func round(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuTimes answers each process's user+system CPU seconds, -1 when it
// cannot be read.
func cpuTimes(pids []int) []float64 {
	out := make([]float64, len(pids))
	for i, pid := range pids {
		out[i] = -1
		if f := statFields(pid); len(f) >= 13 {
			out[i] = ticks(f[11]) + ticks(f[12])
		}
	}
	return out
}

// statFields answers the fields of /proc/PID/stat after the command name
// (field 3 on), nil when it cannot be read. The command name may hold
// spaces; fields count from after its closing parenthesis.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

func ticks(field string) float64 {
	n, _ := strconv.ParseFloat(field, 64)
	return n / clockTicks
}

// treeCPU answers the CPU seconds of a process and of its descendants (a
// database server: PostgreSQL's postmaster and its backends), those that
// ended and were waited for included; -1 when the process cannot be read.
func treeCPU(root int) float64 {
	f := statFields(root)
	if len(f) < 15 {
		return -1
	}
	total := ticks(f[11]) + ticks(f[12]) + ticks(f[13]) + ticks(f[14])
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return total
	}
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(pid); len(f) >= 2 {
			ppid, _ := strconv.Atoi(f[1])
			parent[pid] = ppid
		}
	}
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == root {
				if f := statFields(pid); len(f) >= 13 {
					total += ticks(f[11]) + ticks(f[12])
				}
				break
			}
		}
	}
	return total
}

func processStat(pid int) ProcessStat {
	ps := ProcessStat{PID: pid}
	if runtime.GOOS != "linux" {
		ps.Error = "process figures need /proc"
		return ps
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		ps.Error = err.Error()
		return ps
	}
	for line := range strings.Lines(string(b)) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			ps.RSSMiB = round(kb / 1024)
		case "VmHWM":
			ps.PeakRSSMiB = round(kb / 1024)
		}
	}
	return ps
}

// databaseSize answers the size of a SQLite database (with its WAL) or of a
// PostgreSQL database.
func databaseSize(ctx context.Context, db string) (int64, error) {
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		conn, err := sql.Open("pgx", db)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		var n int64
		err = conn.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&n)
		return n, err
	}
	path := strings.TrimPrefix(db, "sqlite:")
	var total int64
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			if p == path {
				return 0, err
			}
			continue
		}
		total += fi.Size()
	}
	return total, nil
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
