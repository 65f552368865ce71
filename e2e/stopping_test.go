package e2e

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/lockedbuf"
)

// TestStoppedAgentShowsDisconnected runs the real patchd-agent: stopped
// by SIGTERM (what systemd sends on systemctl stop, and at shutdown) it
// tells the server, and its endpoint is disconnected as soon as the agent
// has exited, not three check-in intervals later; started again, it is
// connected. Killed (a crash: no stopping call) it stays connected, the
// interval rule's to decide: a dropped connection is no stop.
func TestStoppedAgentShowsDisconnected(t *testing.T) {
	a := newEnrolledAgent(t)
	e := a.e
	ctx := context.Background()
	page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{})
	if err != nil || page.Total != 1 {
		t.Fatalf("endpoints after enroll: %+v %v", page, err)
	}
	id := page.Items[0].ID

	// start runs the agent and waits until the server has written a
	// check-in of it later than any before.
	start := func() (*exec.Cmd, <-chan error, *lockedbuf.Buffer) {
		t.Helper()
		before, err := e.Admin.GetEndpoint(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		cmd, exited, logs := runAgent(t, a.bin, a.state, a.env)
		waitFor(t, "a check-in of the started agent", exited, func() bool {
			d, err := e.Admin.GetEndpoint(ctx, id)
			return err == nil && d.Status == "connected" && d.LastSeenAt != nil &&
				(before.LastSeenAt == nil || d.LastSeenAt.After(*before.LastSeenAt))
		})
		return cmd, exited, logs
	}
	status := func() string {
		t.Helper()
		d, err := e.Admin.GetEndpoint(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return d.Status
	}
	listed := func(st string) int {
		t.Helper()
		p, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{Status: st})
		if err != nil {
			t.Fatal(err)
		}
		return p.Total
	}
	wait := func(exited <-chan error) {
		t.Helper()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Fatal("the agent did not exit")
		}
	}

	// Killed: no word from the agent, the endpoint stays connected.
	cmd, exited, _ := start()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait(exited)
	if got := status(); got != "connected" {
		t.Fatalf("after the agent was killed: %s, want connected (the interval rule decides)", got)
	}

	// Stopped: disconnected once it has exited.
	cmd, exited, logs := start()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wait(exited)
	if got := status(); got != "disconnected" {
		t.Fatalf("after SIGTERM: %s, want disconnected\nagent log:\n%s", got, logs.String())
	}
	if listed("disconnected") != 1 || listed("connected") != 0 {
		t.Fatalf("status filters after SIGTERM: %d disconnected, %d connected", listed("disconnected"), listed("connected"))
	}
	if !strings.Contains(logs.String(), "the server was told") {
		t.Errorf("the agent's log does not say it told the server:\n%s", logs.String())
	}

	// Started again: connected.
	start()
	if got := status(); got != "connected" {
		t.Fatalf("after the agent started again: %s", got)
	}
}
