package apitest

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulndb"
)

// ImportDemoFeeds imports the demo feeds (demo/feeds: real NVD, KEV, MSRC,
// Microsoft 365 and EPSS records, links to internal/vulns/testdata) into
// s, as `patchd vulndb import demo/feeds/*` does.
func ImportDemoFeeds(t testing.TB, s *store.Store) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(here), "..", "..", "demo", "feeds", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the demo feeds: %v", err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Ext(f) == ".md" })
	if _, err := vulndb.ImportFiles(context.Background(), s, files, vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
}
