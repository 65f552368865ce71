package feeds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Well-known feed addresses.
const (
	NVDAPIURL = "https://services.nvd.nist.gov/rest/json/cves/2.0"
	KEVURL    = "https://www.cisa.gov/sites/default/files/feeds/known_exploited_vulnerabilities.json"
	// OSVBucketURL + ecosystem + "/all.zip", e.g. ".../Debian/all.zip".
	OSVBucketURL = "https://osv-vulnerabilities.storage.googleapis.com/"
	// MSRCURL + "2025-Nov" is the MSRC CVRF document of a month.
	MSRCURL = "https://api.msrc.microsoft.com/cvrf/v3.0/cvrf/"
)

// MSRCMonth is the document id of the month of t ("2025-Nov").
func MSRCMonth(t time.Time) string { return t.UTC().Format("2006-Jan") }

// DownloadMSRC copies the MSRC CVRF document at url into dst, asking for
// its JSON form. A month not published yet answers a *StatusError 404.
func DownloadMSRC(ctx context.Context, client *http.Client, url string, dst io.Writer) error {
	_, err := get(ctx, client, url, http.Header{"Accept": {"application/json"}}, dst)
	return err
}

// StatusError is answered when a server replies with a status other than
// 200.
type StatusError struct {
	URL        string
	StatusCode int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("feeds: GET %s: HTTP %d", e.URL, e.StatusCode)
}

// Download copies the body of url into dst. A nil client is
// http.DefaultClient. Statuses other than 200 are a *StatusError.
func Download(ctx context.Context, client *http.Client, url string, dst io.Writer) error {
	_, err := get(ctx, client, url, nil, dst)
	return err
}

func get(ctx context.Context, client *http.Client, rawURL string, header http.Header, dst io.Writer) (int64, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return 0, fmt.Errorf("feeds: GET %s: %w", rawURL, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "patchd-vulndb")
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("feeds: GET %s: %w", redact(rawURL), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return 0, &StatusError{URL: redact(rawURL), StatusCode: resp.StatusCode}
	}
	n, err := io.Copy(dst, resp.Body)
	if err != nil {
		return n, fmt.Errorf("feeds: GET %s: %w", redact(rawURL), err)
	}
	return n, nil
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}

// NVDClient fetches CVEs changed in a period from the NVD CVE API 2.0.
// The zero value talks to the public API without a key.
type NVDClient struct {
	BaseURL    string        // default NVDAPIURL
	APIKey     string        // sent as the "apiKey" header when set
	PageSize   int           // resultsPerPage, default and maximum 2000
	RateLimit  time.Duration // pause between requests; default 6 s, or 0.6 s with a key
	HTTPClient *http.Client  // default http.DefaultClient
	// Retries is how many times a 403, 429 or 503 answer (NVD's rate limit
	// and overload replies) or a transport error is retried; default 5.
	Retries int
	// Backoff is the first pause before a retry, doubled each time;
	// default 30 s.
	Backoff time.Duration
	// Rejected, when set, is told the id of every CVE of the period that
	// the NVD marks Rejected.
	Rejected func(id string) error
}

// MaxNVDWindow is the longest lastModified period the API accepts in one
// query.
const MaxNVDWindow = 120 * 24 * time.Hour

// Changes streams to fn every CVE modified in [since, until), querying in
// windows of at most 120 days and following the pages of each window.
func (c *NVDClient) Changes(ctx context.Context, since, until time.Time, fn func(CVE) error) error {
	if !since.Before(until) {
		return nil
	}
	first := true
	for start := since; start.Before(until); start = start.Add(MaxNVDWindow) {
		end := start.Add(MaxNVDWindow)
		if end.After(until) {
			end = until
		}
		index := 0
		for {
			if !first {
				if err := sleep(ctx, c.rateLimit()); err != nil {
					return err
				}
			}
			first = false
			page, err := c.fetchPage(ctx, start, end, index, fn)
			if err != nil {
				return err
			}
			if page.ResultsPerPage <= 0 || page.StartIndex+page.ResultsPerPage >= page.TotalResults {
				break
			}
			index = page.StartIndex + page.ResultsPerPage
		}
	}
	return nil
}

func (c *NVDClient) rateLimit() time.Duration {
	if c.RateLimit > 0 {
		return c.RateLimit
	}
	if c.APIKey != "" {
		return 600 * time.Millisecond
	}
	return 6 * time.Second
}

// nvdTime formats a time as the API expects: ISO 8601 with milliseconds
// and an explicit offset.
func nvdTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000-07:00") }

// PageURL answers the address of one page of the changes in [start, end).
func (c *NVDClient) PageURL(start, end time.Time, index int) string {
	base := c.BaseURL
	if base == "" {
		base = NVDAPIURL
	}
	size := c.PageSize
	if size <= 0 || size > 2000 {
		size = 2000
	}
	q := url.Values{}
	q.Set("lastModStartDate", nvdTime(start))
	q.Set("lastModEndDate", nvdTime(end))
	q.Set("startIndex", strconv.Itoa(index))
	q.Set("resultsPerPage", strconv.Itoa(size))
	return base + "?" + q.Encode()
}

// fetchPage downloads one page completely (so that a retry never hands fn
// the same CVE twice) and then parses it.
func (c *NVDClient) fetchPage(ctx context.Context, start, end time.Time, index int, fn func(CVE) error) (NVDPage, error) {
	u := c.PageURL(start, end, index)
	var header http.Header
	if c.APIKey != "" {
		header = http.Header{"apiKey": {c.APIKey}}
	}
	retries := c.Retries
	if retries <= 0 {
		retries = 5
	}
	backoff := c.Backoff
	if backoff <= 0 {
		backoff = 30 * time.Second
	}
	var buf bytes.Buffer
	for attempt := 0; ; attempt++ {
		buf.Reset()
		_, err := get(ctx, c.HTTPClient, u, header, &buf)
		if err == nil {
			break
		}
		if attempt >= retries || !retryable(ctx, err) {
			return NVDPage{}, err
		}
		if err := sleep(ctx, backoff<<attempt); err != nil {
			return NVDPage{}, err
		}
	}
	page, err := parseNVD(&buf, fn, c.Rejected)
	if err != nil {
		return page, err
	}
	return page, nil
}

func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		switch se.StatusCode {
		case http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return true // transport errors
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
