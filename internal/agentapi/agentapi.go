// Package agentapi serves the agent protocol v1 under /agent/v1
// (docs/design/agent-protocol.md): enrollment, check-in with long poll,
// inventory, and command status. The check-in is the hottest path of the
// system: a cached secret lookup and an in-memory update, plus a database
// read only when the endpoint may have commands.
package agentapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/clock"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/pool"
	"github.com/patchd/patchd/internal/presence"
	"github.com/patchd/patchd/internal/store"
)

// agentTTL bounds how long a replica trusts its cached view of an agent
// secret. It is several check-in intervals long, so that a check-in is
// served from memory; the replica that removes an endpoint forgets it at
// once, another replica tells the agent to uninstall within agentTTL.
// Each entry lasts between half of it and all of it, at random: a fleet
// that checked in together (after a restart, all in its first minute) is
// read again spread over five minutes, not all in one (a whole fleet read
// again within one minute is a burst of database reads the check-ins wait
// behind; docs/design/notes.md).
const agentTTL = 10 * time.Minute

// sqliteAgentTTL is agentTTL on SQLite, where one process serves the
// database: every change to an agent's secret or endpoint (re-enrollment,
// removal, a stored inventory) goes through this API, which forgets or
// updates the entry at once, so the entry lasts only as a safety net.
// Reading an agent again is costly (the reading connection's page cache
// is dropped at every commit), and with entries of five to ten minutes a
// large fleet would be read again many times a second.
const sqliteAgentTTL = time.Hour

// ttl is how long a cached agent lasts at most on this engine.
func (a *API) ttl() time.Duration {
	if a.store.Engine() == store.SQLite {
		return sqliteAgentTTL
	}
	return agentTTL
}

// Config holds what the agent API needs.
type Config struct {
	Store    *store.Store
	Presence *presence.Hub
	// CheckinInterval is what agents are told to use.
	CheckinInterval time.Duration
	// ScanInterval is how often agents are told to refresh their package
	// metadata before an inventory (DefaultScanInterval when zero).
	ScanInterval time.Duration
	// Ingester stores inventories in batches; nil stores each on its own.
	Ingester *store.Ingester
	// Enrolled is called after an endpoint enrolled for the first time.
	Enrolled func(ctx context.Context, orgID, endpointID string)
	// Crowded tells that the server holds nearly as many connections as it
	// may: answers then close their connection (nil: never).
	Crowded func() bool
	// ClientIP answers the agent's address as the REST API reads it (behind
	// trusted proxies, from X-Forwarded-For); nil: the peer's address. A
	// re-enrollment records it in the Audit Trail.
	ClientIP func(*http.Request) string
	// MaxInventories bounds the inventories received and not yet stored at
	// once (default DefaultMaxInventories); past it an inventory is refused
	// with 503 and Retry-After.
	MaxInventories int
	// Releases answers the signed agent releases published (nil: none is
	// known). Under the policy "latest" an agent whose version is not
	// older than every release for its operating system is not asked to
	// update (it would refuse the release as a downgrade).
	Releases func(ctx context.Context) ([]agentproto.Release, error)
}

// DefaultMaxInventories is the default bound of inventories in progress: a
// decoded inventory holds a few hundred kilobytes until the database has
// stored it, so when inventories arrive faster than the database stores
// them (a fleet enrolling, a slow disk) the queue would grow without bound.
const DefaultMaxInventories = 128

// DefaultScanInterval is how often agents refresh their package metadata
// when the server is not told otherwise.
const DefaultScanInterval = 4 * time.Hour

// inventoryRetryAfter is the Retry-After of a refused inventory, in seconds.
const inventoryRetryAfter = 30

// API is the agent protocol's handler.
type API struct {
	cfg   Config
	store *store.Store
	hub   *presence.Hub
	mux   *http.ServeMux
	// routes are the protocol's calls, also routed on the server's mux.
	routes []route
	clock  clock.Clock

	mu     sync.RWMutex
	agents map[string]*cachedAgent
	// targets caches each organization's agentTarget for policyTTL.
	targets       map[string]cachedTarget
	loadingTarget sync.Mutex
	// releases caches the published releases' versions by operating
	// system for policyTTL (releasesAt: when they were read).
	releases   map[string][]string
	releasesAt time.Time
	// inventories holds a slot per inventory received and not yet stored.
	inventories chan struct{}
	// decoding holds a slot per inventory document being decoded: one
	// fewer than the processors Go runs on (at least one), so that
	// uploads arriving together never take every processor from the
	// database writer that stores them (see decodeInventory).
	decoding chan struct{}
	// decodeWaits counts the documents waiting for (or taking) a
	// decoding slot.
	decodeWaits atomic.Int32
}

// policyTTL bounds how long a replica answers a cached agent update policy.
const policyTTL = 30 * time.Second

type cachedTarget struct {
	target  string
	rollout *store.AgentRollout // a staged policy's rings
	loaded  time.Time
}

func (c cachedTarget) of(endpointID string) string {
	if c.rollout != nil {
		return c.rollout.Target(endpointID)
	}
	return c.target
}

// agentTarget is the endpoint's agentTarget ("" leaves its agent as it
// is): its organization's policy, under a staged policy its ring's state,
// read (and the rollout moved on) at most every policyTTL.
func (a *API) agentTarget(ctx context.Context, orgID, endpointID string) (string, error) {
	now := a.now()
	a.mu.RLock()
	c, ok := a.targets[orgID]
	a.mu.RUnlock()
	if ok && now.Sub(c.loaded) < policyTTL {
		return c.of(endpointID), nil
	}
	// One load at a time: when the cache runs out under a fleet checking
	// in, one check-in reads the policy (and evaluates the rollout), the
	// others take its result.
	a.loadingTarget.Lock()
	defer a.loadingTarget.Unlock()
	a.mu.RLock()
	c, ok = a.targets[orgID]
	a.mu.RUnlock()
	if ok && now.Sub(c.loaded) < policyTTL {
		return c.of(endpointID), nil
	}
	p, err := a.store.AgentPolicyOf(ctx, orgID)
	if err != nil {
		return "", err
	}
	c = cachedTarget{target: p.Target(), loaded: now}
	if p.Policy == store.AgentPolicyStaged {
		if c.rollout, err = a.store.AgentRolloutOf(ctx, orgID, now); err != nil {
			return "", err
		}
	}
	a.mu.Lock()
	a.targets[orgID] = c
	a.mu.Unlock()
	return c.of(endpointID), nil
}

// behindRelease tells whether an agent of version on platform is older
// than a release published for its operating system, so that "latest"
// may move it: an agent as new as every release, or newer (a test build,
// a release withdrawn since), is not told to update down. An agent whose
// version is unknown or not a semantic version is told, and decides.
func (a *API) behindRelease(ctx context.Context, platform, version string) bool {
	if a.cfg.Releases == nil || agentproto.CheckVersion(version) != nil {
		return true
	}
	now := a.now()
	a.mu.RLock()
	rel, at := a.releases, a.releasesAt
	a.mu.RUnlock()
	if rel == nil || now.Sub(at) >= policyTTL {
		list, err := a.cfg.Releases(ctx)
		if err != nil {
			slog.Warn("agent releases not read; agents are told the policy's target as it is", "err", err)
			return true
		}
		rel = map[string][]string{}
		for _, r := range list {
			rel[r.OS] = append(rel[r.OS], r.Version)
		}
		a.mu.Lock()
		a.releases, a.releasesAt = rel, now
		a.mu.Unlock()
	}
	if platform == "macos" {
		platform = "darwin"
	}
	for _, v := range rel[platform] {
		if c, err := agentproto.CompareVersions(v, version); err != nil || c > 0 {
			return true
		}
	}
	return false
}

type cachedAgent struct {
	store.Agent
	expires time.Time
}

// New builds the agent API.
func New(cfg Config) *API {
	if cfg.MaxInventories <= 0 {
		cfg.MaxInventories = DefaultMaxInventories
	}
	a := &API{cfg: cfg, store: cfg.Store, hub: cfg.Presence, mux: http.NewServeMux(), agents: map[string]*cachedAgent{}, targets: map[string]cachedTarget{},
		inventories: make(chan struct{}, cfg.MaxInventories), decoding: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))}
	a.routes = []route{
		{"POST " + agentproto.PathEnroll, httpx.Handle(a.enroll)},
		{"POST " + agentproto.PathCheckin, httpx.Handle(a.checkin)},
		{"PUT " + agentproto.PathInventory, httpx.Handle(a.inventory)},
		{"POST /agent/v1/commands/{id}/status", httpx.Handle(a.commandStatus)},
		{"POST " + agentproto.PathUninstalled, httpx.Handle(a.uninstalled)},
		{"POST " + agentproto.PathStopping, httpx.Handle(a.stopping)},
	}
	for _, rt := range a.routes {
		a.mux.Handle(rt.pattern, rt.h)
	}
	a.mux.Handle("/agent/", httpx.Handle(func(w http.ResponseWriter, r *http.Request) error {
		return httpx.Errorf(http.StatusNotFound, "not_found", "no agent call at "+r.URL.Path)
	}))
	return a
}

// route is a call of the agent protocol.
type route struct {
	pattern string
	h       http.Handler
}

// Register routes the agent protocol on the server's mux: each call's
// pattern and "/agent/" for the paths none matches (ServeHTTP), so that a
// check-in is matched once, by the server's mux (see api.Register).
func (a *API) Register(mux *http.ServeMux) {
	for _, rt := range a.routes {
		h := rt.h
		mux.Handle(rt.pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a.closeIfCrowded(w)
			h.ServeHTTP(w, r)
		}))
	}
	mux.Handle("/agent/", a)
}

// ServeHTTP serves /agent/. When the server is crowded with connections,
// the answer closes its connection: agents come back after their interval,
// and an idle kept-alive connection per agent is what would exhaust the
// server's descriptors.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.closeIfCrowded(w)
	a.mux.ServeHTTP(w, r)
}

func (a *API) closeIfCrowded(w http.ResponseWriter) {
	if a.cfg.Crowded != nil && a.cfg.Crowded() {
		w.Header().Set("Connection", "close")
	}
}

// SetClock replaces the clock (tests), the presence watermark's too: it
// is compared with the check-ins' times.
func (a *API) SetClock(now func() time.Time) {
	a.clock.Set(now)
	if a.hub != nil {
		a.hub.SetClock(now)
	}
}

func (a *API) now() time.Time { return a.clock.Now() }

// Forget drops the cached view of an endpoint's agent (it was removed here).
func (a *API) Forget(endpointID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, c := range a.agents {
		if c.EndpointID == endpointID {
			delete(a.agents, k)
		}
	}
}

func errInvalidAgent() error {
	return httpx.Errorf(http.StatusUnauthorized, "invalid_agent", "unknown or wrong agent secret").
		WithHeader("WWW-Authenticate", `Bearer realm="patchd-agent"`)
}

// agent resolves the request's agent secret.
func (a *API) agent(r *http.Request) (*cachedAgent, string, error) {
	h := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return nil, "", errInvalidAgent()
	}
	hash := auth.HashSecret(strings.TrimSpace(secret))
	now := a.now()
	a.mu.RLock()
	c, ok := a.agents[hash]
	a.mu.RUnlock()
	if ok && now.Before(c.expires) {
		return c, hash, nil
	}
	ag, err := a.store.AgentBySecret(r.Context(), hash)
	if errors.Is(err, dberr.ErrNotFound) {
		a.mu.Lock()
		delete(a.agents, hash)
		a.mu.Unlock()
		return nil, "", errInvalidAgent()
	}
	if err != nil {
		return nil, "", err
	}
	ttl := a.ttl()
	c = &cachedAgent{Agent: ag, expires: now.Add(ttl - rand.N(ttl/2))}
	a.mu.Lock()
	a.agents[hash] = c
	a.mu.Unlock()
	return c, hash, nil
}

func (a *API) setInventoryHash(secretHash, invHash string) {
	a.mu.Lock()
	if c, ok := a.agents[secretHash]; ok {
		copied := *c
		copied.InventoryHash = invHash
		a.agents[secretHash] = &copied
	}
	a.mu.Unlock()
}

// readBody reads a possibly gzip-compressed body of at most limit bytes
// once decompressed into buf; over it: 413. Callers read into a pooled
// buffer, by a pooled gzip reader (package pool).
func readBody(w http.ResponseWriter, r *http.Request, limit int64, buf *bytes.Buffer) error {
	if r.ContentLength > limit {
		// Refused before a byte of it is read.
		return httpx.Errorf(http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the body exceeds %d bytes", limit))
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, limit)
	switch strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))) {
	case "", "identity":
		if r.ContentLength > 0 {
			// Room for the body and for the read that finds its end.
			buf.Grow(int(r.ContentLength) + bytes.MinRead)
		}
	case "gzip":
		zr, err := pool.Gunzip(body)
		if err != nil {
			return httpx.Errorf(http.StatusBadRequest, "invalid_request", "the body is not valid gzip")
		}
		defer pool.PutGunzip(zr)
		body = zr
	default:
		return httpx.Errorf(http.StatusUnsupportedMediaType, "unsupported_encoding", "only gzip bodies are accepted")
	}
	_, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig), int64(buf.Len()) > limit:
		return httpx.Errorf(http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the body exceeds %d bytes", limit))
	case err != nil:
		return httpx.Errorf(http.StatusBadRequest, "invalid_request", "the body could not be read: "+err.Error())
	}
	return nil
}

// decode reads the body (see readBody) and decodes it into v.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	buf := pool.Buffer()
	defer pool.PutBuffer(buf)
	if err := readBody(w, r, limit, buf); err != nil {
		return err
	}
	return unmarshal(buf.Bytes(), v)
}

// unmarshal decodes a body; the agent protocol answers every invalid
// document with 400.
func unmarshal(data []byte, v any) error {
	err := httpx.UnmarshalBody(data, v)
	var e *httpx.Error
	if errors.As(err, &e) && e.Status == http.StatusUnprocessableEntity {
		e.Status, e.Code = http.StatusBadRequest, "invalid_request"
	}
	return err
}

// enroll is POST /agent/v1/enroll.
func (a *API) enroll(w http.ResponseWriter, r *http.Request) error {
	var req agentproto.EnrollRequest
	if err := decode(w, r, agentproto.MaxOtherBytes, &req); err != nil {
		return err
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"enrollToken", req.EnrollToken}, {"machineUid", req.MachineUID},
		{"hostname", req.Hostname}, {"platform", req.Platform}} {
		if strings.TrimSpace(f.v) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return httpx.Errorf(http.StatusBadRequest, "invalid_request", "missing fields: "+strings.Join(missing, ", "))
	}
	switch req.Platform {
	case "windows", "linux", "macos":
	default:
		return httpx.Errorf(http.StatusBadRequest, "invalid_request", "platform must be windows, linux or macos")
	}
	if err := checkEnroll(&req); err != nil {
		return err
	}
	now := a.now()
	errToken := httpx.Errorf(http.StatusUnauthorized, "invalid_enroll_token", "unknown, revoked or expired enrollment token")
	// Tokens are printed "<token>.<pin>": the pin is for the agent, which
	// checked it before sending; the token alone is stored (as a hash).
	token, _ := agentproto.SplitEnrollToken(req.EnrollToken)
	tokenID, orgID, err := a.store.ValidEnrollToken(r.Context(), auth.HashSecret(token), now)
	if errors.Is(err, dberr.ErrNotFound) {
		return errToken
	}
	if err != nil {
		return err
	}
	secret := auth.NewSecret(auth.PrefixAgentSecret)
	id, created, err := a.store.EnrollEndpoint(r.Context(), store.Enrollment{OrgID: orgID, MachineUID: strings.TrimSpace(req.MachineUID),
		Hostname: strings.TrimSpace(req.Hostname), Platform: req.Platform, OS: req.OS, OSVersion: req.OSVersion, Arch: req.Arch,
		AgentVersion: req.AgentVersion, SecretHash: auth.HashSecret(secret), TokenID: tokenID, ClientAddr: a.clientIP(r),
		InsecureChannel: req.InsecureChannel}, now)
	if errors.Is(err, dberr.ErrNotFound) {
		return errToken // revoked or expired since it was looked up
	}
	if err != nil {
		return err
	}
	if !created {
		a.Forget(id)
	}
	if created && a.cfg.Enrolled != nil {
		a.cfg.Enrolled(r.Context(), orgID, id)
	}
	httpx.WriteJSON(w, http.StatusOK, agentproto.EnrollResponse{EndpointID: id, AgentSecret: secret, CheckinSeconds: a.checkinSeconds(),
		RefreshSeconds: a.refreshSeconds()})
	return nil
}

func (a *API) clientIP(r *http.Request) string {
	if a.cfg.ClientIP != nil {
		return a.cfg.ClientIP(r)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (a *API) checkinSeconds() int {
	s := int(a.cfg.CheckinInterval / time.Second)
	if s < 1 {
		s = 60
	}
	return s
}

func (a *API) refreshSeconds() int {
	d := a.cfg.ScanInterval
	if d <= 0 {
		d = DefaultScanInterval
	}
	return max(int(d/time.Second), 1)
}

// checkin is POST /agent/v1/checkin?wait=SECONDS.
func (a *API) checkin(w http.ResponseWriter, r *http.Request) error {
	ag, secretHash, err := a.agent(r)
	if err != nil {
		return err
	}
	if ag.Removed {
		told, err := a.store.TellUninstall(r.Context(), secretHash, a.now())
		if err != nil {
			return err
		}
		if !told {
			return errInvalidAgent()
		}
		a.mu.Lock()
		delete(a.agents, secretHash)
		a.mu.Unlock()
		httpx.WriteJSON(w, http.StatusOK, agentproto.CheckinResponse{Commands: []agentproto.Command{}, CheckinSeconds: a.checkinSeconds(), Uninstall: true})
		return nil
	}
	wait := 0
	if s := httpx.QueryValue(r, "wait"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return httpx.Errorf(http.StatusBadRequest, "invalid_request", "wait must be a number of seconds from 0 to 60")
		}
		wait = min(n, agentproto.MaxWaitSeconds)
	}
	var req agentproto.CheckinRequest
	if err := decode(w, r, agentproto.MaxOtherBytes, &req); err != nil {
		return err
	}
	if err := checkCheckin(&req); err != nil {
		return err
	}
	if f := req.UpdateFailure; f != nil {
		// Written before the answer: the agent sends it until a check-in
		// is answered, so an answered report is never lost.
		at := f.At
		if at.IsZero() || at.After(a.now()) {
			at = a.now()
		}
		if err := a.store.RecordAgentUpdateFailure(r.Context(), ag.OrgID, ag.EndpointID, f.Version, f.Reason, at, a.now()); err != nil {
			return err
		}
	}
	seen := store.Checkin{EndpointID: ag.EndpointID, At: a.now(), LastBootAt: req.LastBootAt, PendingReboot: req.PendingReboot,
		User: req.User, IPAddresses: req.IPAddresses, AgentVersion: req.AgentVersion}
	a.hub.Seen(seen)
	resp := agentproto.CheckinResponse{Commands: []agentproto.Command{}, CheckinSeconds: a.checkinSeconds(),
		InventoryWanted: ag.InventoryHash == "" || req.InventoryHash != ag.InventoryHash, RefreshSeconds: a.refreshSeconds()}
	cmds, scan, err := a.pending(r.Context(), ag.EndpointID)
	if err != nil {
		return err
	}
	if len(cmds) == 0 && !scan && wait > 0 && !resp.InventoryWanted {
		woken, err := a.hub.Wait(r.Context(), ag.EndpointID, time.Duration(wait)*time.Second)
		if errors.Is(err, presence.ErrTooManyLongPolls) {
			// The agent comes back after its interval: holding its idle
			// connection until then would cost the descriptor the bound saves.
			w.Header().Set("Connection", "close")
		}
		if woken {
			if cmds, scan, err = a.pending(r.Context(), ag.EndpointID); err != nil {
				return err
			}
		}
		if r.Context().Err() != nil {
			return nil
		}
		seen.At = a.now()
		a.hub.Seen(seen)
	}
	if cmds != nil {
		resp.Commands = cmds
	}
	resp.ScanNow = scan
	if resp.AgentTarget, err = a.agentTarget(r.Context(), ag.OrgID, ag.EndpointID); err != nil {
		return err
	}
	if resp.AgentTarget == "latest" && !a.behindRelease(r.Context(), ag.Platform, req.AgentVersion) {
		resp.AgentTarget = ""
	}
	httpx.WriteJSON(w, http.StatusOK, resp)
	return nil
}

// pending answers the endpoint's pending commands and whether a "scan
// now" waits for it (taken: the next check-in will not see it again).
func (a *API) pending(ctx context.Context, endpointID string) ([]agentproto.Command, bool, error) {
	if !a.hub.MayHavePending(endpointID) {
		return nil, false, nil
	}
	cmds, err := a.store.PendingCommands(ctx, endpointID, a.now())
	if err != nil {
		return nil, false, err
	}
	scan, err := a.store.TakeScanRequest(ctx, endpointID)
	if err != nil {
		return nil, false, err
	}
	if len(cmds) == 0 {
		a.hub.NoPending(endpointID)
	}
	return cmds, scan, nil
}

// inventory is PUT /agent/v1/inventory.
func (a *API) inventory(w http.ResponseWriter, r *http.Request) error {
	ag, secretHash, err := a.agent(r)
	if err != nil {
		return err
	}
	if ag.Removed {
		return errInvalidAgent()
	}
	select {
	case a.inventories <- struct{}{}:
		defer func() { <-a.inventories }()
	default:
		// Refused before the body is read: nothing is stored, the agent
		// sends it again later (its next check-in still asks for it).
		w.Header().Set("Retry-After", strconv.Itoa(inventoryRetryAfter))
		w.Header().Set("Connection", "close") // it is back after Retry-After
		return httpx.Errorf(http.StatusServiceUnavailable, "busy",
			"the server is storing other inventories; send this one again after Retry-After seconds")
	}
	buf := pool.Buffer()
	defer pool.PutBuffer(buf)
	if err := readBody(w, r, agentproto.MaxInventoryBytes, buf); err != nil {
		return err
	}
	raw := buf.Bytes()
	n, err := a.decodeInventory(r.Context(), raw, ag)
	var problem *inventory.Problem
	if errors.As(err, &problem) {
		return httpx.Errorf(http.StatusBadRequest, "invalid_inventory", problem.Error())
	}
	if err != nil {
		return err
	}
	hash := strings.TrimSpace(r.Header.Get(agentproto.HeaderInventoryHash))
	if hash == "" || len(hash) > 128 {
		sum := sha256.Sum256(raw)
		hash = hex.EncodeToString(sum[:])
	}
	save := a.store.ReplaceInventory
	if a.cfg.Ingester != nil {
		save = a.cfg.Ingester.Submit
	}
	if err := save(r.Context(), ag.OrgID, ag.EndpointID, n, hash, a.now()); err != nil {
		if errors.Is(err, dberr.ErrNotFound) {
			return errInvalidAgent()
		}
		return err
	}
	a.setInventoryHash(secretHash, hash)
	httpx.WriteJSON(w, http.StatusOK, agentproto.OK{OK: true})
	return nil
}

// decodeInventory decodes and checks an inventory document once one of
// the decoding slots is free. Decoding is most of the CPU an upload costs
// before its store; when a fleet enrolls, uploads arrive together, and on
// SQLite one writer stores them all: with every processor decoding, the
// writer waited for a processor, and the fleet waited for the writer.
// The body was read before: a slow client never holds a slot.
func (a *API) decodeInventory(ctx context.Context, raw []byte, ag *cachedAgent) (inventory.Normalized, error) {
	a.decodeWaits.Add(1)
	select {
	case a.decoding <- struct{}{}:
		a.decodeWaits.Add(-1)
	case <-ctx.Done():
		a.decodeWaits.Add(-1)
		return inventory.Normalized{}, ctx.Err()
	}
	defer func() { <-a.decoding }()
	// The datasets are kept as the JSON they came in: they are stored as
	// JSON, and decoding their rows into maps to encode them again was a
	// fifth of the server's work for an inventory.
	var doc struct {
		agentproto.Inventory
		Datasets map[string]json.RawMessage `json:"datasets"`
	}
	if err := unmarshal(raw, &doc); err != nil {
		return inventory.Normalized{}, err
	}
	return inventory.CheckRaw(&doc.Inventory, doc.Datasets, ag.Platform, ag.Distro, a.now())
}

// uninstalled is POST /agent/v1/uninstalled (a patchd addition): the agent
// of a removed endpoint, told so by a check-in, reports what its removal
// did; it is written to the Audit Trail once (endpoint.uninstalled), and
// every later call is 401 as for any removed endpoint. An endpoint that
// was not removed is 409.
func (a *API) uninstalled(w http.ResponseWriter, r *http.Request) error {
	ag, secretHash, err := a.agent(r)
	if err != nil {
		return err
	}
	if !ag.Removed {
		return httpx.Errorf(http.StatusConflict, "not_removed", "this endpoint was not removed: an agent reports its removal only when a check-in told it to uninstall")
	}
	var req agentproto.UninstalledReport
	if err := decode(w, r, agentproto.MaxOtherBytes, &req); err != nil {
		return err
	}
	if err := checkText("manager", req.Manager, 64); err != nil {
		return err
	}
	if len(req.Problems) > 100 {
		return invalid("problems lists more than 100 entries")
	}
	for i, p := range req.Problems {
		if err := checkText(fmt.Sprintf("problems[%d]", i), p, 1000); err != nil {
			return err
		}
	}
	recorded, err := a.store.RecordUninstalled(r.Context(), secretHash, store.UninstallReport{Complete: req.Complete, Manager: req.Manager, Problems: req.Problems}, a.now())
	if err != nil {
		return err
	}
	a.mu.Lock()
	delete(a.agents, secretHash)
	a.mu.Unlock()
	if !recorded {
		return errInvalidAgent()
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// stopping is POST /agent/v1/stopping (a patchd addition): the agent says
// it stops, and its endpoint shows disconnected at once instead of after
// three check-in intervals, until its next check-in (store.
// RecordAgentStopping). Answered 204; the secret of a removed endpoint, or
// one replaced by a later enrollment, is 401 like any unknown one, and
// nothing is recorded.
func (a *API) stopping(w http.ResponseWriter, r *http.Request) error {
	ag, secretHash, err := a.agent(r)
	if err != nil {
		return err
	}
	if ag.Removed {
		return errInvalidAgent()
	}
	var req agentproto.StoppingReport
	if err := decode(w, r, agentproto.MaxOtherBytes, &req); err != nil {
		return err
	}
	if err := checkText("reason", req.Reason, agentproto.MaxStoppingReason); err != nil {
		return err
	}
	recorded, err := a.store.RecordAgentStopping(r.Context(), secretHash, a.now())
	if err != nil {
		return err
	}
	if !recorded {
		a.mu.Lock()
		delete(a.agents, secretHash)
		a.mu.Unlock()
		return errInvalidAgent()
	}
	slog.Debug("agent stopping", "endpoint", ag.EndpointID, "reason", req.Reason)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// commandStatus is POST /agent/v1/commands/{id}/status.
func (a *API) commandStatus(w http.ResponseWriter, r *http.Request) error {
	ag, _, err := a.agent(r)
	if err != nil {
		return err
	}
	if ag.Removed {
		return errInvalidAgent()
	}
	var req agentproto.CommandStatus
	if err := decode(w, r, agentproto.MaxOtherBytes, &req); err != nil {
		return err
	}
	switch req.Status {
	case agentproto.StatusRunning, agentproto.StatusSuccess, agentproto.StatusFailed:
	default:
		return httpx.Errorf(http.StatusBadRequest, "invalid_request", "status must be RUNNING, SUCCESS or FAILED")
	}
	err = a.store.SetCommandStatus(r.Context(), ag.EndpointID, r.PathValue("id"),
		store.CommandStatus{Status: req.Status, Result: req.Result, ExitCode: req.ExitCode, At: req.At}, a.now())
	switch {
	case errors.Is(err, dberr.ErrNotFound):
		return httpx.Errorf(http.StatusNotFound, "not_found", "no such command for this endpoint")
	case errors.Is(err, store.ErrStatusConflict):
		return httpx.Errorf(http.StatusConflict, "status_conflict", strings.TrimPrefix(err.Error(), "store: "))
	case err != nil:
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, agentproto.OK{OK: true})
	return nil
}
