package store_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
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

// loadReportsFleet bulk-loads the fleet of TestReportsPerformance into s
// and answers its organization.
func loadReportsFleet(t *testing.T, s *store.Store, n int) store.Org {
	ctx := context.Background()
	o, err := admin.CreateOrg(ctx, s, "Perf", "UTC")
	if err != nil {
		t.Fatal(err)
	}
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
	return o
}

// memSample is the process's resident set and what the Go runtime holds
// of it: the heap's live and garbage objects and all the memory the
// runtime has mapped and not returned. The rest of the RSS is SQLite's
// (modernc's allocator maps its own memory) and the binary.
type memSample struct {
	rss, heapObjects, goMapped uint64
}

var memMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/total:bytes", "/memory/classes/heap/released:bytes"}

func sampleMem(t *testing.T) memSample {
	m := make([]metrics.Sample, len(memMetrics))
	for i, name := range memMetrics {
		m[i].Name = name
	}
	metrics.Read(m)
	return memSample{rss: uint64(rssKB(t)) << 10, heapObjects: m[0].Value.Uint64(), goMapped: m[1].Value.Uint64() - m[2].Value.Uint64()}
}

func (m memSample) String() string {
	return fmt.Sprintf("RSS %d MB (Go heap objects %d MB, Go mapped %d MB, rest %d MB)",
		m.rss>>20, m.heapObjects>>20, m.goMapped>>20, (m.rss-min(m.rss, m.goMapped))>>20)
}

// cpuTime is the CPU time this process (server and client) has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestReportsPerformance loads 10,000 endpoints × 150 applications (1.5
// million software rows), missing updates and the datasets of simulated
// endpoints, streams installed-software as CSV while sampling the memory,
// and times every JSON report. PATCHD_PERF=1 runs it;
// PATCHD_PERF_DB=file keeps the loaded SQLite database in file and reuses
// it on the next run (to iterate on the reports without loading again);
// PATCHD_PERF_REPORTS=key,key times only those JSON reports.
func TestReportsPerformance(t *testing.T) {
	if os.Getenv("PATCHD_PERF") == "" {
		t.Skip("PATCHD_PERF=1 runs the performance tests")
	}
	ctx := context.Background()
	n := perfScale(10000)
	var s *store.Store
	var o store.Org
	if file := os.Getenv("PATCHD_PERF_DB"); file != "" {
		if _, err := os.Stat(file); err != nil {
			loaded, err := store.Open(ctx, "sqlite:"+file, "", store.Options{MaxConns: 8, SecretKey: storetest.SecretKey})
			if err != nil {
				t.Fatal(err)
			}
			loadReportsFleet(t, loaded, n)
			if err := loaded.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Logf("reusing the fleet loaded in %s", file)
		}
		// The run changes the database (its credential): it works on a copy.
		work := t.TempDir() + "/test.db"
		if err := copyFile(work, file); err != nil {
			t.Fatal(err)
		}
		var err error
		if s, err = store.Open(ctx, "sqlite:"+work, "", store.Options{MaxConns: 8, SecretKey: storetest.SecretKey}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if o, err = s.FindOrg(ctx, "Perf"); err != nil {
			t.Fatal(err)
		}
	} else {
		s = storetest.Open(t)
		o = loadReportsFleet(t, s, n)
	}
	c := perfServer(t, s, o)

	// CSV of installed-software, the memory sampled every 50 ms. The
	// loaders' garbage is collected and returned to the system first, so
	// that "before" is what the server holds, not what loading left.
	runtime.GC()
	debug.FreeOSMemory()
	before := sampleMem(t)
	var samples []memSample // every 50 ms
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
				samples = append(samples, sampleMem(t))
			}
		}
	}()
	start, cpu := time.Now(), cpuTime()
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
	elapsed, cpu := time.Since(start), cpuTime()-cpu
	close(done)
	<-sampled
	rows := lines - 1
	t.Logf("installed-software CSV: %d rows, %.0f MB in %s = %.0f rows/s (CPU %.2f s, server and client)",
		rows, float64(bytesRead)/1e6, elapsed.Round(time.Millisecond), float64(rows)/elapsed.Seconds(), cpu.Seconds())
	t.Logf("memory before the CSV stream: %s", before)
	if len(samples) > 0 {
		peak := before
		for _, m := range samples {
			if m.rss > peak.rss {
				peak = m
			}
		}
		t.Logf("memory at the RSS peak during: %s", peak)
		// Flat: the RSS reached early in the stream is the RSS at its end.
		var marks []string
		for _, f := range []int{1, 2, 5, 9} {
			marks = append(marks, fmt.Sprintf("%d%%: %d MB", f*10, samples[min(len(samples)-1, len(samples)*f/10)].rss>>20))
		}
		t.Logf("RSS through the stream: %s", strings.Join(marks, ", "))
	}
	if rows != n*150 {
		t.Errorf("CSV has %d rows, want %d", rows, n*150)
	}

	// Every JSON report, complete, then its first 1,000 rows.
	only := map[string]bool{}
	for _, k := range strings.Split(os.Getenv("PATCHD_PERF_REPORTS"), ",") {
		if k != "" {
			only[k] = true
		}
	}
	var slow []string
	for _, d := range reports.Catalog() {
		if len(only) > 0 && !only[d.Key] {
			continue
		}
		var sizes [2]int
		var times [2]time.Duration
		var cpu time.Duration
		for i, q := range []url.Values{nil, {"limit": {"1000"}}} {
			start, cpu0 := time.Now(), cpuTime()
			resp, err := c.Raw(ctx, "/api/v1/reports/"+d.Key, q)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			times[i], sizes[i] = time.Since(start), int(n)
			if i == 0 {
				cpu = cpuTime() - cpu0
			}
		}
		t.Logf("JSON %-30s %8.2f s (CPU %5.2f s) %9.1f MB | limit=1000 %6.2f s", d.Key, times[0].Seconds(), cpu.Seconds(), float64(sizes[0])/1e6, times[1].Seconds())
		if times[0] > 2*time.Second {
			slow = append(slow, fmt.Sprintf("%s %.2f s", d.Key, times[0].Seconds()))
		}
	}
	t.Logf("JSON reports complete over 2 s: %d %v", len(slow), slow)
}
