package execute

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// DefaultScriptTimeout applies when a RUN_SCRIPT payload sets none.
const DefaultScriptTimeout = 3600 * time.Second

// RebootDelayAfterScript is how long after a reboot exit code the
// computer restarts: time for the agent to report the command.
const RebootDelayAfterScript = 60 * time.Second

// interpreter returns the argv prefix and file extension of a language on
// a system, or an error when the language does not run there.
func interpreter(goos, language string) ([]string, string, error) {
	lang := strings.ToLower(strings.TrimSpace(language))
	if lang == "" {
		lang = "sh"
		if goos == "windows" {
			lang = "powershell"
		}
	}
	win := goos == "windows"
	switch lang {
	case "sh":
		if win {
			break
		}
		return []string{"/bin/sh"}, ".sh", nil
	case "bash":
		if win {
			break
		}
		return []string{"bash"}, ".sh", nil
	case "powershell":
		if win {
			return []string{"powershell.exe", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File"}, ".ps1", nil
		}
		// PowerShell 7 is the PowerShell of Linux and macOS.
		return []string{"pwsh", "-NoProfile", "-NonInteractive", "-File"}, ".ps1", nil
	case "pwsh":
		return []string{"pwsh", "-NoProfile", "-NonInteractive", "-File"}, ".ps1", nil
	case "python":
		if win {
			return []string{"python.exe"}, ".py", nil
		}
		return []string{"python3"}, ".py", nil
	case "cmd":
		if !win {
			break
		}
		return []string{"cmd.exe", "/d", "/c"}, ".cmd", nil
	default:
		return nil, "", fmt.Errorf("unknown script language %q", language)
	}
	return nil, "", fmt.Errorf("script language %q does not run on %s", language, goos)
}

var envName = regexp.MustCompile(`[^A-Za-z0-9_]`)

// parameterEnv turns script parameters into environment variables; a
// character a variable name cannot hold becomes an underscore.
func parameterEnv(params map[string]string) []string {
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	env := make([]string, 0, len(names))
	for _, k := range names {
		name := envName.ReplaceAllString(k, "_")
		if name == "" || (name[0] >= '0' && name[0] <= '9') {
			name = "_" + name
		}
		env = append(env, name+"="+params[k])
	}
	return env
}

// RunScript writes the script to a temporary file, runs it with its
// parameters in the environment and judges its exit code: one of the
// success codes (0 by default) is SUCCESS, one of the reboot codes is
// SUCCESS and a restart, anything else FAILED.
func (e *Executor) RunScript(ctx context.Context, p agentproto.RunScriptPayload) Outcome {
	prefix, ext, err := interpreter(e.goos(), p.Language)
	if err != nil {
		return failed(err.Error())
	}
	if e.goos() == "windows" && prefix[0] == "powershell.exe" {
		prefix[0] = e.powershell()
	}
	dir, err := os.MkdirTemp(e.tempDir(), "script-")
	if err != nil {
		return failed(fmt.Sprintf("Could not create a folder for the script: %v", err))
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "script"+ext)
	body := p.Script
	if ext == ".cmd" || ext == ".ps1" {
		body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n")
	}
	if ext == ".ps1" {
		body = "\uFEFF" + body // a BOM makes Windows PowerShell read UTF-8
	}
	if err := os.WriteFile(file, []byte(body), 0o700); err != nil {
		return failed(fmt.Sprintf("Could not write the script: %v", err))
	}
	timeout := DefaultScriptTimeout
	if p.TimeoutSeconds > 0 {
		timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	c := Cmd{Path: prefix[0], Args: append(prefix[1:], file), Env: parameterEnv(p.Parameters), Dir: dir, Timeout: timeout}
	res, err := e.Runner.Run(ctx, c)
	if err != nil {
		return failed(fmt.Sprintf("Could not start the script: %v", err))
	}
	code := res.ExitCode
	// A script may install or remove anything: the agent collects again
	// at once and sends the inventory if it changed.
	o := Outcome{Result: res.Output, ExitCode: &code, InventoryChanged: true}
	if res.TimedOut {
		o.Status = agentproto.StatusFailed
		o.Result = appendLine(res.Output, fmt.Sprintf("Stopped: the script ran longer than its time limit of %s.", timeout))
		return o
	}
	success := p.SuccessExitCodes
	if len(success) == 0 {
		success = []int{0}
	}
	switch {
	case contains(p.RebootExitCodes, code):
		o.Status = agentproto.StatusSuccess
		o.Result = appendLine(res.Output, fmt.Sprintf("Exit code %d asks for a restart.", code))
		r := e.scheduleReboot(ctx, "patchd: restarting as a script asked", RebootDelayAfterScript)
		o.Result = appendLine(o.Result, r.Result)
		if r.Status != agentproto.StatusSuccess {
			o.RebootPending = true
		}
	case contains(success, code):
		o.Status = agentproto.StatusSuccess
	default:
		o.Status = agentproto.StatusFailed
		o.Result = appendLine(res.Output, fmt.Sprintf("Exit code %d.", code))
	}
	return o
}

func contains(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func appendLine(text, line string) string {
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text + line
}
