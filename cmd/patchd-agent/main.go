// Command patchd-agent is the agent of patchd on a managed computer:
//
//	patchd-agent enroll --server URL --token TOKEN [--ca-file F] [--insecure-http] [--state DIR]
//	patchd-agent run [--state DIR]
//	patchd-agent install [--state DIR] [--dry-run]
//	patchd-agent uninstall [--state DIR] [--keep-state] [--dry-run]
//	patchd-agent inventory
//	patchd-agent version
//
// Every command takes --debug to log at debug level too.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/patchd/patchd/agent"
	"github.com/patchd/patchd/agent/collect"
	"github.com/patchd/patchd/agent/execute"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

var usage = `usage:
  patchd-agent enroll --server URL --token TOKEN [--ca-file F] [--insecure-http] [--release-key KEY] [--state DIR]
  patchd-agent run [--state DIR] [--update-grace 5m] [--release-check 15m]
  patchd-agent install [--state DIR] [--dry-run]
      copies this program to ` + agent.InstallPath(runtime.GOOS) + `, registers
      and (re)starts the service (systemd, OpenRC, SysV init, launchd, Windows)
  patchd-agent uninstall [--state DIR] [--keep-state] [--dry-run]
  patchd-agent inventory
  patchd-agent version
every command takes --debug to log at debug level too
`

// exitUnauthorized is the exit code after a 401: the systemd unit's
// RestartPreventExitStatus.
const exitUnauthorized = 3

// exitNoServiceManager is install's exit code when this computer has no
// service manager the agent knows (nothing was changed): install.sh tells
// it from other failures.
const exitNoServiceManager = 4

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var level slog.LevelVar
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: &level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fs := flag.NewFlagSet("patchd-agent "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	stateDir := fs.String("state", agent.DefaultStateDir(), "folder of the agent's state")
	debug := fs.Bool("debug", false, "log at debug level too (e.g. the collectors whose source is absent)")
	parse := func() bool {
		if fs.Parse(args[1:]) != nil {
			return false
		}
		if *debug {
			level.Set(slog.LevelDebug)
		}
		return true
	}
	var err error
	switch args[0] {
	case "enroll":
		server := fs.String("server", "", "address of the patchd server, e.g. https://patchd.example.com")
		token := fs.String("token", "", "enrollment token, as printed by the server (<token>.<CA SHA-256> pins the server's CA)")
		caFile := fs.String("ca-file", "", "PEM certificate of a private CA to trust besides the system store (with a pinned token: must be the pinned CA)")
		insecure := fs.Bool("insecure-http", false, "allow a plain http:// server that is not on loopback (recorded, and shown on the endpoint)")
		releaseKey := fs.String("release-key", "", "release public key (base64 Ed25519, patchd admin agent keygen) whose signed agents this agent updates itself to, besides the built-in one")
		if !parse() {
			return 2
		}
		var st *agent.State
		st, err = agent.Enroll(ctx, agent.EnrollConfig{Server: *server, Token: *token, StateDir: *stateDir, CAFile: *caFile, InsecureHTTP: *insecure, ReleaseKey: *releaseKey})
		if err == nil {
			fmt.Fprintf(stdout, "enrolled as endpoint %s; state in %s\n", st.EndpointID, filepath.Join(*stateDir, agent.StateFileName))
		}
	case "run":
		grace := fs.Duration("update-grace", agent.DefaultUpdateGrace, "after a self-update, how long the new agent has to check in before the old one is put back")
		releaseEvery := fs.Duration("release-check", agent.DefaultReleaseCheckEvery, "while the server asks for the same agent version, how often the published release is read")
		if !parse() {
			return 2
		}
		if *releaseEvery < time.Second {
			fmt.Fprintln(stderr, "--release-check must be at least 1s")
			return 2
		}
		if *grace < 10*time.Second {
			fmt.Fprintln(stderr, "--update-grace must be at least 10s")
			return 2
		}
		runAgent := func(ctx context.Context) error {
			// PATCHD_AGENT_SERVICE_ROOT: where the service definition
			// install wrote is looked for ("/"; tests point it elsewhere).
			return agent.Run(ctx, agent.Config{StateDir: *stateDir, Logger: log, UpdateGrace: *grace, ReleaseCheckEvery: *releaseEvery,
				ServiceRoot: os.Getenv("PATCHD_AGENT_SERVICE_ROOT")})
		}
		var handled bool
		if handled, err = agent.RunAsService(runAgent); !handled && err == nil {
			err = runAgent(ctx)
		}
		if errors.Is(err, agent.ErrUninstalled) {
			log.Info("uninstalled")
			err = nil
		}
		if errors.Is(err, agent.ErrUnauthorized) {
			// Restarting cannot help until someone enrolls again: the
			// systemd unit does not restart on this code, and launchd
			// restarts only on a failing exit.
			fmt.Fprintln(stderr, "patchd-agent:", err)
			if runtime.GOOS == "darwin" {
				return 0
			}
			return exitUnauthorized
		}
	case "install", "uninstall":
		dry := fs.Bool("dry-run", false, "print what would be done, change nothing")
		keep := fs.Bool("keep-state", false, "uninstall: keep the enrollment (the state folder)")
		if !parse() {
			return 2
		}
		var plan agent.Plan
		if args[0] == "install" {
			// Without a service manager this fails before writing anything.
			if plan, err = agent.LocalInstallPlan(*stateDir); err != nil {
				break
			}
		} else {
			plan = agent.LocalUninstallPlan(*stateDir, *keep, true)
		}
		if *dry {
			plan.Print(stdout)
			break
		}
		err = plan.Apply(ctx, execute.ExecRunner{}, log)
	case "inventory":
		if !parse() {
			return 2
		}
		inv := collect.Inventory(ctx, collect.Options{Logger: log})
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(inv)
	case agent.RemovalCommand:
		// Started by an agent whose endpoint the server removed (not for
		// people): removes it from outside its service, stopping it last.
		if !parse() {
			return 2
		}
		err = agent.FinishRemoval(ctx, *stateDir, log)
	case "update-watchdog":
		// Started by a self-update from the old binary (not for people).
		pid := fs.Int("pid", 0, "the updated agent's process")
		if !parse() {
			return 2
		}
		var rolledBack bool
		rolledBack, err = agent.Watchdog(ctx, *stateDir, *pid, log)
		if err == nil && rolledBack {
			fmt.Fprintln(stdout, "rolled back")
		}
	case "version":
		fmt.Fprintf(stdout, "patchd-agent %s %s/%s\n", agent.Version, runtime.GOOS, runtime.GOARCH)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "unknown command %q\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "patchd-agent:", err)
		if errors.Is(err, agent.ErrNoServiceManager) {
			return exitNoServiceManager
		}
		return 1
	}
	return 0
}
