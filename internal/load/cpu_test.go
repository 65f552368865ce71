package load

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestTreeCPU: a process's tree counts the CPU of its children.
func TestTreeCPU(t *testing.T) {
	child := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		child.Process.Kill()
		child.Wait()
	}()
	// The child has spent its CPU once it sleeps.
	var spent float64
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		f := statFields(child.Process.Pid)
		if len(f) > 12 && f[0] == "S" {
			if spent = ticks(f[11]) + ticks(f[12]); spent > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the child spent no CPU")
		}
	}
	self := cpuTimes([]int{os.Getpid()})[0]
	if tree := treeCPU(os.Getpid()); tree < self+spent {
		t.Errorf("tree CPU %.2fs, want at least this process's %.2fs and its child's %.2fs", tree, self, spent)
	}
	if treeCPU(-1) != -1 {
		t.Error("a process that does not exist has a CPU time")
	}
}
