// Command patchd-sim runs a fleet of simulated agents against a patchd
// server over the real agent protocol: for demos, tests and load.
//
//	patchd-sim --server URL --enroll-token T --endpoints N [--checkin 60s]
//	    [--failure-rate 0.05] [--seed 1] [--concurrency 64] [--state FILE]
//	    [--duration 0] [--speed 1] [--enroll-only]
//
// Progress goes to stderr; a JSON summary (sim.Stats) is printed on stdout
// at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/patchd/patchd/internal/toolmain"
	"github.com/patchd/patchd/sim"
)

func main() {
	toolmain.Run("patchd-sim", run)
}

type options struct {
	cfg        sim.Config
	duration   time.Duration
	enrollOnly bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("patchd-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.cfg.Server, "server", os.Getenv("PATCHD_SERVER"), "base `URL` of the patchd server (env PATCHD_SERVER)")
	fs.StringVar(&o.cfg.EnrollToken, "enroll-token", os.Getenv("PATCHD_ENROLL_TOKEN"), "enrollment `token` (env PATCHD_ENROLL_TOKEN)")
	fs.IntVar(&o.cfg.Endpoints, "endpoints", 100, "number of simulated endpoints")
	fs.DurationVar(&o.cfg.Checkin, "checkin", 0, "time between check-ins; 0 follows the server's checkinSeconds")
	fs.DurationVar(&o.cfg.Wait, "wait", -time.Second, "long-poll wait per check-in; negative means min(55s, check-in interval), 0 disables long polls")
	fs.Float64Var(&o.cfg.FailureRate, "failure-rate", 0.05, "chance that a command (or one update of it) fails")
	fs.Int64Var(&o.cfg.Seed, "seed", 1, "seed of the fleet: the same seed gives the same computers")
	fs.IntVar(&o.cfg.FirstIndex, "first-index", 0, "index of the first endpoint, to run several simulators on one seed")
	fs.IntVar(&o.cfg.Concurrency, "concurrency", 64, "simultaneous enrollments")
	fs.StringVar(&o.cfg.StatePath, "state", "", "`file` keeping endpoint ids and secrets, to resume the same fleet")
	fs.Float64Var(&o.cfg.Speed, "speed", 1, "divides command durations (1000 runs a 30 s update in 30 ms)")
	fs.BoolVar(&o.cfg.InsecureTLS, "insecure", false, "accept any TLS certificate")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long; 0 runs until interrupted")
	fs.BoolVar(&o.enrollOnly, "enroll-only", false, "stop once every endpoint is enrolled and has sent its inventory")
	fs.DurationVar(&o.cfg.ProgressEvery, "progress", 10*time.Second, "interval of progress lines")
	fs.StringVar(&o.cfg.ReleaseKey, "release-key", os.Getenv("PATCHD_RELEASE_KEY"),
		"release public `key` (base64) the agents trust: with it they update themselves to the check-in's agentTarget, verified as the real agent does (env PATCHD_RELEASE_KEY)")
	fs.Float64Var(&o.cfg.UpdateFailureRate, "update-failure-rate", 0, "share of endpoints whose self-update to a release fails (reported as updateFailure)")
	fs.DurationVar(&o.cfg.ReleaseCheckEvery, "release-check", 15*time.Minute, "how often an agent reads the published release while its target stays the same")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := log.New(stderr, "", log.LstdFlags)
	o.cfg.Logf = logger.Printf

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}

	fleet, err := sim.New(o.cfg)
	if err != nil {
		return err
	}
	logger.Printf("patchd-sim: %d endpoints against %s (seed %d)", o.cfg.Endpoints, o.cfg.Server, o.cfg.Seed)
	if o.enrollOnly {
		err = fleet.Enroll(ctx)
	} else {
		err = fleet.Run(ctx)
	}
	if encErr := toolmain.PrintJSON(stdout, fleet.Stats()); encErr != nil && err == nil {
		err = encErr
	}
	return err
}
