package agentdist_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/agentdist"
)

// TestEnsureHostAgent: in the source tree with a toolchain, the agent for
// this machine is built once and published; outside it, nothing is built
// and the log says how to publish.
func TestEnsureHostAgent(t *testing.T) {
	host, err := agentdist.HostPlatform()
	if err != nil {
		t.Skip(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	st, _ := agentdist.NewStore(t.TempDir())
	st.EnsureHostAgent(context.Background(), t.TempDir(), log)
	if _, err := st.Lookup(host); err == nil || !strings.Contains(logs.String(), "patchd admin agent publish") {
		t.Fatalf("built outside the source tree: %v %s", err, logs.String())
	}
	logs.Reset()
	st.EnsureHostAgent(context.Background(), ".", log)
	b, err := st.Lookup(host)
	if err != nil || b.Size < 1<<20 || !strings.Contains(logs.String(), "agent built and published") {
		t.Fatalf("not built from source: %v %+v\n%s", err, b, logs.String())
	}
	logs.Reset()
	st.EnsureHostAgent(context.Background(), ".", log)
	if logs.Len() != 0 {
		t.Errorf("built again although published: %s", logs.String())
	}
}
