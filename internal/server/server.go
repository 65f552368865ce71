// Package server assembles patchd serve: the store, the authenticator, the
// REST API, the agent protocol, health and metrics endpoints and the
// background workers, on one HTTP listener with graceful shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/agentapi"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/api"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/console"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/presence"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/internal/worker"
	"github.com/patchd/patchd/openapi"
)

// Server is one patchd serve replica.
type Server struct {
	cfg       config.Config
	store     *store.Store
	auth      *auth.Authenticator
	api       *api.API
	agents    *agentapi.API
	ingest    *store.Ingester
	hub       *presence.Hub
	conns     *conns
	registry  *prometheus.Registry
	handler   http.Handler
	agentDist *agentdist.Host
}

// New assembles a server on an open store.
func New(cfg config.Config, s *store.Store) *Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(newDBCollector(s))
	if cfg.CheckinInterval <= 0 {
		cfg.CheckinInterval = 60 * time.Second
	}
	srv := &Server{cfg: cfg, store: s, auth: auth.NewAuthenticator(s), registry: reg, hub: presence.New(s, cfg.MaxLongPolls)}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_agent_long_polls",
		Help: "Agents' long polls this replica holds open."}, func() float64 { held, _ := srv.hub.LongPolls(); return float64(held) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_agent_long_polls_max",
		Help: "The bound of long polls held at once (--max-long-polls); past it check-ins are answered at once."},
		func() float64 { _, bound := srv.hub.LongPolls(); return float64(bound) }))
	srv.ingest = s.NewIngester()
	srv.conns = newConns()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_http_connections",
		Help: "Open HTTP connections; past 90 % of the open-files limit, agent answers close theirs."},
		func() float64 { return float64(srv.conns.open.Load()) }))
	srv.agents = agentapi.New(agentapi.Config{Store: s, Presence: srv.hub, CheckinInterval: cfg.CheckinInterval, Ingester: srv.ingest,
		MaxInventories: cfg.MaxInventories, Crowded: srv.conns.Crowded})
	srv.api = api.New(api.Config{Store: s, Auth: srv.auth, TrustedProxies: cfg.TrustedProxies, OpenAPI: openapi.JSON,
		CheckinInterval: cfg.CheckinInterval, EndpointRemoved: srv.agents.Forget, Queued: srv.hub.Queued})

	mux := http.NewServeMux()
	mux.Handle("/api/", srv.api)
	srv.agentDist = newAgentHost(cfg)
	srv.agentDist.Register(mux)
	con, err := console.New(console.Config{Store: s, API: srv.api, CheckinInterval: cfg.CheckinInterval, BaseURL: cfg.BaseURL, Agents: srv.agentDist,
		SecureCookies: cfg.TLSCert != "" || strings.HasPrefix(cfg.BaseURL, "https://")})
	if err != nil {
		panic(err) // the embedded templates do not parse: a build defect, caught by every test
	}
	mux.Handle("/console/", con)
	mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusFound))
	mux.Handle("/agent/", srv.agents)
	mux.Handle("GET /healthz", httpx.Handle(func(w http.ResponseWriter, r *http.Request) error {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	}))
	mux.Handle("GET /readyz", httpx.Handle(srv.ready))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv.handler = httpx.Middleware(mux, httpx.NewMetrics(reg), "/agent/")
	return srv
}

// newAgentHost serves the agents of cfg.AgentDir (none when it is empty:
// servers assembled by tests without a data folder).
func newAgentHost(cfg config.Config) *agentdist.Host {
	st := &agentdist.Store{}
	if cfg.AgentDir != "" {
		var err error
		if st, err = agentdist.NewStore(cfg.AgentDir); err != nil {
			slog.Warn("agent downloads are off", "err", err)
			st = &agentdist.Store{}
		}
	}
	pk := &agentdist.Packager{Store: st, Server: cfg.BaseURL}
	if cfg.SignCert != "" {
		pk.Sign = &agentdist.Signer{CertFile: cfg.SignCert, KeyFile: cfg.SignKey}
	}
	return &agentdist.Host{Store: st, Packages: pk, BaseURL: cfg.BaseURL}
}

// AgentDist serves the agent's downloads and installers.
func (s *Server) AgentDist() *agentdist.Host { return s.agentDist }

// Close stops the server's writers after the HTTP server stopped: queued
// FlushCheckins writes the check-ins batched in memory now, not at the next
// flush (tests that read what agents just reported).
func (s *Server) FlushCheckins(ctx context.Context) error { return s.hub.Flush(ctx) }

// inventories are written first.
func (s *Server) Close() { s.ingest.Close() }

// Handler is the server's whole HTTP surface.
func (s *Server) Handler() http.Handler { return s.handler }

// Auth is the server's authenticator (tests use it to move the clock).
func (s *Server) Auth() *auth.Authenticator { return s.auth }

// API is the REST API (tests read its route table).
func (s *Server) API() *api.API { return s.api }

// Agents is the agent protocol's handler (tests move its clock).
func (s *Server) Agents() *agentapi.API { return s.agents }

// Presence is the replica's view of its agents.
func (s *Server) Presence() *presence.Hub { return s.hub }

func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		slog.Warn("readiness: database unreachable", "err", err)
		httpx.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database unreachable"})
		return nil
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

// RunWorkers runs the background loops until ctx ends.
func (s *Server) RunWorkers(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.auth.Run(ctx) })
	wg.Go(func() { s.hub.Run(ctx) })
	wg.Go(func() { s.sweepStatus(ctx) })
	wg.Go(func() { s.applyDueApprovals(ctx) })
	wg.Go(func() {
		(&worker.Scheduler{Store: s.store, Queued: s.hub.Queued, Interval: s.cfg.SchedulerInterval, CommandExpiry: s.cfg.CommandExpiry}).Run(ctx)
	})
	wg.Go(func() { s.runVulnWorkers(ctx) })
	wg.Go(func() { s.runAlertWorkers(ctx) })
	wg.Wait()
}

// Serve opens the store, bootstraps an empty database, and serves until
// ctx ends; then it stops accepting, lets requests finish and flushes.
func Serve(ctx context.Context, cfg config.Config, out io.Writer) error {
	s, err := store.Open(ctx, cfg.DB, cfg.DataDir, store.Options{MaxConns: cfg.MaxDBConns})
	if err != nil {
		return err
	}
	defer s.Close()
	boot, created, err := admin.BootstrapIfEmpty(ctx, s)
	if err != nil {
		return fmt.Errorf("first start: %w", err)
	}
	srv := New(cfg, s)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if created {
		printBootstrap(out, cfg, boot)
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
		ConnState:         srv.conns.track,
	}
	if cfg.PprofAddr != "" {
		stopPprof, err := servePprof(cfg.PprofAddr)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	workCtx, stopWork := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	workers.Go(func() { srv.RunWorkers(workCtx) })
	if !cfg.NoAgentBuild {
		workers.Go(func() {
			wd, _ := os.Getwd()
			srv.agentDist.Store.EnsureHostAgent(workCtx, wd, slog.Default())
		})
	}

	serveErr := make(chan error, 1)
	go func() {
		_, polls := srv.hub.LongPolls()
		slog.Info("patchd serving", "addr", ln.Addr().String(), "base_url", cfg.BaseURL, "db", s.Engine(), "max_long_polls", polls)
		if cfg.TLSCert != "" {
			serveErr <- hs.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
		} else {
			serveErr <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-serveErr:
		stopWork()
		workers.Wait()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	slog.Info("patchd shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Warn("shutdown", "err", err)
	}
	srv.Close()
	stopWork()
	workers.Wait()
	return nil
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

func printBootstrap(out io.Writer, cfg config.Config, b admin.Bootstrap) {
	fmt.Fprintf(out, `
patchd: first start. Organization %q was created. These secrets are shown once; keep them.

  API base URL:        %s/api/v1
  API client_id:       %s
  API client_secret:   %s   (role Administrator)
  Enrollment token:    %s   (for patchd-agent enroll and patchd-sim)

  Console:             %s/console/  (first sign-in: %s/console/setup with the client_id and secret above)

  Get a token:  curl -s -d grant_type=client_credentials -d client_id=%s -d client_secret=%s %s/api/oauth/token

`, b.Org.Name, cfg.BaseURL, b.Credential.ClientID, b.Credential.ClientSecret, b.EnrollToken.Token, cfg.BaseURL, cfg.BaseURL,
		b.Credential.ClientID, b.Credential.ClientSecret, cfg.BaseURL)
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
		if _, err := s.store.SweepStatus(ctx, now.Add(-3*s.cfg.CheckinInterval), now); err != nil && ctx.Err() == nil {
			slog.Warn("status sweep", "err", err)
		}
	}
}

// runVulnWorkers matches changed endpoints (and the fleet after a feed
// change) every VulnMatchInterval, and syncs the feeds every
// VulnSyncInterval when it is set; both under store leases, so any number
// of replicas share the work.
func (s *Server) runVulnWorkers(ctx context.Context) {
	holder := "replica-" + store.NewID()
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
