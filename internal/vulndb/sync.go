package vulndb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulns/feeds"
)

// SyncConfig says where patchd vulndb sync downloads the feeds from. An
// empty URL skips that feed.
type SyncConfig struct {
	// NVDURL is the NVD CVE API 2.0 address (feeds.NVDAPIURL). The NVD is
	// synced incrementally: the CVEs modified since the last sync
	// (lastModStartDate), or since NVDSince on the first one.
	NVDURL    string
	NVDAPIKey string
	// NVDRateLimit is the pause between NVD requests (default 6 s, 0.6 s
	// with a key: the NVD's published limits).
	NVDRateLimit time.Duration
	// NVDPageSize is resultsPerPage (default and maximum 2000).
	NVDPageSize int
	// NVDSince starts the first sync (default 1999-01-01).
	NVDSince time.Time
	// NVDRetries and NVDBackoff tune retries of rate-limit answers
	// (defaults 5 and 30 s).
	NVDRetries int
	NVDBackoff time.Duration
	// KEVURL is the CISA KEV catalog (feeds.KEVURL).
	KEVURL string
	// EPSSURL is FIRST's daily EPSS file (feeds.EPSSURL), gzipped CSV,
	// downloaded whole on every sync.
	EPSSURL string
	// OSVURLs are OSV files: one record, an array, or a zip of records
	// (feeds.OSVBucketURL + "Debian/all.zip").
	OSVURLs []string
	// MSRCURL is the MSRC CVRF API (feeds.MSRCURL): the document of month
	// M is MSRCURL + "2025-Nov". Each sync fetches the months from two
	// before the last month synced (Microsoft revises recent documents) up
	// to the current one; the first sync starts at MSRCSince (default
	// twelve months back). A month not published yet (404) is skipped.
	MSRCURL   string
	MSRCSince time.Time
	// OfficeBuildsURL is a Microsoft 365 Apps release history
	// (feeds.OfficeBuild), downloaded whole on every sync.
	OfficeBuildsURL string
	HTTPClient      *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// SyncResult is what patchd vulndb sync prints.
type SyncResult struct {
	OK          bool             `json:"ok"`
	Counts      Counts           `json:"counts"`
	NVDFrom     *time.Time       `json:"nvdFrom,omitempty"`
	NVDUntil    *time.Time       `json:"nvdUntil,omitempty"`
	MSRCMonths  []string         `json:"msrcMonths,omitempty"`
	Stored      store.FeedCounts `json:"stored"`
	FeedVersion int64            `json:"feedVersion"`
}

// Sync downloads the configured feeds and stores them. The NVD part stores
// each window as it comes and records how far it got only at the end, so an
// interrupted sync repeats (idempotently) rather than skips.
//
// The sync is recorded as the instance event vulndb.sync of by (a sync
// that failed after storing records is recorded too, with its error).
func Sync(ctx context.Context, s *store.Store, cfg SyncConfig, by By) (SyncResult, error) {
	var res SyncResult
	if err := by.check(); err != nil {
		return res, err
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	before, err := s.CountFeeds(ctx)
	if err != nil {
		return res, err
	}
	var sources []string
	if cfg.KEVURL != "" {
		sources = append(sources, cfg.KEVURL)
	}
	if cfg.EPSSURL != "" {
		sources = append(sources, cfg.EPSSURL)
	}
	sources = append(sources, cfg.OSVURLs...)
	if cfg.MSRCURL != "" {
		sources = append(sources, cfg.MSRCURL)
	}
	if cfg.OfficeBuildsURL != "" {
		sources = append(sources, cfg.OfficeBuildsURL)
	}
	if cfg.NVDURL != "" {
		sources = append(sources, cfg.NVDURL)
	}
	summary := map[string]any{"sources": sources, "storedBefore": before}
	fail := func(partial Counts, err error) (SyncResult, error) {
		var stored Counts
		stored.add(res.Counts)
		stored.add(partial)
		return res, recordFailure(ctx, s, by, "vulndb.sync", summary, stored, err)
	}
	if cfg.KEVURL != "" {
		c, err := downloadAndImport(ctx, s, cfg.HTTPClient, cfg.KEVURL)
		if err != nil {
			return fail(c, fmt.Errorf("sync KEV: %w", err))
		}
		res.Counts.add(c)
	}
	if cfg.EPSSURL != "" {
		c, err := downloadAndImportOnly(ctx, s, cfg.HTTPClient, cfg.EPSSURL, feeds.Download, func(h feeds.Handler) feeds.Handler {
			return feeds.Handler{EPSS: h.EPSS}
		})
		if err == nil && c.EPSS == 0 {
			err = fmt.Errorf("%s is no EPSS file", cfg.EPSSURL)
		}
		if err != nil {
			return fail(c, fmt.Errorf("sync EPSS: %w", err))
		}
		res.Counts.add(c)
	}
	for _, u := range cfg.OSVURLs {
		c, err := downloadAndImport(ctx, s, cfg.HTTPClient, u)
		if err != nil {
			return fail(c, fmt.Errorf("sync OSV: %w", err))
		}
		res.Counts.add(c)
	}
	if cfg.MSRCURL != "" {
		c, months, err := syncMSRC(ctx, s, cfg, now().UTC())
		if err != nil {
			return fail(c, fmt.Errorf("sync MSRC: %w", err))
		}
		res.Counts.add(c)
		res.MSRCMonths = months
		summary["msrcMonths"] = months
	}
	if cfg.OfficeBuildsURL != "" {
		c, err := downloadOfficeBuilds(ctx, s, cfg.HTTPClient, cfg.OfficeBuildsURL)
		if err == nil && c.OfficeBuilds == 0 {
			err = fmt.Errorf("%s is no Microsoft 365 Apps release history", cfg.OfficeBuildsURL)
		}
		if err != nil {
			return fail(c, fmt.Errorf("sync Office builds: %w", err))
		}
		res.Counts.add(c)
	}
	if cfg.NVDURL != "" {
		synced, err := s.VulnState(ctx, store.StateNVDSynced)
		if err != nil {
			return fail(Counts{}, err)
		}
		since := cfg.NVDSince
		if since.IsZero() {
			since = time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		if synced > 0 {
			// A minute of overlap: records modified while the last sync
			// ran are fetched again rather than missed.
			since = time.UnixMilli(synced).UTC().Add(-time.Minute)
		}
		until := now().UTC()
		w := &writer{ctx: ctx, store: s}
		h := w.handler()
		client := &feeds.NVDClient{BaseURL: cfg.NVDURL, APIKey: cfg.NVDAPIKey, PageSize: cfg.NVDPageSize, RateLimit: cfg.NVDRateLimit,
			HTTPClient: cfg.HTTPClient, Retries: cfg.NVDRetries, Backoff: cfg.NVDBackoff, Rejected: h.Rejected}
		if err := client.Changes(ctx, since, until, h.CVE); err != nil {
			// The records of the batches flushed so far are stored.
			return fail(w.stored, fmt.Errorf("sync NVD: %w", err))
		}
		if err := w.flush(); err != nil {
			return fail(w.stored, fmt.Errorf("sync NVD: %w", err))
		}
		if err := s.SetVulnState(ctx, store.StateNVDSynced, until.UnixMilli()); err != nil {
			return fail(w.stored, err)
		}
		res.Counts.add(w.count)
		res.NVDFrom, res.NVDUntil = &since, &until
		summary["nvdFrom"], summary["nvdUntil"] = since, until
	}
	if res.Stored, err = s.CountFeeds(ctx); err != nil {
		return res, err
	}
	summary["ok"], summary["stored"] = true, res.Stored
	summary["cves"], summary["rejected"], summary["kev"], summary["osv"] = res.Counts.CVEs, res.Counts.Rejected, res.Counts.KEV, res.Counts.OSV
	summary["msrc"] = res.Counts.MSRC
	summary["officeBuilds"], summary["epss"] = res.Counts.OfficeBuilds, res.Counts.EPSS
	v, err := s.FinishFeedChange(ctx, by.event("vulndb.sync", summary))
	if err != nil {
		return res, err
	}
	res.FeedVersion = v
	res.OK = true
	return res, nil
}

// syncMSRC downloads and stores the MSRC documents of the months due (see
// SyncConfig.MSRCURL) and records the last month stored (vuln_state
// msrc_synced, as year*100+month) once all are stored.
func syncMSRC(ctx context.Context, s *store.Store, cfg SyncConfig, now time.Time) (Counts, []string, error) {
	var total Counts
	var months []string
	from := cfg.MSRCSince
	if from.IsZero() {
		from = now.AddDate(0, -12, 0)
	}
	synced, err := s.VulnState(ctx, store.StateMSRCSynced)
	if err != nil {
		return total, nil, err
	}
	if synced > 0 {
		from = time.Date(int(synced/100), time.Month(synced%100), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -2, 0)
	}
	m := time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)
	last := int64(0)
	for !m.After(now) {
		id := feeds.MSRCMonth(m)
		c, err := downloadAndImportWith(ctx, s, cfg.HTTPClient, cfg.MSRCURL+id, feeds.DownloadMSRC)
		var se *feeds.StatusError
		switch {
		case errors.As(err, &se) && se.StatusCode == http.StatusNotFound:
			// Not published (yet): the current month before its release.
		case err != nil:
			total.add(c)
			return total, months, fmt.Errorf("%s: %w", id, err)
		default:
			total.add(c)
			months = append(months, id)
			last = int64(m.Year())*100 + int64(m.Month())
		}
		m = m.AddDate(0, 1, 0)
	}
	if last > synced {
		if err := s.SetVulnState(ctx, store.StateMSRCSynced, last); err != nil {
			return total, months, err
		}
	}
	return total, months, nil
}

// downloadAndImport downloads a feed file to a temporary file (a zip needs
// random access) and stores its records; on an error it answers the
// records stored before it.
func downloadAndImport(ctx context.Context, s *store.Store, client *http.Client, url string) (Counts, error) {
	return downloadAndImportWith(ctx, s, client, url, feeds.Download)
}

// downloadOfficeBuilds is downloadAndImport of a Microsoft 365 Apps release
// history: a document of another kind stores nothing and is an error.
func downloadOfficeBuilds(ctx context.Context, s *store.Store, client *http.Client, url string) (Counts, error) {
	return downloadAndImportOnly(ctx, s, client, url, feeds.Download, func(h feeds.Handler) feeds.Handler {
		return feeds.Handler{OfficeBuilds: h.OfficeBuilds}
	})
}

func downloadAndImportWith(ctx context.Context, s *store.Store, client *http.Client, url string,
	download func(context.Context, *http.Client, string, io.Writer) error) (Counts, error) {
	return downloadAndImportOnly(ctx, s, client, url, download, nil)
}

// downloadAndImportOnly stores the records only passes on (nil: all).
func downloadAndImportOnly(ctx context.Context, s *store.Store, client *http.Client, url string,
	download func(context.Context, *http.Client, string, io.Writer) error, only func(feeds.Handler) feeds.Handler) (Counts, error) {
	f, err := os.CreateTemp("", "patchd-feed-*")
	if err != nil {
		return Counts{}, err
	}
	defer os.Remove(f.Name())
	err = download(ctx, client, url, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Counts{}, err
	}
	w := &writer{ctx: ctx, store: s}
	h := w.handler()
	if only != nil {
		h = only(h)
	}
	if _, err := feeds.ParseFile(f.Name(), h); err != nil {
		return w.stored, err
	}
	if err := w.flush(); err != nil {
		return w.stored, err
	}
	return w.count, nil
}

// RunSync syncs every interval under the store's 'sync' lease: the lease is
// taken for a whole interval and not released, so that of several replicas
// one syncs per interval (the holder renews it at its next tick; another
// replica takes over when it stops).
func RunSync(ctx context.Context, s *store.Store, holder string, interval time.Duration, cfg SyncConfig) {
	if interval <= 0 {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, err := s.ClaimVulnLease(ctx, store.LeaseSync, holder, time.Now(), interval)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				slog.Warn("vulnerability feed sync: lease", "err", err)
			}
		case ok:
			res, err := Sync(ctx, s, cfg, By{Actor: "server:" + holder})
			if err != nil {
				if ctx.Err() == nil {
					slog.Warn("vulnerability feed sync", "err", err)
				}
			} else {
				slog.Info("vulnerability feeds synced", "cves", res.Counts.CVEs, "kev", res.Counts.KEV, "epss", res.Counts.EPSS, "osv", res.Counts.OSV,
					"rejected", res.Counts.Rejected)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// ConfigFromFeeds turns the feed flags into a SyncConfig.
func ConfigFromFeeds(f config.Feeds) SyncConfig {
	c := SyncConfig{NVDURL: strings.TrimSpace(f.NVDURL), NVDAPIKey: strings.TrimSpace(f.NVDAPIKey), KEVURL: strings.TrimSpace(f.KEVURL),
		EPSSURL: strings.TrimSpace(f.EPSSURL)}
	for _, u := range strings.Split(f.OSVURLs, ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.OSVURLs = append(c.OSVURLs, u)
		}
	}
	c.MSRCURL = strings.TrimSpace(f.MSRCURL)
	c.OfficeBuildsURL = strings.TrimSpace(f.OfficeBuildsURL)
	if t, err := time.Parse("2006-01", strings.TrimSpace(f.MSRCSince)); err == nil {
		c.MSRCSince = t
	}
	return c
}
