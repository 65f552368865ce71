package store_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/server"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/updates"
)

// The performance tests load a large organization and time the REST calls
// through the real server (HTTP, authentication, JSON). They take minutes,
// so they run only with PATCHD_PERF=1; docs/performance.md has the figures.

func perfServer(t *testing.T, s *store.Store, o store.Org) *client.Client {
	t.Helper()
	ctx := context.Background()
	role, err := admin.CreateRole(ctx, s, o.ID, "perf", perm.All.String())
	if err != nil {
		t.Fatal(err)
	}
	cred, err := admin.CreateCredential(ctx, s, "test", o.ID, "perf", role.ID)
	if err != nil {
		t.Fatal(err)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := server.New(config.Config{CheckinInterval: time.Minute}, s)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return client.New(ts.URL, cred.ClientID, cred.ClientSecret)
}

// perfScale answers n, or PATCHD_PERF_ENDPOINTS when set (a quick run).
func perfScale(n int) int {
	if v, err := strconv.Atoi(os.Getenv("PATCHD_PERF_ENDPOINTS")); err == nil && v > 0 {
		return v
	}
	return n
}

func percentile(d []time.Duration, p float64) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	i := int(float64(len(d))*p+0.5) - 1
	return d[max(0, min(i, len(d)-1))]
}

// perfStore skips the test unless PATCHD_PERF is set (the skip message
// says it would do what) and opens the store the test loads.
func perfStore(t *testing.T, what string) *store.Store {
	t.Helper()
	if os.Getenv("PATCHD_PERF") == "" {
		t.Skip("set PATCHD_PERF=1 to " + what)
	}
	return storetest.Open(t)
}

// bulkEndpoints inserts n endpoints enrolled at enrolledAt and answers
// their ids.
func bulkEndpoints(t *testing.T, s *store.Store, orgID string, n int, enrolledAt time.Time) []string {
	t.Helper()
	ids, err := s.BulkEndpointsForTest(context.Background(), orgID, n, enrolledAt)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// timeCalls makes calls calls (the i-th given i), failing the test on an
// error, logs p50 and p99 of them under name and answers p99.
func timeCalls(t *testing.T, name string, calls int, call func(i int) error) time.Duration {
	t.Helper()
	var d []time.Duration
	for i := 0; i < calls; i++ {
		start := time.Now()
		if err := call(i); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d = append(d, time.Since(start))
	}
	p50, p99 := percentile(d, 0.50), percentile(d, 0.99)
	t.Logf("%-58s p50 %6.1f ms   p99 %6.1f ms", name, ms(p50), ms(p99))
	return p99
}

// readWhole reads a whole answer of c for path without decoding it (as a
// load tool measures).
func readWhole(ctx context.Context, c *client.Client, path string, q url.Values) error {
	resp, err := c.Raw(ctx, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func TestUpdatesListPerformance(t *testing.T) {
	s := perfStore(t, "load 10,000 endpoints × 100 updates and time GET /api/v1/updates")
	ctx := context.Background()
	o := newOrg(t, s, "Perf")
	const perEndpoint, catalog = 100, 400
	endpoints := perfScale(10000)
	start := time.Now()
	ids := bulkEndpoints(t, s, o.ID, endpoints, start)
	sources := []string{updates.SourceOSMandatory, updates.SourceOSOptional, updates.SourceApps}
	keys := make([]store.BulkKey, catalog)
	for k := range keys {
		src := sources[k%3]
		key := fmt.Sprintf("KB5%06d", k)
		if src == updates.SourceApps {
			key = fmt.Sprintf("Vendor.App%d@%d.0", k, k%7+1)
		}
		keys[k] = store.BulkKey{Key: key, Severity: updates.Severities[(k/3)%5], Source: src}
	}
	// Endpoint i misses keys i, i+4, i+8 … (mod 400): 2,500 endpoints per key.
	err := s.BulkUpdatesForTest(ctx, o.ID, ids, keys, func(i int) []int {
		out := make([]int, perEndpoint)
		for j := range out {
			out[j] = (i + 4*j) % catalog
		}
		return out
	}, start)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AnalyzeForTest(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: loaded %d rows in %s", s.Engine(), endpoints*perEndpoint, time.Since(start).Round(time.Second))
	c := perfServer(t, s, o)
	var worst time.Duration
	for _, ep := range []string{"", ids[endpoints/2]} {
		for _, sev := range append([]string{""}, updates.Severities...) {
			for _, src := range []string{"", "OS", "THIRD_PARTY"} {
				q := client.UpdateQuery{EndpointID: ep, Severity: sev, Source: src, PageQuery: client.PageQuery{Limit: 500}}
				first, err := c.ListUpdates(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				var times []time.Duration
				for _, off := range []int{0, first.Total / 2, max(first.Total-500, 0)} {
					q.Offset = off
					// Timed to the last byte of the answer, as a load tool
					// measures: the client's own decoding is left out.
					v := url.Values{"limit": {"500"}, "offset": {strconv.Itoa(off)}}
					for k, x := range map[string]string{"endpointId": ep, "severity": sev, "source": src} {
						if x != "" {
							v.Set(k, x)
						}
					}
					for range 34 {
						t0 := time.Now()
						resp, err := c.Raw(ctx, "/api/v1/updates", v)
						if err == nil {
							_, err = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
						times = append(times, time.Since(t0))
						if err != nil {
							t.Fatalf("%+v: %v", q, err)
						}
					}
					if page, err := c.ListUpdates(ctx, q); err != nil || page.Total != first.Total {
						t.Fatalf("%+v: total %d, %v", q, page.Total, err)
					}
				}
				p99 := percentile(times, 0.99)
				worst = max(worst, p99)
				t.Logf("endpointId=%-5v severity=%-11q source=%-13q total=%7d  p50=%6.2fms p99=%6.2fms", ep != "", sev, src, first.Total,
					float64(percentile(times, 0.5).Microseconds())/1000, float64(p99.Microseconds())/1000)
			}
		}
	}
	t.Logf("%s: worst p99 of GET /api/v1/updates?limit=500 over every filter combination: %.2fms", s.Engine(), float64(worst.Microseconds())/1000)
}

func TestGroupsListPerformance(t *testing.T) {
	s := perfStore(t, "time GET /api/v1/groups with 100 dynamic groups over 100,000 endpoints")
	ctx := context.Background()
	o := newOrg(t, s, "Perf")
	start := time.Now()
	if _, err := s.BulkEndpointsForTest(ctx, o.ID, perfScale(100000), start); err != nil {
		t.Fatal(err)
	}
	loaded := time.Now()
	for g := range 100 {
		// Groups of 1,000 to 33,000 members, over several fields.
		rules := [][]store.GroupRuleForTest{
			{{Field: "hostname", Op: "endsWith", Value: fmt.Sprintf("%02d", g)}},
			{{Field: "platform", Op: "equals", Value: "linux"}, {Field: "attr1", Op: "equals", Value: fmt.Sprintf("dept-%d", g%10)}},
			{{Field: "ipAddresses", Op: "startsWith", Value: fmt.Sprintf("10.0.%d.", g)}},
		}[g%3]
		if _, err := s.CreateGroup(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "group.create", TargetType: "group"}, o.ID,
			store.GroupChangeForTest(fmt.Sprintf("group %03d", g), g%2 == 0, rules), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s: 100,000 endpoints loaded in %s, 100 dynamic groups created in %s", s.Engine(), loaded.Sub(start).Round(time.Second),
		time.Since(loaded).Round(time.Second))
	c := perfServer(t, s, o)
	var times []time.Duration
	members := 0
	for range 200 {
		t0 := time.Now()
		list, err := c.ListGroups(ctx)
		times = append(times, time.Since(t0))
		if err != nil || list.Total != 102 {
			t.Fatalf("%v %d", err, list.Total)
		}
		members = 0
		for _, g := range list.Items {
			members += g.Members
		}
	}
	p99 := percentile(times, 0.99)
	t.Logf("%s: GET /api/v1/groups (102 groups, %d memberships): p50=%.2fms p99=%.2fms", s.Engine(), members,
		float64(percentile(times, 0.5).Microseconds())/1000, float64(p99.Microseconds())/1000)
}
