package feeds

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The NVD CVE API 2.0 document, only the fields we read.
type nvdCVE struct {
	ID           string `json:"id"`
	Published    string `json:"published"`
	LastModified string `json:"lastModified"`
	VulnStatus   string `json:"vulnStatus"`
	Descriptions []struct {
		Lang  string `json:"lang"`
		Value string `json:"value"`
	} `json:"descriptions"`
	Metrics struct {
		V40 []nvdMetric `json:"cvssMetricV40"`
		V31 []nvdMetric `json:"cvssMetricV31"`
		V30 []nvdMetric `json:"cvssMetricV30"`
		V2  []nvdMetric `json:"cvssMetricV2"`
	} `json:"metrics"`
	Configurations []struct {
		Operator string    `json:"operator"`
		Negate   bool      `json:"negate"`
		Nodes    []nvdNode `json:"nodes"`
	} `json:"configurations"`
}

type nvdMetric struct {
	Source   string `json:"source"`
	Type     string `json:"type"`
	CVSSData struct {
		Version      string   `json:"version"`
		VectorString string   `json:"vectorString"`
		BaseScore    *float64 `json:"baseScore"`
		BaseSeverity string   `json:"baseSeverity"`
	} `json:"cvssData"`
	BaseSeverity string `json:"baseSeverity"` // CVSS v2 keeps it here
}

type nvdNode struct {
	Operator string `json:"operator"`
	Negate   bool   `json:"negate"`
	CPEMatch []struct {
		Vulnerable            bool   `json:"vulnerable"`
		Criteria              string `json:"criteria"`
		VersionStartIncluding string `json:"versionStartIncluding"`
		VersionStartExcluding string `json:"versionStartExcluding"`
		VersionEndIncluding   string `json:"versionEndIncluding"`
		VersionEndExcluding   string `json:"versionEndExcluding"`
	} `json:"cpeMatch"`
}

// NVDPage is the header of an NVD API answer, for paging.
type NVDPage struct {
	ResultsPerPage int `json:"resultsPerPage"`
	StartIndex     int `json:"startIndex"`
	TotalResults   int `json:"totalResults"`
}

// ParseNVD streams the CVEs of an NVD CVE API 2.0 document (an API page or a
// yearly JSON 2.0 feed file) to fn, one at a time, so that memory stays
// bounded by one CVE. Rejected CVEs are skipped. An error from fn stops the
// parse and is answered as is.
func ParseNVD(r io.Reader, fn func(CVE) error) error {
	_, err := parseNVD(r, fn, nil)
	return err
}

// ParseNVDRejected is ParseNVD that also tells rejected (when not nil) the
// id of every Rejected CVE, so that a store can delete a record the NVD
// has since rejected.
func ParseNVDRejected(r io.Reader, fn func(CVE) error, rejected func(id string) error) error {
	_, err := parseNVD(r, fn, rejected)
	return err
}

// ReadNVD answers every CVE of an NVD document; for big files use ParseNVD.
func ReadNVD(r io.Reader) ([]CVE, error) {
	var out []CVE
	err := ParseNVD(r, func(c CVE) error { out = append(out, c); return nil })
	return out, err
}

func parseNVD(r io.Reader, fn func(CVE) error, rejected func(id string) error) (NVDPage, error) {
	var page NVDPage
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return page, fmt.Errorf("nvd: %w", err)
	}
	sawVulns := false
	for dec.More() {
		key, err := readKey(dec)
		if err != nil {
			return page, fmt.Errorf("nvd: %w", err)
		}
		switch key {
		case "resultsPerPage":
			err = dec.Decode(&page.ResultsPerPage)
		case "startIndex":
			err = dec.Decode(&page.StartIndex)
		case "totalResults":
			err = dec.Decode(&page.TotalResults)
		case "format":
			var f string
			if err = dec.Decode(&f); err == nil && f != "" && f != "NVD_CVE" {
				err = fmt.Errorf("format %q is not NVD_CVE", f)
			}
		case "vulnerabilities":
			sawVulns = true
			err = streamNVDItems(dec, fn, rejected)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return page, wrapNVD(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return page, fmt.Errorf("nvd: %w", err)
	}
	if !sawVulns {
		return page, errors.New("nvd: no vulnerabilities array")
	}
	return page, nil
}

// errCallback marks errors coming from the caller's function so that they
// are answered unwrapped.
type errCallback struct{ err error }

func (e errCallback) Error() string { return e.err.Error() }

func wrapNVD(err error) error {
	var cb errCallback
	if errors.As(err, &cb) {
		return cb.err
	}
	return fmt.Errorf("nvd: %w", err)
}

func streamNVDItems(dec *json.Decoder, fn func(CVE) error, rejected func(id string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil { // "vulnerabilities": null
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("vulnerabilities is %v, not an array", tok)
	}
	for dec.More() {
		var item struct {
			CVE *nvdCVE `json:"cve"`
		}
		if err := dec.Decode(&item); err != nil {
			return err
		}
		if item.CVE == nil || item.CVE.ID == "" {
			continue
		}
		c, ok := convertNVD(item.CVE)
		if !ok {
			if rejected != nil {
				if err := rejected(strings.TrimSpace(item.CVE.ID)); err != nil {
					return errCallback{err}
				}
			}
			continue
		}
		if err := fn(c); err != nil {
			return errCallback{err}
		}
	}
	_, err = dec.Token() // ']'
	return err
}

func convertNVD(n *nvdCVE) (CVE, bool) {
	if strings.EqualFold(n.VulnStatus, "Rejected") {
		return CVE{}, false
	}
	c := CVE{
		ID:        strings.TrimSpace(n.ID),
		Published: parseTime(n.Published),
		Modified:  parseTime(n.LastModified),
	}
	for _, d := range n.Descriptions {
		if d.Lang == "en" {
			c.Description = d.Value
			break
		}
	}
	if strings.HasPrefix(c.Description, "** REJECT **") {
		return CVE{}, false
	}
	if m, ok := bestMetric(n); ok {
		score := *m.CVSSData.BaseScore
		c.CVSS = &score
		c.CVSSVersion = m.CVSSData.Version
		c.Vector = m.CVSSData.VectorString
		c.Severity = strings.ToUpper(m.CVSSData.BaseSeverity)
		if c.Severity == "" {
			c.Severity = strings.ToUpper(m.BaseSeverity)
		}
		if c.Severity == "NONE" || c.Severity == "" {
			c.Severity = SeverityFromScore(score)
		}
	}
	seen := map[CPEMatch]bool{}
	for _, cfg := range n.Configurations {
		if cfg.Negate {
			continue
		}
		platforms := andPlatforms(cfg.Operator, cfg.Nodes)
		for _, node := range cfg.Nodes {
			if node.Negate {
				continue // "not running on X": nothing to match
			}
			for _, m := range node.CPEMatch {
				// Non-vulnerable matches are the platform half of an
				// "app AND running on OS" configuration: the app alone is
				// what an inventory can match, limited to those operating
				// systems when they are ones an endpoint reports.
				if !m.Vulnerable {
					continue
				}
				cm, ok := parseCPE(m.Criteria)
				if !ok {
					continue
				}
				cm.StartIncl = m.VersionStartIncluding
				cm.StartExcl = m.VersionStartExcluding
				cm.EndIncl = m.VersionEndIncluding
				cm.EndExcl = m.VersionEndExcluding
				targets := []string{cm.TargetSW}
				if len(platforms) > 0 && (cm.TargetSW == "*" || cm.TargetSW == "-") {
					targets = platforms
				}
				for _, t := range targets {
					cm.TargetSW = t
					if !seen[cm] {
						seen[cm] = true
						c.CPEMatches = append(c.CPEMatches, cm)
					}
				}
			}
		}
	}
	return c, true
}

// andPlatforms answers the operating systems of an "app AND running on
// OS" configuration, as target_sw values ("windows", "macos"), when every
// non-vulnerable match of it is an operating system an endpoint reports;
// otherwise none, and the application matches are kept unrestricted.
// CVE-2025-2783 (Chrome on Windows only) is written this way.
func andPlatforms(operator string, nodes []nvdNode) []string {
	if !strings.EqualFold(operator, "AND") {
		return nil
	}
	var out []string
	for _, node := range nodes {
		if node.Negate {
			continue
		}
		for _, m := range node.CPEMatch {
			if m.Vulnerable {
				continue
			}
			cm, ok := parseCPE(m.Criteria)
			t := osTarget(cm)
			if !ok || t == "" {
				return nil
			}
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// osTarget names the target_sw of an operating system CPE, or "".
func osTarget(m CPEMatch) string {
	if m.Part != "o" {
		return ""
	}
	switch {
	case m.Vendor == "microsoft" && strings.HasPrefix(m.Product, "windows"):
		return "windows"
	case m.Vendor == "apple" && (m.Product == "macos" || m.Product == "mac_os_x" || m.Product == "mac_os"):
		return "macos"
	case m.Vendor == "linux" && m.Product == "linux_kernel":
		return "linux"
	case m.Vendor == "google" && m.Product == "android":
		return "android"
	case m.Vendor == "apple" && (m.Product == "iphone_os" || m.Product == "ipados"):
		return m.Product
	case m.Vendor == "google" && m.Product == "chrome_os":
		return "chrome_os"
	}
	return ""
}

// bestMetric prefers CVSS 4.0, then 3.1, 3.0 and 2; within those the
// "Primary" (NVD's own) scores; only when no version has a Primary score is
// the first "Secondary" (a CNA's) score taken, in the same version order.
func bestMetric(n *nvdCVE) (nvdMetric, bool) {
	lists := [][]nvdMetric{n.Metrics.V40, n.Metrics.V31, n.Metrics.V30, n.Metrics.V2}
	for _, primary := range []bool{true, false} {
		for _, list := range lists {
			for _, m := range list {
				if m.CVSSData.BaseScore == nil {
					continue
				}
				if !primary || strings.EqualFold(m.Type, "Primary") {
					return m, true
				}
			}
		}
	}
	return nvdMetric{}, false
}

// parseCPE splits a CPE 2.3 formatted string, honouring backslash escapes.
func parseCPE(s string) (CPEMatch, bool) {
	var fields []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
		case ':':
			fields = append(fields, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	fields = append(fields, cur.String())
	if len(fields) < 6 || fields[0] != "cpe" || fields[1] != "2.3" {
		return CPEMatch{}, false
	}
	get := func(i int) string {
		if i < len(fields) {
			return fields[i]
		}
		return "*"
	}
	m := CPEMatch{
		Part:     get(2),
		Vendor:   strings.ToLower(get(3)),
		Product:  strings.ToLower(get(4)),
		Version:  get(5),
		Update:   get(6),
		TargetSW: get(10),
	}
	if m.Vendor == "" || m.Product == "" {
		return CPEMatch{}, false
	}
	return m, true
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %v", want, tok)
	}
	return nil
}

func readKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("expected an object key, found %v", tok)
	}
	return key, nil
}
