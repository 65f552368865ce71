package perm

import "testing"

func TestParseRoundTrip(t *testing.T) {
	s, err := Parse("api.access, endpoints.view,reports.manage")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Has(APIAccess) || !s.Has(EndpointsView) || !s.Has(ReportsManage) || s.Has(UpdatesView) {
		t.Fatalf("set %v holds the wrong permissions", s.Names())
	}
	back, err := Parse(s.String())
	if err != nil || back != s {
		t.Fatalf("round trip: %v %v", back, err)
	}
	if _, err := Parse("api.access,alerts.view"); err == nil {
		t.Fatal("unknown permission accepted")
	}
	if len(All.Names()) != 11 {
		t.Fatalf("All has %d permissions, want 11", len(All.Names()))
	}
	for _, n := range ReadOnly.Names() {
		if n != "api.access" && n[len(n)-5:] != ".view" {
			t.Fatalf("Read-only holds %s", n)
		}
	}
}
