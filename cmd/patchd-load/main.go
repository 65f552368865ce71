// Command patchd-load runs a whole-system load scenario against running
// patchd replicas and prints a JSON report (see internal/load), or, as
// "patchd-load bare", serves a constant JSON body from a bare net/http
// handler: the machine's ceiling to compare patchd's throughput with.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/patchd/patchd/internal/load"
	"github.com/patchd/patchd/internal/toolmain"
)

func main() {
	toolmain.Run("patchd-load", run)
}

func run(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 0 && args[0] == "bare" {
		return bare(ctx, args[1:], stderr)
	}
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	lightGC()
	logger := log.New(stderr, "", log.LstdFlags)
	cfg.Logf = logger.Printf
	rep, err := load.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return toolmain.PrintJSON(stdout, rep)
}

// lightGC has the simulated fleet's collector run a quarter as often as
// Go's default (GOGC=400) unless GOGC says otherwise. The load generator
// shares the machine's cores with the server it measures; at the default,
// its collector takes a noticeable share of its CPU while a fleet enrolls
// (the inventories it builds, encodes and compresses are garbage at once),
// CPU the server would not get. Its heap is small: the fleet's state and the
// bodies in flight. The bare handler keeps the default: it is the ceiling
// patchd's own handlers are compared with, at the same setting.
func lightGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

func parseFlags(args []string, stderr io.Writer) (load.Config, error) {
	var c load.Config
	var servers, pids string
	fs := flag.NewFlagSet("patchd-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&servers, "server", os.Getenv("PATCHD_SERVER"), "comma-separated base `URLs` of the replicas (env PATCHD_SERVER)")
	fs.StringVar(&c.EnrollToken, "enroll-token", os.Getenv("PATCHD_ENROLL_TOKEN"), "enrollment `token` (env PATCHD_ENROLL_TOKEN)")
	fs.StringVar(&c.ClientID, "client-id", os.Getenv("PATCHD_CLIENT_ID"), "API client id (env PATCHD_CLIENT_ID)")
	fs.StringVar(&c.ClientSecret, "client-secret", os.Getenv("PATCHD_CLIENT_SECRET"), "API client secret (env PATCHD_CLIENT_SECRET)")
	fs.IntVar(&c.Endpoints, "endpoints", 1000, "simulated endpoints, spread over the servers")
	fs.DurationVar(&c.Duration, "duration", time.Minute, "steady phase after enrollment")
	fs.DurationVar(&c.Warmup, "warmup", 0, "run the fleet this long before the steady phase is measured")
	fs.DurationVar(&c.Checkin, "checkin", 0, "agents' check-in interval; 0 follows the server")
	fs.DurationVar(&c.Wait, "wait", -time.Second, "long-poll wait per check-in; negative is the simulator's default, 0 disables long polls")
	fs.IntVar(&c.Clients, "clients", 4, "concurrent API clients; 0 for none (the fleet's cost alone)")
	fs.DurationVar(&c.ActionEvery, "action-every", 5*time.Second, "each API client approves updates or starts an action at most this often")
	fs.IntVar(&c.FanOut, "fan-out", 500, "endpoints per action")
	fs.IntVar(&c.Concurrency, "concurrency", 64, "enrollments in progress at once per server")
	fs.Int64Var(&c.Seed, "seed", 1, "seed of the simulated fleet")
	fs.IntVar(&c.FirstIndex, "first-index", 0, "index of the first endpoint, to run several patchd-load processes on one seed")
	fs.StringVar(&c.StateDir, "state-dir", "", "`directory` of the simulator's state files, to resume the same fleet")
	fs.StringVar(&pids, "server-pid", "", "comma-separated process ids of the servers, for CPU and memory")
	fs.IntVar(&c.DBPID, "db-pid", 0, "process id of the database server (PostgreSQL's postmaster; its backends count with it), for its CPU")
	fs.StringVar(&c.DB, "db", "", "the servers' database (SQLite path or postgres:// URL), for its size")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	for s := range strings.SplitSeq(servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.Servers = append(c.Servers, strings.TrimRight(s, "/"))
		}
	}
	for s := range strings.SplitSeq(pids, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		pid, err := strconv.Atoi(s)
		if err != nil {
			return c, fmt.Errorf("server-pid %q: %w", s, err)
		}
		c.ServerPIDs = append(c.ServerPIDs, pid)
	}
	return c, nil
}

// groupsBody is the size and shape of GET /api/v1/groups on a small
// organization.
const groupsBody = `{"items":[{"id":"01J0000000000000000000000A","name":"All Windows","kind":"DYNAMIC","members":16667},` +
	`{"id":"01J0000000000000000000000B","name":"All Linux","kind":"DYNAMIC","members":16667}],"total":2}`

// bare serves groupsBody on every path until ctx ends.
func bare(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("patchd-load bare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9099", "listen `address`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	hs := &http.Server{Addr: *addr, ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, groupsBody)
	})}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
