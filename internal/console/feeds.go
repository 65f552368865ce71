package console

import (
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulndb"
)

// The vulnerability feeds page: the state of the feeds (stored records,
// feed version and whether the fleet was matched against it, the last NVD
// sync, the last feed changes), and an upload of feed files imported by
// the code of patchd vulndb import (vulndb.ImportFiles).
//
// The feeds are the server's, shared by every organization: they decide
// every organization's vulnerability results. Every user with
// vulnerabilities.view reads their state; only instance operators upload
// (an organization's Administrator does not: it would change the results
// of the other organizations). An upload is recorded in the instance's
// Audit Trail with the operator and the client address.

// MaxFeedUpload bounds a feed upload (the NVD's yearly files, zipped, are
// far smaller).
const MaxFeedUpload = 512 << 20

// feedActions are the instance events that change the feeds.
var feedActions = []string{"vulndb.import", "vulndb.sync"}

type feedsData struct {
	Stored         store.FeedCounts
	FeedVersion    int64
	MatchedVersion int64
	NVDSynced      *time.Time
	// Changes are the last feed imports and syncs (who and from where is
	// shown to operators only).
	Changes []store.InstanceEvent
	Result  *vulndb.ImportResult
	Names   []string
	MaxMB   int
}

func (c *Console) feedsData(r *http.Request) (*feedsData, error) {
	ctx := r.Context()
	d := &feedsData{MaxMB: MaxFeedUpload >> 20}
	var err error
	if d.Stored, err = c.store.CountFeeds(ctx); err != nil {
		return nil, err
	}
	if d.FeedVersion, err = c.store.VulnState(ctx, store.StateFeedVersion); err != nil {
		return nil, err
	}
	if d.MatchedVersion, err = c.store.VulnState(ctx, store.StateMatchedVersion); err != nil {
		return nil, err
	}
	synced, err := c.store.VulnState(ctx, store.StateNVDSynced)
	if err != nil {
		return nil, err
	}
	if synced > 0 {
		t := time.UnixMilli(synced).UTC()
		d.NVDSynced = &t
	}
	if d.Changes, err = c.store.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: feedActions, Limit: 10}); err != nil {
		return nil, err
	}
	return d, nil
}

func (c *Console) feedsPage(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := c.feedsData(r)
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "feeds", "", "Vulnerability feeds", "feeds", d)
}

// feedUpload imports uploaded feed files and shows the result (the route
// bounds and parses the multipart body before the CSRF check). Each file
// is written to a temporary file first: a zip needs random access.
func (c *Console) feedUpload(w http.ResponseWriter, r *http.Request, s *session) error {
	if r.MultipartForm == nil {
		return c.done(w, r, "/console/feeds", badRequest("Choose one or more feed files."), "")
	}
	files := r.MultipartForm.File["file"]
	if len(files) == 0 {
		return c.done(w, r, "/console/feeds", badRequest("Choose one or more feed files."), "")
	}
	dir, err := os.MkdirTemp("", "patchd-upload-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var paths, names []string
	for i, fh := range files {
		p := filepath.Join(dir, fmt.Sprintf("upload-%d", i))
		if err := saveUpload(fh, p); err != nil {
			return err
		}
		paths, names = append(paths, p), append(names, filepath.Base(fh.Filename))
	}
	// The route lets instance operators only this far; the import records
	// the change in the instance's Audit Trail.
	res, err := vulndb.ImportFiles(r.Context(), c.store, paths, vulndb.By{Actor: s.actor(), Address: c.clientIP(r), Names: names})
	if dberr.IsUnavailable(err) {
		return err // not the files' fault: the same upload may be sent again
	}
	if err != nil {
		slog.WarnContext(r.Context(), "console: feed upload failed", "files", names, "err", err)
		msg := "The upload could not be imported: each file must be an NVD CVE API 2.0, CISA KEV, OSV, Microsoft MSRC CVRF or Microsoft 365 Apps release history document (plain, gzip or zip). The server log has the detail."
		return c.done(w, r, "/console/feeds", badRequest(msg), "")
	}
	d, err := c.feedsData(r)
	if err != nil {
		return err
	}
	d.Result, d.Names = &res, names
	return c.render(w, r, s, http.StatusOK, "feeds", "", "Vulnerability feeds", "feeds", d)
}

func saveUpload(fh *multipart.FileHeader, path string) error {
	in, err := fh.Open()
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
