package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulns/match"
)

// TestSaveMatchResultsDiff writes findings as a difference, in the few
// bulk statements of SaveMatchResults: added, changed (fixed version) and
// removed findings, the catalog counts, first-seen times kept, and dirty
// marks cleared only at the generation the worker saw. Enough endpoints and
// findings that SQLite splits the rows over several statements.
func TestSaveMatchResultsDiff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, o := acmeStore(t)
	const endpoints, cves = 40, 30 // 1,200 findings × 8 columns: three SQLite statements
	var ids []string
	for i := range endpoints {
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprint("m", i), Hostname: fmt.Sprint("h", i),
			Platform: "windows", SecretHash: fmt.Sprint("s", i)}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	findings := func(from, to int, fixed string) []match.Finding {
		var out []match.Finding
		for c := from; c < to; c++ {
			out = append(out, match.Finding{CVEID: fmt.Sprintf("CVE-2024-%04d", c), Software: "Google Chrome", Version: "120.0",
				FixedIn: fixed, Source: "google:chrome"})
		}
		return out
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var first []store.MatchResult
	for _, id := range ids {
		first = append(first, store.MatchResult{EndpointID: id, OrgID: o.ID, Findings: findings(0, cves, "")})
	}
	first = append(first, store.MatchResult{EndpointID: "gone", OrgID: o.ID, Findings: findings(0, 1, "")})
	st, err := s.SaveMatchResults(ctx, first, t0)
	if err != nil || st != (store.ResultStats{Added: endpoints * cves}) {
		t.Fatalf("first save: %+v %v", st, err)
	}

	// Endpoint 0: CVEs 10–39, 10–19 with a fixed version now. Endpoint 1:
	// nothing left. The others unchanged. Dirty marks: endpoint 0 at the
	// generation stored, endpoint 1 at an older one (marked again since).
	dirty, err := s.DirtyEndpoints(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	gen := map[string]int64{}
	for _, d := range dirty {
		gen[d.ID] = d.Gen
	}
	second := []store.MatchResult{
		{EndpointID: ids[0], OrgID: o.ID, Findings: append(findings(10, 20, "121.0"), findings(20, cves+10, "")...),
			Dirty: &store.DirtyEndpoint{ID: ids[0], OrgID: o.ID, Gen: gen[ids[0]]}},
		{EndpointID: ids[1], OrgID: o.ID, Dirty: &store.DirtyEndpoint{ID: ids[1], OrgID: o.ID, Gen: gen[ids[1]] - 1}},
	}
	for _, id := range ids[2:] {
		second = append(second, store.MatchResult{EndpointID: id, OrgID: o.ID, Findings: findings(0, cves, "")})
	}
	st, err = s.SaveMatchResults(ctx, second, t0.Add(time.Hour))
	if err != nil || st != (store.ResultStats{Added: 10, Changed: 10, Removed: 10 + cves}) {
		t.Fatalf("second save: %+v %v", st, err)
	}
	got, err := s.EndpointFindings(ctx, o.ID, ids[0])
	if err != nil || len(got) != cves {
		t.Fatalf("endpoint 0 findings: %d %v", len(got), err)
	}
	for _, f := range got {
		var n int
		fmt.Sscanf(f.CVEID, "CVE-2024-%d", &n)
		wantFixed, wantSeen := "", t0
		if n < 20 {
			wantFixed = "121.0"
		}
		if n >= cves {
			wantSeen = t0.Add(time.Hour)
		}
		if n < 10 || f.FixedIn != wantFixed || !f.FirstSeenAt.Equal(wantSeen) {
			t.Errorf("endpoint 0 finding %+v", f)
		}
	}
	if got, err := s.EndpointFindings(ctx, o.ID, ids[1]); err != nil || len(got) != 0 {
		t.Fatalf("endpoint 1 findings: %+v %v", got, err)
	}

	list, total, err := s.ListVulnerabilities(ctx, store.VulnQuery{OrgID: o.ID, Limit: 100, Now: t0.Add(time.Hour)})
	if err != nil || total != cves+10 {
		t.Fatalf("list: %d %v", total, err)
	}
	for _, v := range list {
		var n int
		fmt.Sscanf(v.CVEID, "CVE-2024-%d", &n)
		want := endpoints - 1 // endpoint 1 has nothing left
		switch {
		case n < 10:
			want = endpoints - 2
		case n >= cves:
			want = 1
		}
		if len(v.Endpoints) != want {
			t.Errorf("%s: %d endpoints, want %d", v.CVEID, len(v.Endpoints), want)
		}
	}

	dirty, err = s.DirtyEndpoints(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for _, d := range dirty {
		left[d.ID] = true
	}
	if left[ids[0]] || !left[ids[1]] || len(dirty) != endpoints-1 {
		t.Fatalf("dirty after save: %d left, endpoint 0 %v, endpoint 1 %v", len(dirty), left[ids[0]], left[ids[1]])
	}
}
