package store_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
)

// TestSoftwareTitlesPerformance times GET /api/v1/software/titles (a
// patchd addition) over 10,000 endpoints × 150 applications of 1,000 titles
// (PATCHD_PERF_ENDPOINTS sets the endpoints), through the real server, from
// the request to the last byte of the answer, and logs p50 and p99 of each
// call (docs/performance.md). It asserts the answers, never the times.
// PATCHD_PERF=1 runs it.
func TestSoftwareTitlesPerformance(t *testing.T) {
	s := perfStore(t, "time the software list by title on 10,000 endpoints × 150 applications")
	ctx := context.Background()
	o, err := admin.CreateOrg(ctx, s, "Perf", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	n := perfScale(10000)
	const titles = 1000
	now := time.Now()
	loadStart := time.Now()
	ids := bulkEndpoints(t, s, o.ID, n, now.Add(-24*time.Hour))
	if err := s.BulkSoftwareForTest(ctx, o.ID, ids, titles, 150, now); err != nil {
		t.Fatal(err)
	}
	if err := s.AnalyzeForTest(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d endpoints, %d installations of %d titles loaded in %s", s.Engine(), n, n*150, titles, time.Since(loadStart).Round(time.Second))
	c := perfServer(t, s, o)
	page, err := c.ListSoftwareTitles(ctx, client.SoftwareTitleQuery{PageQuery: client.PageQuery{Limit: 500}})
	if err != nil || page.Total != titles || len(page.Items) != 500 {
		t.Fatalf("titles: %d of %d, %v", len(page.Items), page.Total, err)
	}
	hosts := 0
	for _, it := range page.Items {
		hosts += it.Hosts
	}
	if hosts == 0 || page.Items[0].Hosts < page.Items[499].Hosts {
		t.Fatalf("titles by hosts: %d hosts in all, first %d, last %d", hosts, page.Items[0].Hosts, page.Items[499].Hosts)
	}
	get := func(q url.Values) error { return readWhole(ctx, c, "/api/v1/software/titles", q) }
	measure := func(name string, call func(i int) error) { timeCalls(t, name, 200, call) }
	for _, limit := range []int{50, 500} {
		measure(fmt.Sprintf("titles limit=%d sort=hosts, offsets across %d", limit, titles), func(i int) error {
			return get(url.Values{"limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa((i * 7 * limit) % titles)}})
		})
	}
	measure("titles limit=50 sort=name, offsets across the list", func(i int) error {
		return get(url.Values{"limit": {"50"}, "sort": {"name"}, "offset": {strconv.Itoa((i * 350) % titles)}})
	})
	measure("titles limit=50, q=application 01 (substring)", func(i int) error {
		return get(url.Values{"limit": {"50"}, "q": {"application 01"}})
	})
	measure("titles limit=50, publisher=publisher 01 (substring)", func(i int) error {
		return get(url.Values{"limit": {"50"}, "publisher": {"publisher 01"}})
	})
}
