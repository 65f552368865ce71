package feeds

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestDownloadFixture(t *testing.T) {
	kev := readFixture(t, "kev-subset.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/feeds/known_exploited_vulnerabilities.json" {
			http.NotFound(w, r)
			return
		}
		w.Write(kev)
	}))
	defer srv.Close()
	var buf bytes.Buffer
	if err := Download(context.Background(), srv.Client(), srv.URL+"/feeds/known_exploited_vulnerabilities.json", &buf); err != nil {
		t.Fatal(err)
	}
	var got []KEV
	if f, err := Parse(&buf, Handler{KEV: func(k KEV) error { got = append(got, k); return nil }}); err != nil || f != FormatKEV || len(got) != 10 {
		t.Fatalf("parse downloaded catalog: %q %v, %d entries", f, err, len(got))
	}
	err := Download(context.Background(), nil, srv.URL+"/missing", &buf)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Errorf("missing file: %v", err)
	}
}

// nvdFixtureServer serves the fixture's CVEs as NVD API pages of the
// requested size, answering 503 to the first request (to exercise the
// retry), and records the queries it got.
type nvdFixtureServer struct {
	t       *testing.T
	items   []json.RawMessage
	apiKey  string
	mu      sync.Mutex
	queries []map[string]string
	failed  bool
}

func (s *nvdFixtureServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.failed {
		s.failed = true
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	if got := r.Header.Get("apiKey"); got != s.apiKey {
		s.t.Errorf("apiKey header = %q, want %q", got, s.apiKey)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	rec := map[string]string{}
	for _, k := range []string{"lastModStartDate", "lastModEndDate", "startIndex", "resultsPerPage"} {
		rec[k] = q.Get(k)
	}
	s.queries = append(s.queries, rec)
	start, _ := strconv.Atoi(q.Get("startIndex"))
	size, _ := strconv.Atoi(q.Get("resultsPerPage"))
	end := min(start+size, len(s.items))
	page := s.items[start:end]
	body, _ := json.Marshal(map[string]any{
		"resultsPerPage": len(page), "startIndex": start, "totalResults": len(s.items),
		"format": "NVD_CVE", "version": "2.0", "vulnerabilities": page,
	})
	w.Write(body)
}

func TestNVDClientPages(t *testing.T) {
	var doc struct {
		Vulnerabilities []json.RawMessage `json:"vulnerabilities"`
	}
	if err := json.Unmarshal(readFixture(t, "nvd-subset.json"), &doc); err != nil {
		t.Fatal(err)
	}
	srv := &nvdFixtureServer{t: t, items: doc.Vulnerabilities, apiKey: "k-123"}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	c := &NVDClient{BaseURL: ts.URL + "/rest/json/cves/2.0", APIKey: "k-123", PageSize: 10,
		RateLimit: time.Millisecond, Backoff: time.Millisecond, HTTPClient: ts.Client()}
	since := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	until := since.Add(10 * 24 * time.Hour)
	var ids []string
	if err := c.Changes(context.Background(), since, until, func(c CVE) error { ids = append(ids, c.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 18 {
		t.Errorf("got %d CVEs over two pages, want 18 (19 minus the rejected one)", len(ids))
	}
	want := []map[string]string{
		{"lastModStartDate": "2024-01-01T00:00:00.000+00:00", "lastModEndDate": "2024-01-11T00:00:00.000+00:00", "startIndex": "0", "resultsPerPage": "10"},
		{"lastModStartDate": "2024-01-01T00:00:00.000+00:00", "lastModEndDate": "2024-01-11T00:00:00.000+00:00", "startIndex": "10", "resultsPerPage": "10"},
	}
	if fmt.Sprint(srv.queries) != fmt.Sprint(want) {
		t.Errorf("queries:\n got %v\nwant %v", srv.queries, want)
	}
}

func TestNVDClientWindows(t *testing.T) {
	var mu sync.Mutex
	var windows [][2]string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("apiKey") != "" {
			t.Error("apiKey sent without a key")
		}
		mu.Lock()
		windows = append(windows, [2]string{r.URL.Query().Get("lastModStartDate"), r.URL.Query().Get("lastModEndDate")})
		mu.Unlock()
		w.Write([]byte(`{"resultsPerPage":0,"startIndex":0,"totalResults":0,"format":"NVD_CVE","vulnerabilities":[]}`))
	}))
	defer ts.Close()
	c := &NVDClient{BaseURL: ts.URL, RateLimit: time.Millisecond}
	since := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	until := since.AddDate(0, 0, 300)
	if err := c.Changes(context.Background(), since, until, func(CVE) error { return nil }); err != nil {
		t.Fatal(err)
	}
	want := [][2]string{
		{"2023-01-01T00:00:00.000+00:00", "2023-05-01T00:00:00.000+00:00"},
		{"2023-05-01T00:00:00.000+00:00", "2023-08-29T00:00:00.000+00:00"},
		{"2023-08-29T00:00:00.000+00:00", "2023-10-28T00:00:00.000+00:00"},
	}
	if fmt.Sprint(windows) != fmt.Sprint(want) {
		t.Errorf("windows:\n got %v\nwant %v", windows, want)
	}
}

func TestNVDClientGivesUp(t *testing.T) {
	calls := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(http.StatusForbidden)
	}))
	defer ts.Close()
	c := &NVDClient{BaseURL: ts.URL, RateLimit: time.Millisecond, Backoff: time.Millisecond, Retries: 2}
	now := time.Now()
	err := c.Changes(context.Background(), now.Add(-time.Hour), now, func(CVE) error { return nil })
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusForbidden || calls != 3 {
		t.Errorf("got %v after %d calls, want HTTP 403 after 3", err, calls)
	}

	calls = 0
	ts2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer ts2.Close()
	c.BaseURL = ts2.URL
	if err := c.Changes(context.Background(), now.Add(-time.Hour), now, func(CVE) error { return nil }); err == nil || calls != 1 {
		t.Errorf("400 must not be retried: %v after %d calls", err, calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.BaseURL = ts.URL
	if err := c.Changes(ctx, now.Add(-time.Hour), now, func(CVE) error { return nil }); err == nil {
		t.Error("cancelled context answered no error")
	}
}
