// Package vulndb connects the vulnerability logic of internal/vulns to the
// store: it imports feed files and syncs them from their publishers
// (patchd vulndb import / sync, and the server's schedule), keeps the
// matcher's index built from the stored feeds, and recomputes the stored
// results: an endpoint after its inventory changed, the whole fleet after a
// feed changed (Matcher).
package vulndb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulns/feeds"
)

// batchSize is how many feed records one transaction stores.
const batchSize = 1000

// Counts counts feed records by format.
type Counts struct {
	CVEs     int `json:"cves"`
	Rejected int `json:"rejected"`
	KEV      int `json:"kev"`
	OSV      int `json:"osv"`
	// MSRC counts the CVEs of MSRC CVRF documents.
	MSRC int `json:"msrc"`
	// OfficeBuilds counts Microsoft 365 Apps releases.
	OfficeBuilds int `json:"officeBuilds"`
	// EPSS counts EPSS scores.
	EPSS int `json:"epss"`
}

func (c *Counts) add(o Counts) {
	c.EPSS += o.EPSS
	c.MSRC += o.MSRC
	c.OfficeBuilds += o.OfficeBuilds
	c.CVEs += o.CVEs
	c.Rejected += o.Rejected
	c.KEV += o.KEV
	c.OSV += o.OSV
}

// ImportResult is what patchd vulndb import prints.
type ImportResult struct {
	OK          bool              `json:"ok"`
	Files       int               `json:"files"`
	Documents   int               `json:"documents"`
	Counts      Counts            `json:"counts"`
	Formats     map[string]Counts `json:"formats"`
	Stored      store.FeedCounts  `json:"stored"`
	FeedVersion int64             `json:"feedVersion"`
}

// writer batches feed records into the store.
type writer struct {
	ctx   context.Context
	store *store.Store
	batch store.FeedBatch
	count Counts
	// stored counts the records of the batches stored so far (count also
	// has those of the batch being filled).
	stored Counts
}

func (w *writer) handler() feeds.Handler {
	return feeds.Handler{
		CVE: func(c feeds.CVE) error {
			w.batch.CVEs = append(w.batch.CVEs, c)
			w.count.CVEs++
			return w.maybeFlush()
		},
		Rejected: func(id string) error {
			w.batch.Rejected = append(w.batch.Rejected, id)
			w.count.Rejected++
			return w.maybeFlush()
		},
		KEV: func(k feeds.KEV) error {
			w.batch.KEVs = append(w.batch.KEVs, k)
			w.count.KEV++
			return w.maybeFlush()
		},
		OSV: func(a feeds.OSVAdvisory) error {
			w.batch.OSV = append(w.batch.OSV, a)
			w.count.OSV++
			return w.maybeFlush()
		},
		MSRC: func(d feeds.MSRCDocument) error {
			w.batch.MSRC = append(w.batch.MSRC, d)
			w.count.MSRC += len(d.Vulns)
			return w.maybeFlush()
		},
		OfficeBuilds: func(l []feeds.OfficeBuild) error {
			// The whole history in one transaction (a few hundred rows).
			w.batch.OfficeBuilds = append(w.batch.OfficeBuilds, l...)
			w.count.OfficeBuilds += len(l)
			return w.maybeFlush()
		},
		EPSS: func(e feeds.EPSS) error {
			w.batch.EPSS = append(w.batch.EPSS, e)
			w.count.EPSS++
			return w.maybeFlush()
		},
	}
}

func (w *writer) maybeFlush() error {
	if w.batch.Len() < batchSize {
		return nil
	}
	return w.flush()
}

func (w *writer) flush() error {
	if err := w.store.StoreFeeds(w.ctx, w.batch); err != nil {
		return err
	}
	msrc := 0
	for _, d := range w.batch.MSRC {
		msrc += len(d.Vulns)
	}
	w.stored.add(Counts{CVEs: len(w.batch.CVEs), Rejected: len(w.batch.Rejected), KEV: len(w.batch.KEVs), OSV: len(w.batch.OSV), MSRC: msrc,
		OfficeBuilds: len(w.batch.OfficeBuilds), EPSS: len(w.batch.EPSS)})
	w.batch = store.FeedBatch{}
	return nil
}

// By names who changes the feeds, for the instance's Audit Trail: every
// import and sync records an instance event (vulndb.import, vulndb.sync)
// with the actor, its address and what changed. Only instance operators
// change the feeds: the server's command line, the server's own schedule
// and console users who are instance operators.
type By struct {
	// Actor is user:<e-mail> (console), cli:<os user> (command line) or
	// server:<replica> (the schedule). Required.
	Actor string
	// Address is the console client's address; empty otherwise.
	Address string
	// Names are the file names to record (an upload's names rather than
	// its temporary files); default: the files' base names.
	Names []string
}

func (by By) check() error {
	if strings.TrimSpace(by.Actor) == "" {
		return errors.New("vulndb: a feed change needs an actor (By.Actor) for the instance audit trail")
	}
	return nil
}

// event starts the instance event of a feed change.
func (by By) event(action string, summary map[string]any) *store.InstanceEvent {
	return &store.InstanceEvent{Actor: by.Actor, Address: by.Address, Action: action, TargetType: "vulnerability-feeds", Summary: summary}
}

// recordFailure records a feed change that failed part way, when it had
// stored records already (counts) (they stay; the feed version is not bumped, so
// the fleet is matched against them with the next change). The error of
// the change is answered, joined with any error recording it.
func recordFailure(ctx context.Context, s *store.Store, by By, action string, summary map[string]any, counts Counts, cause error) error {
	if counts == (Counts{}) {
		return cause
	}
	summary["ok"] = false
	summary["error"] = truncate(cause.Error(), 500)
	summary["cves"], summary["rejected"], summary["kev"], summary["osv"] = counts.CVEs, counts.Rejected, counts.KEV, counts.OSV
	summary["msrc"], summary["epss"] = counts.MSRC, counts.EPSS
	if err := s.RecordInstanceEvent(context.WithoutCancel(ctx), by.event(action, summary)); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ImportFiles stores the records of feed files (NVD CVE API 2.0, CISA KEV,
// FIRST's EPSS CSV, OSV, MSRC CVRF or Microsoft 365 Apps release history; plain, gzip or zip; the format of each document is detected) and
// bumps the feed version once, so that the fleet is matched again. A
// re-import updates records in place; Rejected CVEs are deleted. The
// import is recorded as the instance event vulndb.import of by.
func ImportFiles(ctx context.Context, s *store.Store, files []string, by By) (ImportResult, error) {
	res := ImportResult{Formats: map[string]Counts{}}
	if err := by.check(); err != nil {
		return res, err
	}
	names := by.Names
	if len(names) != len(files) {
		names = make([]string, len(files))
		for i, f := range files {
			names[i] = filepath.Base(f)
		}
	}
	before, err := s.CountFeeds(ctx)
	if err != nil {
		return res, err
	}
	summary := map[string]any{"files": names, "storedBefore": before}
	for i, name := range files {
		w := &writer{ctx: ctx, store: s}
		var format feeds.Format
		h := w.handler()
		st, err := feeds.ParseFile(name, h)
		if err == nil {
			err = w.flush()
		}
		if err != nil {
			// The earlier files and batches are stored.
			var stored Counts
			stored.add(res.Counts)
			stored.add(w.stored)
			return res, recordFailure(ctx, s, by, "vulndb.import", summary, stored, fmt.Errorf("import %s: %w", names[i], err))
		}
		switch {
		case st.CVEs > 0 || st.Rejected > 0:
			format = feeds.FormatNVD
		case st.KEVs > 0:
			format = feeds.FormatKEV
		case st.EPSS > 0:
			format = feeds.FormatEPSS
		case st.OSV > 0:
			format = feeds.FormatOSV
		case st.MSRC > 0:
			format = feeds.FormatMSRC
		case st.Office > 0:
			format = feeds.FormatOfficeBuilds
		}
		res.Files++
		res.Documents += st.Documents
		res.Counts.add(w.count)
		if format != feeds.FormatUnknown {
			c := res.Formats[string(format)]
			c.add(w.count)
			res.Formats[string(format)] = c
		}
	}
	if res.Stored, err = s.CountFeeds(ctx); err != nil {
		return res, err
	}
	summary["ok"], summary["documents"], summary["stored"] = true, res.Documents, res.Stored
	summary["cves"], summary["rejected"], summary["kev"], summary["osv"] = res.Counts.CVEs, res.Counts.Rejected, res.Counts.KEV, res.Counts.OSV
	summary["msrc"] = res.Counts.MSRC
	summary["officeBuilds"], summary["epss"] = res.Counts.OfficeBuilds, res.Counts.EPSS
	v, err := s.FinishFeedChange(ctx, by.event("vulndb.import", summary))
	if err != nil {
		return res, err
	}
	res.FeedVersion = v
	res.OK = true
	return res, nil
}
