//go:build unix

package execute

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// TestRunScriptTimeout: a script past its time limit is FAILED, and the
// child it started dies with it (the process group is killed), which a
// busy machine cannot turn into a false failure: no wall-clock bound.
func TestRunScriptTimeout(t *testing.T) {
	o, _ := runScript(t, agentproto.RunScriptPayload{Language: "sh", Script: "echo started; sleep 300 & echo child $!; wait", TimeoutSeconds: 1})
	if o.Status != agentproto.StatusFailed || !strings.Contains(o.Result, "started\n") || !strings.Contains(o.Result, "time limit of 1s") {
		t.Errorf("%+v", o)
	}
	_, after, ok := strings.Cut(o.Result, "child ")
	pid, err := strconv.Atoi(strings.Fields(after + " x")[0])
	if !ok || err != nil {
		t.Fatalf("no child pid in %q", o.Result)
	}
	for deadline := time.Now().Add(time.Minute); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the script's child %d outlived the script", pid)
		}
	}
}

// alive tells whether a process runs (a zombie waiting to be reaped by a
// container's init does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i:]), ") Z") {
			return false
		}
	}
	return true
}
