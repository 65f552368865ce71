package agentapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

func tokenUses(t *testing.T, e *apitest.Env, orgID, id string) int {
	t.Helper()
	list, err := e.Store.ListEnrollTokens(context.Background(), orgID)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range list {
		if tok.ID == id {
			return tok.Uses
		}
	}
	t.Fatalf("token %s not listed", id)
	return 0
}

// TestEnrollTokenUses: every successful enrollment counts on its token,
// also many at once (the count is an increment in the database), and a
// refused one does not.
func TestEnrollTokenUses(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	tok, err := admin.CreateEnrollToken(ctx, e.Store, "test", e.Org.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// A fifth of them enroll a machine again: a use too.
			uid := fmt.Sprintf("uses-%d", i%(n*4/5))
			ans := e.Call(http.MethodPost, agentproto.PathEnroll, "", agentproto.EnrollRequest{EnrollToken: tok.Token, MachineUID: uid,
				Hostname: uid, Platform: "linux"}, false)
			if ans.Status != http.StatusOK {
				t.Errorf("enroll %d: %d %s", i, ans.Status, ans.Body)
			}
		})
	}
	wg.Wait()
	// Refused enrollments are not uses.
	ans := e.Call(http.MethodPost, agentproto.PathEnroll, "", agentproto.EnrollRequest{EnrollToken: tok.Token, MachineUID: "x", Hostname: "h", Platform: "beos"}, false)
	if ans.Status != http.StatusBadRequest {
		t.Fatalf("bad platform: %d", ans.Status)
	}
	if got := tokenUses(t, e, e.Org.ID, tok.ID); got != n {
		t.Fatalf("uses %d, want %d", got, n)
	}
}

// TestReenrollIsAuditedAndRaised: enrolling the machine id of an enrolled
// endpoint keeps the protocol's behaviour (same endpoint, new secret), and
// records who did it from where in the Audit Trail, and raises
// ENDPOINT_REENROLLED, which a first enrollment does not.
func TestReenrollIsAuditedAndRaised(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	rule, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "Take-overs", Trigger: "ENDPOINT_REENROLLED", EmailTo: ptrS("sec@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	first := e.Enroll("uid-take", "web-07", "linux")
	if evs, err := e.Store.ListAlertEvents(ctx, e.Org.ID, rule.Rule.ID, 10); err != nil || len(evs) != 0 {
		t.Fatalf("a first enrollment raised %v (%v)", evs, err)
	}
	e.Queue(e.Org, "REBOOT", map[string]any{"message": "m", "timeoutSeconds": 60}, first)
	tokens, err := e.Store.ListEnrollTokens(ctx, e.Org.ID)
	if err != nil || len(tokens) == 0 {
		t.Fatal(tokens, err)
	}
	again := e.Enroll("uid-take", "attacker", "linux")
	if again.ID != first.ID {
		t.Fatalf("re-enroll made another endpoint")
	}
	audit, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "endpoint.reenroll"})
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 1 {
		t.Fatalf("audit entries: %+v", audit)
	}
	a := audit[0]
	if a.Actor != store.EnrollTokenActor(tokens[0].ID) || a.TargetID != first.ID || a.Summary["clientAddress"] != "127.0.0.1" ||
		a.Summary["previousHostname"] != "web-07" || a.Summary["hostname"] != "attacker" || a.Summary["pendingCommands"] != float64(1) {
		t.Fatalf("audit entry: %+v", a)
	}
	evs, err := e.Store.ListAlertEvents(ctx, e.Org.ID, rule.Rule.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Event != "ENDPOINT_REENROLLED" || !strings.Contains(evs[0].Detail, "127.0.0.1") ||
		!strings.Contains(evs[0].Detail, "1 pending commands") {
		t.Fatalf("events: %+v", evs)
	}
	// Each re-enrollment is an event of its own.
	e.Enroll("uid-take", "attacker", "linux")
	if evs, _ := e.Store.ListAlertEvents(ctx, e.Org.ID, rule.Rule.ID, 10); len(evs) != 2 {
		t.Fatalf("second re-enrollment: %d events", len(evs))
	}
}

func ptrS(s string) *string { return &s }
