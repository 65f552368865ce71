package agent

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The Windows service's recovery: the service manager starts the agent
// again after 5 s when its process ends without being stopped, or stops
// with a failing exit code (a self-update's restart, an error), then after
// 30 s, then every minute; a day without failures resets the count.
// patchd-agent install (sc.exe), the MSI (MsiServiceConfigFailureActions)
// and the agent itself at each start (when the service's actions differ)
// set the same.
var (
	RecoveryDelays = []time.Duration{5 * time.Second, 30 * time.Second, time.Minute}
	RecoveryReset  = 24 * time.Hour
)

// scRecoveryActions is RecoveryDelays for sc.exe failure actions=.
func scRecoveryActions() string {
	parts := make([]string, len(RecoveryDelays))
	for i, d := range RecoveryDelays {
		parts[i] = "restart/" + strconv.FormatInt(d.Milliseconds(), 10)
	}
	return strings.Join(parts, "/")
}

// RecoveryAction is one of a Windows service's failure actions as the
// service manager reports it (golang.org/x/sys/windows/svc/mgr's
// RecoveryAction without the Windows-only types).
type RecoveryAction struct {
	Type  int // 0 none, 1 restart, 2 reboot, 3 run a command (SC_ACTION_*)
	Delay time.Duration
}

// RecoveryDiff says how a service's recovery (actions, reset period, the
// flag that counts a failing exit code as a failure) differs from the
// agent's; "" when it is the agent's.
func RecoveryDiff(actions []RecoveryAction, reset time.Duration, onNonCrash bool) string {
	var diffs []string
	same := len(actions) == len(RecoveryDelays)
	for i := 0; same && i < len(actions); i++ {
		same = actions[i].Type == 1 && actions[i].Delay == RecoveryDelays[i]
	}
	if !same {
		diffs = append(diffs, fmt.Sprintf("actions %s, want %s", describeRecovery(actions), describeRecovery(wantRecovery())))
	}
	if reset != RecoveryReset {
		diffs = append(diffs, fmt.Sprintf("reset after %s, want %s", reset, RecoveryReset))
	}
	if !onNonCrash {
		diffs = append(diffs, "a failing exit code is not a failure, want it one")
	}
	return strings.Join(diffs, "; ")
}

func wantRecovery() []RecoveryAction {
	out := make([]RecoveryAction, len(RecoveryDelays))
	for i, d := range RecoveryDelays {
		out[i] = RecoveryAction{Type: 1, Delay: d}
	}
	return out
}

func describeRecovery(actions []RecoveryAction) string {
	if len(actions) == 0 {
		return "none"
	}
	names := map[int]string{0: "none", 1: "restart", 2: "reboot", 3: "run"}
	parts := make([]string, len(actions))
	for i, a := range actions {
		n, ok := names[a.Type]
		if !ok {
			n = strconv.Itoa(a.Type)
		}
		parts[i] = n + "/" + a.Delay.String()
	}
	return strings.Join(parts, ",")
}

// ServiceExe is the program of a Windows service's command line
// (BinaryPathName): the quoted first word, or up to the first blank.
func ServiceExe(binPath string) string {
	binPath = strings.TrimSpace(binPath)
	if rest, ok := strings.CutPrefix(binPath, `"`); ok {
		exe, _, _ := strings.Cut(rest, `"`)
		return exe
	}
	exe, _, _ := strings.Cut(binPath, " ")
	return exe
}
