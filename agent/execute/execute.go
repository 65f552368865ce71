// Package execute carries out the commands the server hands to
// patchd-agent: RUN_SCRIPT, DEPLOY_UPDATES, REBOOT, DEPLOY_SOFTWARE and
// UNINSTALL_SOFTWARE. Every program that changes the computer is started
// through a Runner, and the argv is built for Executor.OS rather than the
// build's GOOS, so that tests check the exact Windows, macOS and Linux
// commands on any system without running them.
package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// Executor runs commands.
type Executor struct {
	// OS is the GOOS the commands are built for (runtime.GOOS by default).
	OS     string
	Runner Runner
	// TempDir holds scripts and downloads while they run.
	TempDir string
	// PackageManager is apt, dnf or yum on Linux; empty means detect.
	PackageManager string
	// WingetPath and PowerShellPath locate the Windows tools.
	WingetPath     string
	PowerShellPath string
	// AppDirs are where macOS applications are uninstalled from
	// (/Applications by default).
	AppDirs []string
	// HTTP downloads installers from other hosts than the server (system
	// store by default).
	HTTP *http.Client
	// ServerBase and ServerHTTP: downloads from the server's own address
	// use the client that trusts what enrollment pinned.
	ServerBase string
	ServerHTTP *http.Client
	Now        func() time.Time
	Log        *slog.Logger
}

// Outcome is the terminal status of a command and what the agent should
// do after it.
type Outcome struct {
	Status   string // agentproto.StatusSuccess or StatusFailed
	Result   string
	ExitCode *int
	// RebootPending: what was installed needs a restart to take effect.
	RebootPending bool
	// InventoryChanged: software or updates changed; collect again.
	InventoryChanged bool
}

func (e *Executor) goos() string {
	if e.OS == "" {
		return runtime.GOOS
	}
	return e.OS
}

func (e *Executor) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

func (e *Executor) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

func (e *Executor) tempDir() string {
	if e.TempDir == "" {
		return os.TempDir()
	}
	return e.TempDir
}

// Execute runs one command to its end and tells its outcome. It never
// panics on bad input: an unknown type or a malformed payload is FAILED.
func (e *Executor) Execute(ctx context.Context, cmd agentproto.Command) Outcome {
	if cmd.NotAfter != nil && e.now().After(*cmd.NotAfter) {
		return failed(fmt.Sprintf("Not started: the maintenance window ended at %s.", cmd.NotAfter.UTC().Format(time.RFC3339)))
	}
	switch cmd.Type {
	case agentproto.TypeRunScript:
		var p agentproto.RunScriptPayload
		if err := decode(cmd.Payload, &p); err != nil {
			return failed(err.Error())
		}
		return e.RunScript(ctx, p)
	case agentproto.TypeDeployUpdates:
		var p agentproto.DeployUpdatesPayload
		if err := decode(cmd.Payload, &p); err != nil {
			return failed(err.Error())
		}
		return e.DeployUpdates(ctx, p)
	case agentproto.TypeReboot:
		var p agentproto.RebootPayload
		if err := decode(cmd.Payload, &p); err != nil {
			return failed(err.Error())
		}
		return e.Reboot(ctx, p)
	case agentproto.TypeDeploySoftware:
		var p agentproto.DeploySoftwarePayload
		if err := decode(cmd.Payload, &p); err != nil {
			return failed(err.Error())
		}
		return e.DeploySoftware(ctx, p)
	case agentproto.TypeUninstallSoftware:
		var p agentproto.UninstallSoftwarePayload
		if err := decode(cmd.Payload, &p); err != nil {
			return failed(err.Error())
		}
		return e.UninstallSoftware(ctx, p)
	}
	return failed(fmt.Sprintf("Unknown command type %q: this agent does not know it.", cmd.Type))
}

func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return errors.New("the command has no payload")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("the command's payload is not valid: %v", err)
	}
	return nil
}

func failed(msg string) Outcome {
	return Outcome{Status: agentproto.StatusFailed, Result: msg}
}

// step runs one command and appends its transcript to the log.
type transcript struct {
	b      strings.Builder
	failed bool
	last   *int
}

func (t *transcript) printf(format string, args ...any) {
	fmt.Fprintf(&t.b, format, args...)
	if !strings.HasSuffix(format, "\n") {
		t.b.WriteByte('\n')
	}
}

// run executes c and records it; ok tells whether the exit code is one
// of okCodes (0 when none are given).
func (e *Executor) run(ctx context.Context, t *transcript, c Cmd, okCodes ...int) (Result, bool) {
	t.printf("$ %s", c.String())
	e.log().Info("running", "cmd", c.String())
	res, err := e.Runner.Run(ctx, c)
	if err != nil {
		t.printf("could not start: %v", err)
		t.failed = true
		return res, false
	}
	if out := strings.TrimRight(res.Output, "\n"); out != "" {
		t.printf("%s", out)
	}
	code := res.ExitCode
	t.last = &code
	if res.TimedOut {
		t.printf("timed out after %s", c.Timeout)
		t.failed = true
		return res, false
	}
	if len(okCodes) == 0 {
		okCodes = []int{0}
	}
	for _, ok := range okCodes {
		if code == ok {
			if code != 0 {
				t.printf("exit code %d", code)
			}
			return res, true
		}
	}
	t.printf("exit code %d", code)
	t.failed = true
	return res, false
}

func (t *transcript) outcome() Outcome {
	o := Outcome{Status: agentproto.StatusSuccess, Result: t.b.String(), ExitCode: t.last}
	if t.failed {
		o.Status = agentproto.StatusFailed
	}
	return o
}

// packageManager tells which Linux package manager to drive.
func (e *Executor) packageManager() string {
	if e.PackageManager != "" {
		return e.PackageManager
	}
	for _, pm := range []string{"apt-get", "dnf", "yum"} {
		if _, err := exec.LookPath(pm); err == nil {
			if pm == "apt-get" {
				return "apt"
			}
			return pm
		}
	}
	return ""
}

func (e *Executor) powershell() string {
	if e.PowerShellPath != "" {
		return e.PowerShellPath
	}
	return "powershell.exe"
}

func (e *Executor) winget() string {
	if e.WingetPath != "" {
		return e.WingetPath
	}
	return "winget.exe"
}

// aptEnv keeps apt and dpkg from asking questions.
var aptEnv = []string{"DEBIAN_FRONTEND=noninteractive", "NEEDRESTART_MODE=a", "APT_LISTCHANGES_FRONTEND=none"}

// aptOptions keep the configuration files a local administrator changed.
var aptOptions = []string{"-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"}

// installTimeout bounds one package-manager or installer run.
const installTimeout = 2 * time.Hour
