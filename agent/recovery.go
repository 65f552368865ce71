package agent

import (
	"fmt"
	"github.com/patchd/patchd/agentsvc"
	"strconv"
	"strings"
	"time"
)

// scRecoveryActions is agentsvc.RecoveryDelays for sc.exe failure actions=.
func scRecoveryActions() string {
	parts := make([]string, len(agentsvc.RecoveryDelays))
	for i, d := range agentsvc.RecoveryDelays {
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
	same := len(actions) == len(agentsvc.RecoveryDelays)
	for i := 0; same && i < len(actions); i++ {
		same = actions[i].Type == 1 && actions[i].Delay == agentsvc.RecoveryDelays[i]
	}
	if !same {
		diffs = append(diffs, fmt.Sprintf("actions %s, want %s", describeRecovery(actions), describeRecovery(wantRecovery())))
	}
	if reset != agentsvc.RecoveryReset {
		diffs = append(diffs, fmt.Sprintf("reset after %s, want %s", reset, agentsvc.RecoveryReset))
	}
	if !onNonCrash {
		diffs = append(diffs, "a failing exit code is not a failure, want it one")
	}
	return strings.Join(diffs, "; ")
}

func wantRecovery() []RecoveryAction {
	out := make([]RecoveryAction, len(agentsvc.RecoveryDelays))
	for i, d := range agentsvc.RecoveryDelays {
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
