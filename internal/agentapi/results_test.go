package agentapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestCommandResultIsCapped: an agent appending to a command's output
// without end leaves at most store.MaxCommandResult bytes (plus the
// marker), keeping the head and the tail and saying how much was cut; a
// retried report is not appended twice.
func TestCommandResultIsCapped(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ag := e.Enroll("uid-cap", "ws-cap", "linux")
	run := e.Queue(e.Org, agentproto.TypeRunScript, agentproto.RunScriptPayload{Script: "yes", Language: "sh"}, ag)
	resp, _ := ag.Checkin(0, agentproto.CheckinRequest{})
	if len(resp.Commands) != 1 {
		t.Fatalf("commands: %+v", resp.Commands)
	}
	id := resp.Commands[0].ID
	const chunks, size = 12, 256 << 10
	sent := 0
	for i := range chunks {
		chunk := fmt.Sprintf("<chunk %02d>", i) + strings.Repeat(string(rune('a'+i)), size-20) + "é\n"
		for range 2 { // each report sent twice, as an agent that lost the answer does
			if ans := ag.Status(id, "RUNNING", chunk, nil); ans.Status != http.StatusOK {
				t.Fatalf("chunk %d: %d %s", i, ans.Status, ans.Body)
			}
		}
		sent += len(chunk)
	}
	last := "the end\n"
	ag.Status(id, "SUCCESS", last, nil).Must(t, http.StatusOK, "final")
	sent += len(last)
	cmds, err := e.Admin.RunCommands(context.Background(), run.RunID, client.RunQuery{})
	if err != nil || len(cmds.Items) != 1 || cmds.Items[0].Result == nil {
		t.Fatalf("run commands: %+v %v", cmds, err)
	}
	got := *cmds.Items[0].Result
	// The count of bytes cut is exact only if no retry was appended.
	cut := sent - store.MaxCommandResult
	marker := fmt.Sprintf("\n… [%d bytes cut] …\n", cut)
	if len(got) != store.MaxCommandResult+len(marker) {
		t.Fatalf("stored %d bytes, want %d (sent %d)", len(got), store.MaxCommandResult+len(marker), sent)
	}
	if !strings.HasPrefix(got, "<chunk 00>") || !strings.HasSuffix(got, "é\nthe end\n") ||
		strings.Index(got, marker) != store.CommandResultHead {
		t.Fatalf("head, marker or tail misplaced: %q … %q", got[:40], got[len(got)-40:])
	}
}

// TestCheckinTextChecked: the check-in's text is checked at the edge, with
// the documented limits, before anything of it is batched for writing.
func TestCheckinTextChecked(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ag := e.Enroll("uid-edge", "ws-edge", "linux")
	long := strings.Repeat("u", agentproto.MaxUser+1)
	for _, c := range []struct {
		name string
		req  agentproto.CheckinRequest
	}{
		{"long user", agentproto.CheckinRequest{User: &long}},
		{"long agentVersion", agentproto.CheckinRequest{AgentVersion: strings.Repeat("1", agentproto.MaxAgentVersion+1)}},
		{"long inventoryHash", agentproto.CheckinRequest{InventoryHash: strings.Repeat("f", agentproto.MaxInventoryHash+1)}},
		{"not an address", agentproto.CheckinRequest{IPAddresses: []string{"10.0.0.1", "10.0.0.300"}}},
		{"address with prefix", agentproto.CheckinRequest{IPAddresses: []string{"10.0.0.1/24"}}},
		{"too many addresses", agentproto.CheckinRequest{IPAddresses: make([]string, agentproto.MaxIPAddresses+1)}},
	} {
		if _, ans := ag.Checkin(0, c.req); ans.Status != http.StatusBadRequest || ans.Error() != "invalid_request" {
			t.Errorf("%s: %d %s", c.name, ans.Status, ans.Body)
		}
	}
	longUID := strings.Repeat("m", agentproto.MaxMachineUID+1)
	for _, req := range []agentproto.EnrollRequest{
		{EnrollToken: e.EnrollToken, MachineUID: longUID, Hostname: "h", Platform: "linux"},
		{EnrollToken: e.EnrollToken, MachineUID: "m", Hostname: "h", Platform: "linux", OS: strings.Repeat("o", agentproto.MaxOSText+1)},
		{EnrollToken: e.EnrollToken, MachineUID: "m", Hostname: "h", Platform: "linux", AgentVersion: strings.Repeat("1", agentproto.MaxAgentVersion+1)},
	} {
		if ans := e.Call(http.MethodPost, agentproto.PathEnroll, "", req, false); ans.Status != http.StatusBadRequest {
			t.Errorf("enroll %+v: %d %s", req, ans.Status, ans.Body)
		}
	}
	// Sound text at the limits is kept; addresses in their canonical form.
	user := strings.Repeat("u", agentproto.MaxUser)
	if _, ans := ag.Checkin(0, agentproto.CheckinRequest{User: &user, IPAddresses: []string{" 2001:DB8::1 ", "10.0.0.5"}}); ans.Status != http.StatusOK {
		t.Fatalf("sound check-in: %d %s", ans.Status, ans.Body)
	}
	if err := e.Server.FlushCheckins(context.Background()); err != nil {
		t.Fatal(err)
	}
	d, err := e.Admin.GetEndpoint(context.Background(), ag.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.User == nil || *d.User != user || strings.Join(d.IPAddresses, ",") != "2001:db8::1,10.0.0.5" {
		t.Fatalf("stored: user %v, addresses %v", d.User, d.IPAddresses)
	}
}
