// Package vulndb connects the vulnerability logic of internal/vulns to the
// store: it imports feed files and syncs them from their publishers
// (patchd vulndb import / sync, and the server's schedule), keeps the
// matcher's index built from the stored feeds, and recomputes the stored
// results: an endpoint after its inventory changed, the whole fleet after a
// feed changed (Matcher).
package vulndb

import (
	"context"
	"fmt"

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
}

func (c *Counts) add(o Counts) {
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
	w.batch = store.FeedBatch{}
	return nil
}

// ImportFiles stores the records of feed files (NVD CVE API 2.0, CISA KEV
// or OSV; plain, gzip or zip; the format of each document is detected) and
// bumps the feed version once, so that the fleet is matched again. A
// re-import updates records in place; Rejected CVEs are deleted.
func ImportFiles(ctx context.Context, s *store.Store, files []string) (ImportResult, error) {
	res := ImportResult{Formats: map[string]Counts{}}
	for _, name := range files {
		w := &writer{ctx: ctx, store: s}
		var format feeds.Format
		h := w.handler()
		st, err := feeds.ParseFile(name, h)
		if err == nil {
			err = w.flush()
		}
		if err != nil {
			return res, fmt.Errorf("import %s: %w", name, err)
		}
		switch {
		case st.CVEs > 0 || st.Rejected > 0:
			format = feeds.FormatNVD
		case st.KEVs > 0:
			format = feeds.FormatKEV
		case st.OSV > 0:
			format = feeds.FormatOSV
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
	v, err := s.BumpFeedVersion(ctx)
	if err != nil {
		return res, err
	}
	res.FeedVersion = v
	if res.Stored, err = s.CountFeeds(ctx); err != nil {
		return res, err
	}
	res.OK = true
	return res, nil
}
