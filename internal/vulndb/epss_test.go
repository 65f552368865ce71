package vulndb_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/vulndb"
)

const epssFixture = testdata + "epss_scores-2025-08-15.csv"

// gzipFile writes a gzip copy of src into dir under name.
func gzipFile(t *testing.T, src, dir, name string) string {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	out := filepath.Join(dir, name)
	if err := os.WriteFile(out, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// FIRST's EPSS file, imported off-line as its daily gzipped CSV and synced
// from its address through the same download and parser, is stored per CVE
// with the file's model version and date; a file that is no EPSS file at
// the EPSS address fails the sync.
func TestEPSSImportAndSync(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	gz := gzipFile(t, epssFixture, t.TempDir(), "epss_scores-2025-08-15.csv.gz")
	res, err := vulndb.ImportFiles(ctx, s, []string{gz}, vulndb.By{Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts != (vulndb.Counts{EPSS: 4}) || res.Formats["epss"].EPSS != 4 || res.Stored != (store.FeedCounts{EPSS: 4}) {
		t.Fatalf("import = %+v", res)
	}
	facts, err := s.CVEFacts(ctx, []string{"CVE-2024-9680", "CVE-2025-0411", "CVE-2023-4863"})
	if err != nil {
		t.Fatal(err)
	}
	if f := facts["CVE-2024-9680"]; f.EPSS == nil || *f.EPSS != 0.12889 {
		t.Errorf("CVE-2024-9680 EPSS = %+v", f)
	}
	if f := facts["CVE-2025-0411"]; f.EPSS == nil || *f.EPSS != 0.43908 {
		t.Errorf("CVE-2025-0411 EPSS = %+v", f)
	}
	if _, ok := facts["CVE-2023-4863"]; ok {
		t.Errorf("CVE-2023-4863 has facts without any feed: %+v", facts["CVE-2023-4863"])
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /epss_scores-current.csv.gz", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, gz) })
	mux.HandleFunc("GET /kev.json", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, fixtures[1]) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg := vulndb.ConfigFromFeeds(config.Feeds{EPSSURL: srv.URL + "/epss_scores-current.csv.gz"})
	sync, err := vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: "server:replica-1"})
	if err != nil {
		t.Fatal(err)
	}
	if sync.Counts != (vulndb.Counts{EPSS: 4}) || sync.Stored.EPSS != 4 {
		t.Errorf("sync = %+v", sync)
	}
	events, err := s.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: []string{"vulndb.sync"}})
	if err != nil || len(events) != 1 || events[0].Summary["epss"] != float64(4) {
		t.Errorf("the sync's instance event: %+v %v", events, err)
	}
	cfg.EPSSURL = srv.URL + "/kev.json"
	if _, err := vulndb.Sync(ctx, s, cfg, vulndb.By{Actor: "test"}); err == nil || !strings.Contains(err.Error(), "no EPSS file") {
		t.Errorf("sync of a KEV catalog as EPSS: %v", err)
	}
	// A damaged row is an error naming its line.
	bad := filepath.Join(t.TempDir(), "epss.csv")
	os.WriteFile(bad, []byte("#model_version:v2025.03.14,score_date:2025-08-15T00:00:00+0000\ncve,epss,percentile\nCVE-2024-9680,1.7,0.9\n"), 0o600)
	if _, err := vulndb.ImportFiles(ctx, s, []string{bad}, vulndb.By{Actor: "test"}); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("import of a score of 1.7: %v", err)
	}
}
