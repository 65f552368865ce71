package agent

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProcessAliveWhileLeaderThreadIsZombie: while a thread other than
// the leader executes a new program (the agent's re-execution into an
// update may), or after the leader thread ended alone, /proc shows the
// process's leader as a zombie though the process runs. The watchdog
// must not take that for a crashed agent and roll the update back.
func TestProcessAliveWhileLeaderThreadIsZombie(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestProcessAliveWhileLeaderThreadIsZombie$")
	cmd.Env = append(os.Environ(), "PATCHD_TEST_LEADER_EXITS=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	// The helper prints "leader gone" from another thread once its leader
	// thread has ended; a tick after that proves the process still runs.
	for lines.Scan() && lines.Text() != "leader gone" {
	}
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "tick") {
		t.Fatalf("the helper stopped: %v", lines.Err())
	}
	if !zombieTask("/proc/" + strconv.Itoa(pid) + "/stat") {
		t.Fatal("the helper's leader thread is not a zombie: the test does not test anything")
	}
	if !processAlive(pid) {
		t.Fatal("processAlive says a running process ended: its leader thread alone is a zombie")
	}
	if e := endedAgent(pid, &PendingUpdate{}); e != 0 {
		t.Fatalf("endedAgent = %d for a running process", e)
	}

	// Once the whole process has ended (and waits for its parent), it is
	// ended.
	cmd.Process.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(30 * time.Second); processAlive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("processAlive still says the ended helper runs")
		}
	}
	if !zombie(pid) {
		t.Fatal("the ended helper, not waited for, is not a zombie")
	}
}

// The helper process: its init runs on the leader thread, the main
// goroutine's, before any test.
func init() {
	if os.Getenv("PATCHD_TEST_LEADER_EXITS") == "1" {
		runtime.LockOSThread()
		leaderExitsAlone()
	}
}

// leaderExitsAlone ends the thread-group leader's thread only (the
// exit system call, not exit_group) and goes on printing from another.
func leaderExitsAlone() {
	done := make(chan struct{})
	go func() {
		<-done
		for i := 0; ; i++ {
			os.Stdout.WriteString("tick " + strconv.Itoa(i) + "\n")
			time.Sleep(50 * time.Millisecond)
		}
	}()
	go func() {
		// Say so once the leader thread is a zombie.
		for !zombieTask("/proc/self/stat") {
			time.Sleep(5 * time.Millisecond)
		}
		os.Stdout.WriteString("leader gone\n")
		close(done)
	}()
	if syscall.Gettid() != os.Getpid() {
		os.Stdout.WriteString("not on the leader thread\n")
		os.Exit(2)
	}
	syscall.RawSyscall(syscall.SYS_EXIT, 0, 0, 0)
}
