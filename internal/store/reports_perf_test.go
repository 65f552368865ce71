package store_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/reports"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/sim"
)

// rssKB is the resident set size of this process (the server runs in it).
func rssKB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// TestReportsPerformance loads 10,000 endpoints × 150 applications (1.5
// million software rows), missing updates and the datasets of simulated
// endpoints, streams installed-software as CSV while sampling the RSS, and
// times every JSON report. PATCHD_PERF=1 runs it.
func TestReportsPerformance(t *testing.T) {
	if os.Getenv("PATCHD_PERF") == "" {
		t.Skip("PATCHD_PERF=1 runs the performance tests")
	}
	ctx := context.Background()
	s := storetest.Open(t)
	o, err := admin.CreateOrg(ctx, s, "Perf", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	n := perfScale(10000)
	now := time.Now()
	start := time.Now()
	ids, err := s.BulkEndpointsForTest(ctx, o.ID, n, now.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BulkSoftwareForTest(ctx, o.ID, ids, 1000, 150, now); err != nil {
		t.Fatal(err)
	}
	keys := []store.BulkKey{{"KB5046617", "Critical", "OS - Mandatory"}, {"KB5046613", "Important", "OS - Mandatory"},
		{"Mozilla.Firefox@133.0", "Unspecified", "Applications"}, {"Google.Chrome@131.0", "Unspecified", "Applications"}}
	if err := s.BulkUpdatesForTest(ctx, o.ID, ids, keys, func(i int) []int { return []int{i % 4, (i + 1) % 4} }, now); err != nil {
		t.Fatal(err)
	}
	sets := make([]map[string][]map[string]any, 60)
	for i := range sets {
		sets[i] = sim.Generate(1, i).Datasets
	}
	if err := s.BulkDatasetsForTest(ctx, o.ID, ids, sets, now); err != nil {
		t.Fatal(err)
	}
	if err := s.AnalyzeForTest(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d endpoints × 150 applications, 2 missing updates each, datasets of 60 simulated endpoints in %s", n, time.Since(start).Round(time.Second))
	c := perfServer(t, s, o)

	// CSV of installed-software, RSS sampled every 50 ms.
	runtime.GC()
	before := rssKB(t)
	var peak atomic.Int64
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
				if r := int64(rssKB(t)); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	start = time.Now()
	resp, err := c.ReportCSV(ctx, "installed-software")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	var bytesRead int64
	for {
		chunk, err := br.ReadSlice('\n')
		bytesRead += int64(len(chunk))
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			lines++
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			t.Fatal(err)
		}
	}
	resp.Body.Close()
	elapsed := time.Since(start)
	close(done)
	rows := lines - 1
	t.Logf("installed-software CSV: %d rows, %.0f MB in %s = %.0f rows/s; RSS before %d MB, peak during %d MB",
		rows, float64(bytesRead)/1e6, elapsed.Round(time.Millisecond), float64(rows)/elapsed.Seconds(), before/1024, peak.Load()/1024)
	if rows != n*150 {
		t.Errorf("CSV has %d rows, want %d", rows, n*150)
	}

	// Every JSON report, complete, then its first 1,000 rows.
	for _, d := range reports.Catalog() {
		var sizes [2]int
		var times [2]time.Duration
		for i, q := range []url.Values{nil, {"limit": {"1000"}}} {
			start := time.Now()
			resp, err := c.Raw(ctx, "/api/v1/reports/"+d.Key, q)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			io.Copy(&buf, resp.Body)
			resp.Body.Close()
			times[i], sizes[i] = time.Since(start), buf.Len()
		}
		t.Logf("JSON %-30s %8.2f s %9.1f MB | limit=1000 %6.2f s", d.Key, times[0].Seconds(), float64(sizes[0])/1e6, times[1].Seconds())
	}
}
