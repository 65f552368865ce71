package execute

import (
	"context"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/patchd/patchd/agentproto"
)

// Reboot schedules a restart after TimeoutSeconds with Message shown to
// logged-on users. Linux and macOS count in whole minutes (at least one);
// Windows waits at least 15 seconds: in both cases time for the agent to
// report the command before the computer goes down.
func (e *Executor) Reboot(ctx context.Context, p agentproto.RebootPayload) Outcome {
	msg := p.Message
	if msg == "" {
		msg = "patchd: this computer restarts for maintenance"
	}
	return e.scheduleReboot(ctx, msg, time.Duration(p.TimeoutSeconds)*time.Second)
}

// RebootCmd builds the restart command for a system.
func RebootCmd(goos, message string, delay time.Duration) Cmd {
	switch goos {
	case "windows":
		secs := max(int(delay/time.Second), 15)
		secs = min(secs, 315360000)
		if utf8.RuneCountInString(message) > 500 {
			message = string([]rune(message)[:500])
		}
		return Cmd{Path: "shutdown.exe", Args: []string{"/r", "/t", strconv.Itoa(secs), "/c", message, "/d", "p:0:0"}}
	default:
		mins := max(int((delay+time.Minute-1)/time.Minute), 1)
		return Cmd{Path: "shutdown", Args: []string{"-r", "+" + strconv.Itoa(mins), message}}
	}
}

func (e *Executor) scheduleReboot(ctx context.Context, message string, delay time.Duration) Outcome {
	c := RebootCmd(e.goos(), message, delay)
	c.Timeout = time.Minute
	var t transcript
	if _, ok := e.run(ctx, &t, c); ok {
		t.printf("Restart scheduled with message %q.", message)
	} else {
		t.printf("The restart could not be scheduled.")
	}
	return t.outcome()
}
