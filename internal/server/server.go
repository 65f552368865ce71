// Package server assembles patchd serve: the store, the authenticator, the
// REST API, the agent protocol, health and metrics endpoints and the
// background workers, on one HTTP listener with graceful shutdown (and
// optional listeners of their own for metrics and the profiler).
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/agentapi"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/api"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/console"
	"github.com/patchd/patchd/internal/endpointq"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/presence"
	"github.com/patchd/patchd/internal/servertls"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/version"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/internal/worker"
	"github.com/patchd/patchd/openapi"
)

// Server is one patchd serve replica.
type Server struct {
	cfg     config.Config
	store   *store.Store
	auth    *auth.Authenticator
	api     *api.API
	console *console.Console
	agents  *agentapi.API
	ingest  *store.Ingester
	hub     *presence.Hub
	// replica names this replica in the database's claims and leases.
	replica   string
	conns     *conns
	registry  *prometheus.Registry
	handler   http.Handler
	tls       atomic.Pointer[servertls.Setup]
	agentDist *agentdist.Host
	// writeRecent is how recent a committed write must be for readiness
	// to skip the write probe (writesRecent; tests shorten it).
	writeRecent time.Duration
}

// writesRecent: a replica that committed a write this recently, with no
// failure of the database since, is ready without probing.
const writesRecent = 10 * time.Second

// New assembles a server on an open store.
func New(cfg config.Config, s *store.Store) *Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(newDBCollector(s))
	build := version.Get()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_build_info",
		Help:        "Always 1; its labels are what this replica was built as (patchd version).",
		ConstLabels: prometheus.Labels{"version": build.Version, "commit": build.Commit, "date": build.Date, "goversion": build.GoVersion}},
		func() float64 { return 1 }))
	if cfg.CheckinInterval <= 0 {
		cfg.CheckinInterval = 60 * time.Second
	}
	srv := &Server{cfg: cfg, store: s, auth: auth.NewAuthenticator(s), registry: reg, hub: presence.New(s, cfg.MaxLongPolls),
		replica: "replica-" + store.NewID(), writeRecent: writesRecent}
	if s.Engine() == store.SQLite {
		// One process serves a SQLite database: the offline alerts read
		// this replica's presence watermark in memory (see
		// store.KeepPresenceLocal).
		srv.hub.KeepWatermarkLocal()
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_agent_long_polls",
		Help: "Agents' long polls this replica holds open."}, func() float64 { held, _ := srv.hub.LongPolls(); return float64(held) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_agent_long_polls_max",
		Help: "The bound of long polls held at once (--max-long-polls); past it check-ins are answered at once."},
		func() float64 { _, bound := srv.hub.LongPolls(); return float64(bound) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_alert_pending_retries",
		Help: "Alert deliveries that failed and wait for another attempt (webhooks of rules with webhookRetryMinutes, e-mail refused for now)."},
		func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			n, err := s.PendingRetries(ctx)
			if err != nil {
				return math.NaN()
			}
			return float64(n)
		}))
	srv.registerPresenceMetrics()
	srv.ingest = s.NewIngester()
	reg.MustRegister(newBacklogCollector(srv))
	reg.MustRegister(newReplicationCollector(s))
	srv.conns = newConns()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_http_connections",
		Help: "Open HTTP connections; past 90 % of the open-files limit, agent answers close theirs."},
		func() float64 { return float64(srv.conns.open.Load()) }))
	releases := func(ctx context.Context) ([]agentproto.Release, error) {
		return srv.agentDist.Store.Releases(func(ch *agentdist.ReleaseChangedError) { srv.agentDist.ReportChanged(ctx, ch) })
	}
	srv.agents = agentapi.New(agentapi.Config{Store: s, Presence: srv.hub, CheckinInterval: cfg.CheckinInterval, ScanInterval: cfg.ScanInterval, Ingester: srv.ingest,
		MaxInventories: cfg.MaxInventories, Crowded: srv.conns.Crowded, Releases: releases,
		ClientIP: func(r *http.Request) string { return srv.api.ClientIP(r) }})
	srv.api = api.New(api.Config{Store: s, Auth: srv.auth, TrustedProxies: cfg.TrustedProxies, OpenAPI: openapi.JSON,
		CheckinInterval: cfg.CheckinInterval, EndpointRemoved: srv.agents.Forget, Queued: srv.hub.QueuedSoon, BaseURL: cfg.BaseURL,
		Releases: releases})

	mux := http.NewServeMux()
	srv.api.Register(mux)
	srv.agentDist = newAgentHost(cfg, s)
	srv.agentDist.Register(mux)
	con, err := console.New(console.Config{Store: s, API: srv.api, CheckinInterval: cfg.CheckinInterval, BaseURL: cfg.BaseURL, Agents: srv.agentDist,
		SecureCookies:  strings.HasPrefix(cfg.BaseURL, "https://") || (cfg.Addr != "" && !cfg.Plain()),
		TrustedProxies: cfg.TrustedProxies, IdleTimeout: cfg.SessionIdleTimeout, MaxAge: cfg.SessionMaxAge})
	if err != nil {
		panic(err) // the embedded templates do not parse: a build defect, caught by every test
	}
	srv.console = con
	mux.Handle("/console/", con)
	mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusFound))
	srv.agents.Register(mux)
	mux.Handle("GET "+agentproto.PathCA, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.tls.Load().CAHandler().ServeHTTP(w, r)
	}))
	mux.Handle("GET /healthz", httpx.Handle(func(w http.ResponseWriter, r *http.Request) error {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	}))
	mux.Handle("GET /readyz", httpx.Handle(srv.ready))
	if cfg.MetricsToken != "" {
		mux.Handle("GET /metrics", metricsHandler(reg, cfg.MetricsToken))
	}
	srv.handler = securityHeaders(httpx.Middleware(mux, httpx.NewMetrics(reg), "/agent/"))
	return srv
}

// MetricsHandler serves /metrics for --metrics-addr (with the bearer token
// check when --metrics-token is set).
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler(s.registry, s.cfg.MetricsToken))
	return securityHeaders(mux)
}

// UseTLS tells the server how it serves TLS: GET /agent/v1/ca.pem
// answers the certificate agents pin (404 without one).
func (s *Server) UseTLS(setup *servertls.Setup) { s.tls.Store(setup) }

// newAgentHost serves the agents of cfg.AgentDir (none when it is empty:
// servers assembled by tests without a data folder).
func newAgentHost(cfg config.Config, s *store.Store) *agentdist.Host {
	st := &agentdist.Store{}
	if cfg.AgentDir != "" {
		var err error
		if st, err = agentdist.NewStore(cfg.AgentDir); err != nil {
			slog.Warn("agent downloads are off", "err", err)
			st = &agentdist.Store{}
		}
	}
	pk := &agentdist.Packager{Store: st, Server: cfg.BaseURL, GPGKey: cfg.PackageGPGKey, GPGPassphrase: cfg.PackageGPGPassphrase, Maintainer: cfg.PackageMaintainer}
	if cfg.SignCert != "" {
		pk.Sign = &agentdist.Signer{CertFile: cfg.SignCert, KeyFile: cfg.SignKey}
	}
	return &agentdist.Host{Store: st, Packages: pk, BaseURL: cfg.BaseURL, CAPin: s.EnrollPin,
		ReleaseChanged: func(ctx context.Context, ch *agentdist.ReleaseChangedError) error {
			_, err := s.RaiseAgentReleaseChanged(ctx, ch.Platform.String(), ch.Release.Version, ch.Release.SHA256, ch.SHA256, time.Now())
			return err
		}}
}

// AgentDist serves the agent's downloads and installers.
func (s *Server) AgentDist() *agentdist.Host { return s.agentDist }

// FlushCheckins writes the check-ins batched in memory now, not at the next
// flush (tests that read what agents just reported).
func (s *Server) FlushCheckins(ctx context.Context) error { return s.hub.Flush(ctx) }

// Close stops the server's writers after the HTTP server stopped: queued
// inventories are written.
func (s *Server) Close() { s.ingest.Close() }

// Handler is the server's whole HTTP surface.
func (s *Server) Handler() http.Handler { return s.handler }

// Auth is the server's authenticator (tests use it to move the clock).
func (s *Server) Auth() *auth.Authenticator { return s.auth }

// API is the REST API (tests read its route table).
func (s *Server) API() *api.API { return s.api }

// Console is the web console (tests read its route table).
func (s *Server) Console() *console.Console { return s.console }

// Agents is the agent protocol's handler (tests move its clock).
func (s *Server) Agents() *agentapi.API { return s.agents }

// Presence is the replica's view of its agents.
func (s *Server) Presence() *presence.Hub { return s.hub }

func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	db := dbReadinessOf(s.store)
	if err := s.store.Ping(ctx); err != nil {
		slog.Warn("readiness: database unreachable", "err", err)
		httpx.WriteJSON(w, http.StatusServiceUnavailable, readiness{Status: "unavailable", Reason: "database unreachable", Database: db})
		return nil
	}
	// A full disk or a read-only database answers pings and reads but
	// fails every write: check writes too (cheaply; see store.Writable).
	wctx, wcancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer wcancel()
	if err := s.store.Writable(wctx, s.writeRecent); err != nil {
		slog.Warn("readiness: database refuses writes", "err", err)
		httpx.WriteJSON(w, http.StatusServiceUnavailable, readiness{Status: "unavailable", Reason: "database refuses writes", Database: db})
		return nil
	}
	httpx.WriteJSON(w, http.StatusOK, readiness{Status: "ready", Database: db})
	return nil
}

// readiness is the answer of /readyz.
type readiness struct {
	Status   string       `json:"status"`
	Reason   string       `json:"reason,omitempty"`
	Database *dbReadiness `json:"database,omitempty"`
}

// RunWorkers runs the background loops until ctx ends.
func (s *Server) RunWorkers(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.auth.Run(ctx) })
	wg.Go(func() { s.hub.Run(ctx) })
	wg.Go(func() { s.sweepStatus(ctx) })
	wg.Go(func() { s.applyDueApprovals(ctx) })
	wg.Go(func() { s.recordCompliance(ctx) })
	wg.Go(func() {
		(&worker.Scheduler{Store: s.store, Queued: s.hub.Queued, Interval: s.cfg.SchedulerInterval, CommandExpiry: s.cfg.CommandExpiry}).Run(ctx)
	})
	wg.Go(func() { s.runVulnWorkers(ctx) })
	wg.Go(func() { s.runAlertWorkers(ctx) })
	wg.Wait()
}

// Serve runs patchd serve until ctx ends (Start, then Shutdown with 30
// seconds for the requests in flight), or until its listener fails.
func Serve(ctx context.Context, cfg config.Config, out io.Writer) error {
	run, err := Start(ctx, cfg, out)
	if err != nil {
		return err
	}
	select {
	case err := <-run.failed:
		run.stop()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	slog.Info("patchd shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run.Shutdown(shutCtx); err != nil {
		slog.Warn("shutdown", "err", err)
	}
	return nil
}

// Running is a started patchd serve.
type Running struct {
	srv      *Server
	store    *store.Store
	hs       *http.Server
	ln       net.Listener
	metrics  *http.Server // nil without --metrics-addr
	metricLn net.Listener
	pprof    func()
	failed   chan error
	stopWork context.CancelFunc
	workers  sync.WaitGroup
}

// Start binds the listeners first — a port already taken fails the start
// before a database is created or a first-start secret is made that nobody
// would see —, then opens the store, bootstraps an empty database (printing
// its secrets to out) and serves. ctx bounds the start only (migrations).
func Start(ctx context.Context, cfg config.Config, out io.Writer) (_ *Running, err error) {
	run := &Running{failed: make(chan error, 2)}
	defer func() {
		if err != nil {
			run.closeListeners()
		}
	}()
	if run.ln, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if cfg.MetricsAddr != "" {
		if run.metricLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			return nil, fmt.Errorf("metrics listen: %w", err)
		}
	}
	if cfg.PprofAddr != "" {
		if run.pprof, err = servePprof(cfg.PprofAddr); err != nil {
			return nil, err
		}
	}
	s, err := store.Open(ctx, cfg.DB, cfg.DataDir, store.Options{MaxConns: cfg.MaxDBConns,
		ReadURLs: cfg.DBRead, ReadMaxLag: cfg.DBReadMaxLag,
		SecretKey: store.SecretKey{Text: cfg.SecretKey, File: cfg.SecretKeyFile}, ServerVersion: cfg.Version})
	if err != nil {
		return nil, err
	}
	// TLS before the first start's bootstrap: its banner prints tokens
	// with the pin.
	setup, err := servertls.New(ctx, cfg, s)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("tls: %w", err)
	}
	boot, created, err := admin.BootstrapIfEmpty(ctx, s)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("first start: %w", err)
	}
	run.store = s
	run.srv = New(cfg, s)
	run.srv.UseTLS(setup)
	if created {
		if err := writeBootstrap(out, cfg, boot); err != nil {
			s.Close()
			return nil, err
		}
	}
	if setup.Pin != "" {
		fmt.Fprintf(out, "patchd: HTTPS (%s); agents pin the CA with SHA-256 %s (carried by every enrollment token; GET %s%s)\n",
			setup.Mode, setup.Pin, cfg.BaseURL, agentproto.PathCA)
	}
	run.hs = &http.Server{
		Handler:           run.srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
		ConnState:         run.srv.conns.track,
		TLSConfig:         setup.TLS,
	}
	// Shutdown answers the agents' long polls at once instead of waiting
	// them out (up to a minute each).
	run.hs.RegisterOnShutdown(run.srv.hub.Drain)
	workCtx, stopWork := context.WithCancel(context.Background())
	run.stopWork = stopWork
	run.workers.Go(func() { run.srv.RunWorkers(workCtx) })
	if !cfg.NoAgentBuild {
		// In a source checkout (go run ./cmd/patchd serve) the agent for
		// this machine is built once when none is published.
		run.workers.Go(func() {
			wd, _ := os.Getwd()
			run.srv.agentDist.Store.EnsureHostAgent(workCtx, wd, slog.Default())
		})
	}

	_, polls := run.srv.hub.LongPolls()
	slog.Info("patchd serving", "addr", run.ln.Addr().String(), "base_url", cfg.BaseURL, "db", s.Engine(), "max_long_polls", polls,
		"tls", string(setup.Mode), "ca_sha256", setup.Pin)
	go func() {
		var err error
		if setup.TLS != nil {
			err = run.hs.ServeTLS(run.ln, "", "")
		} else {
			err = run.hs.Serve(run.ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			run.failed <- err
		}
	}()
	switch {
	case run.metricLn != nil:
		run.metrics = &http.Server{Handler: run.srv.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second}
		slog.Info("metrics serving", "addr", run.metricLn.Addr().String(), "token", cfg.MetricsToken != "")
		go func() {
			if err := run.metrics.Serve(run.metricLn); !errors.Is(err, http.ErrServerClosed) {
				run.failed <- fmt.Errorf("metrics: %w", err)
			}
		}()
	case cfg.MetricsToken != "":
		slog.Info("metrics served at /metrics with the bearer token of --metrics-token")
	default:
		slog.Info("metrics are off: set --metrics-addr or --metrics-token to serve /metrics")
	}
	return run, nil
}

// Addr is the address the server listens on.
func (r *Running) Addr() net.Addr { return r.ln.Addr() }

// MetricsAddr is the address of --metrics-addr's listener, or nil.
func (r *Running) MetricsAddr() net.Addr {
	if r.metricLn == nil {
		return nil
	}
	return r.metricLn.Addr()
}

// Server is the running server.
func (r *Running) Server() *Server { return r.srv }

// finalSave is the part of the shutdown's time kept, after the HTTP
// server, for the workers to stop and the last write of the check-ins
// (presence.FinalFlushTimeout) with a margin.
const finalSave = presence.FinalFlushTimeout + 2*time.Second

// Shutdown stops accepting, answers the long polls held, lets the other
// requests finish, then stops the workers (which write the batched
// check-ins) and closes the store. When ctx has a deadline — the time
// until the SIGKILL that follows a SIGTERM —, the requests get it less
// finalSave (half of it when it is shorter than twice finalSave) and are
// cut off after that, so that the check-ins are written before the
// deadline however many requests hang on a busy database. It answers
// context.DeadlineExceeded when requests were still running when they
// were cut off.
func (r *Running) Shutdown(ctx context.Context) error {
	httpCtx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		keep := finalSave
		if left < 2*finalSave {
			keep = left / 2
		}
		var cancel context.CancelFunc
		httpCtx, cancel = context.WithDeadline(ctx, deadline.Add(-keep))
		defer cancel()
	}
	err := r.hs.Shutdown(httpCtx)
	if r.metrics != nil {
		r.metrics.Shutdown(httpCtx)
	}
	r.stop()
	return err
}

// stop ends what Start began, after the HTTP server: the workers stop
// first (the presence hub writes its check-ins) while the inventories
// queued are written.
func (r *Running) stop() {
	r.hs.Close()
	if r.metrics != nil {
		r.metrics.Close()
	}
	if r.pprof != nil {
		r.pprof()
	}
	r.stopWork()
	r.srv.Close()
	r.workers.Wait()
	r.store.Close()
}

func (r *Running) closeListeners() {
	for _, ln := range []net.Listener{r.ln, r.metricLn} {
		if ln != nil {
			ln.Close()
		}
	}
	if r.pprof != nil {
		r.pprof()
	}
}

// servePprof serves the Go profiler on its own listener, never on the
// public one.
func servePprof(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	slog.Info("pprof serving", "addr", ln.Addr().String())
	return func() { hs.Close() }, nil
}

// writeBootstrap prints the first start's secrets to out or, with
// --first-secrets-file, writes them to that file (mode 0600, replacing
// one an earlier database's first start left) and says where on out.
func writeBootstrap(out io.Writer, cfg config.Config, b admin.Bootstrap) error {
	if cfg.FirstSecretsFile == "" {
		printBootstrap(out, cfg, b)
		return nil
	}
	var text bytes.Buffer
	printBootstrap(&text, cfg, b)
	tmp := cfg.FirstSecretsFile + ".new"
	os.Remove(tmp)
	err := os.WriteFile(tmp, text.Bytes(), 0o600)
	if err == nil {
		err = os.Rename(tmp, cfg.FirstSecretsFile)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("first start: write the one-time secrets to %s: %w (organization %q was created: "+
			"make a credential with patchd admin credential create, a token with patchd admin enroll-token create)",
			cfg.FirstSecretsFile, err, b.Org.Name)
	}
	fmt.Fprintf(out, "patchd: first start. Organization %q was created; its Administrator credential and enrollment token "+
		"are in %s (mode 0600), shown nowhere else.\n", b.Org.Name, cfg.FirstSecretsFile)
	return nil
}

func printBootstrap(out io.Writer, cfg config.Config, b admin.Bootstrap) {
	pinNote, caStep, caFlag := "", "", ""
	if pin := b.EnrollToken.CASHA256; pin != "" {
		pinNote = "; after the dot: the SHA-256 of the server's CA, which agents pin"
		caStep = fmt.Sprintf("  The server's CA:  curl -sk %s%s -o patchd-ca.pem   (its DER's SHA-256 must be %s:\n"+
			"                    openssl x509 -in patchd-ca.pem -outform der | sha256sum)\n", cfg.BaseURL, agentproto.PathCA, pin)
		caFlag = " --cacert patchd-ca.pem"
	}
	fmt.Fprintf(out, `
patchd: first start. Organization %q was created. These secrets are shown once; keep them.

  API base URL:        %s/api/v1
  API client_id:       %s
  API client_secret:   %s   (role Administrator)
  Enrollment token:    %s   (for patchd-agent enroll and patchd-sim%s)

  Console:             %s/console/  (first sign-in: %s/console/setup with the client_id and secret above)

%s  Get a token:  curl -s%s -d grant_type=client_credentials -d client_id=%s -d client_secret=%s %s/api/oauth/token

`, b.Org.Name, cfg.BaseURL, b.Credential.ClientID, b.Credential.ClientSecret, b.EnrollToken.Token, pinNote, cfg.BaseURL, cfg.BaseURL,
		caStep, caFlag, b.Credential.ClientID, b.Credential.ClientSecret, cfg.BaseURL)
}

// sweepInterval is how often endpoint status transitions are recorded.
const sweepInterval = 15 * time.Second

// sweepStatus records connected/disconnected transitions until ctx ends.
func (s *Server) sweepStatus(ctx context.Context) {
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		if _, err := s.store.SweepStatus(ctx, endpointq.ConnectedSince(now, s.cfg.CheckinInterval), now); err != nil && ctx.Err() == nil {
			slog.Warn("status sweep", "err", err)
		}
	}
}

// runVulnWorkers matches changed endpoints (and the fleet after a feed
// change) every VulnMatchInterval, and syncs the feeds every
// VulnSyncInterval when it is set; both under store leases, so any number
// of replicas share the work.
func (s *Server) runVulnWorkers(ctx context.Context) {
	holder := s.replica
	var wg sync.WaitGroup
	wg.Go(func() {
		(&vulndb.Matcher{Store: s.store, Holder: holder, Interval: s.cfg.VulnMatchInterval}).Run(ctx)
	})
	if s.cfg.VulnSyncInterval > 0 {
		wg.Go(func() {
			vulndb.RunSync(ctx, s.store, holder, s.cfg.VulnSyncInterval, vulndb.ConfigFromFeeds(s.cfg.Feeds))
		})
	}
	wg.Wait()
}
