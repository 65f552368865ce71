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
	if ans := ag.Status(id, "SUCCESS", last, nil); ans.Status != http.StatusOK {
		t.Fatalf("final: %d %s", ans.Status, ans.Body)
	}
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
