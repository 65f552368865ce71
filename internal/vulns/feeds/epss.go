package feeds

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// EPSSURL is FIRST's daily file of every CVE's EPSS score, gzipped CSV
// (the file of a day is epss_scores-YYYY-MM-DD.csv.gz beside it).
const EPSSURL = "https://epss.empiricalsecurity.com/epss_scores-current.csv.gz"

// EPSS is one row of FIRST's Exploit Prediction Scoring System file: the
// probability (0-1) that the CVE is exploited in the next 30 days, and its
// percentile among all scored CVEs.
type EPSS struct {
	CVEID        string
	Score        float64
	Percentile   float64
	ModelVersion string    // from the file's comment line ("v2025.03.14"), "" without one
	ScoreDate    time.Time // likewise (midnight UTC of the scored day)
}

// isEPSS tells whether a document starts as an EPSS file: its comment
// line ("#model_version:…") or its CSV header ("cve,epss,percentile").
func isEPSS(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	return bytes.HasPrefix(head, []byte("#model_version:")) || bytes.HasPrefix(bytes.ToLower(head), []byte("cve,epss,percentile"))
}

// ParseEPSS streams an EPSS CSV file (about 300,000 rows) to fn: an
// optional comment line "#model_version:v2025.03.14,score_date:
// 2025-08-15T00:00:00+0000", the header "cve,epss,percentile", then one row
// per CVE. A row that is not a CVE with two numbers in 0-1 is an error
// naming its line.
func ParseEPSS(r io.Reader, fn func(EPSS) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var model string
	var date time.Time
	header := false
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "#"):
			for _, f := range strings.Split(strings.TrimPrefix(t, "#"), ",") {
				k, v, _ := strings.Cut(f, ":")
				switch strings.TrimSpace(k) {
				case "model_version":
					model = strings.TrimSpace(v)
				case "score_date":
					v = strings.TrimSpace(v)
					if d, err := time.Parse("2006-01-02T15:04:05-0700", v); err == nil {
						date = d.UTC()
					} else {
						date = parseTime(v)
					}
				}
			}
			continue
		case !header:
			if !strings.HasPrefix(strings.ToLower(t), "cve,epss,percentile") {
				return fmt.Errorf("epss: line %d: want the header cve,epss,percentile, got %q", line, truncate(t, 80))
			}
			header = true
			continue
		}
		cols := strings.Split(t, ",")
		if len(cols) < 3 {
			return fmt.Errorf("epss: line %d: want cve,epss,percentile, got %q", line, truncate(t, 80))
		}
		id := strings.ToUpper(strings.TrimSpace(cols[0]))
		score, err1 := strconv.ParseFloat(strings.TrimSpace(cols[1]), 64)
		pct, err2 := strconv.ParseFloat(strings.TrimSpace(cols[2]), 64)
		if !strings.HasPrefix(id, "CVE-") || err1 != nil || err2 != nil || score < 0 || score > 1 || pct < 0 || pct > 1 {
			return fmt.Errorf("epss: line %d: not a CVE with an EPSS score and percentile in 0-1: %q", line, truncate(t, 80))
		}
		if err := fn(EPSS{CVEID: id, Score: score, Percentile: pct, ModelVersion: model, ScoreDate: date}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("epss: %w", err)
	}
	if !header {
		return fmt.Errorf("epss: no header cve,epss,percentile")
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
