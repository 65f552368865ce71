package feeds

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

type osvRecord struct {
	ID        string   `json:"id"`
	Summary   string   `json:"summary"`
	Aliases   []string `json:"aliases"`
	Related   []string `json:"related"`
	Upstream  []string `json:"upstream"`
	Published string   `json:"published"`
	Modified  string   `json:"modified"`
	Withdrawn string   `json:"withdrawn"`
	Severity  []struct {
		Type  string `json:"type"`
		Score string `json:"score"`
	} `json:"severity"`
	Affected []struct {
		Package struct {
			Ecosystem string `json:"ecosystem"`
			Name      string `json:"name"`
		} `json:"package"`
		Ranges []struct {
			Type   string `json:"type"`
			Events []struct {
				Introduced   string `json:"introduced"`
				Fixed        string `json:"fixed"`
				LastAffected string `json:"last_affected"`
			} `json:"events"`
		} `json:"ranges"`
		Versions []string `json:"versions"`
	} `json:"affected"`
}

// ReadOSV reads one OSV record or a JSON array of records and answers one
// advisory per affected package. Records are small; the array form is
// decoded element by element.
func ReadOSV(r io.Reader) ([]OSVAdvisory, error) {
	var out []OSVAdvisory
	err := ParseOSV(r, func(a OSVAdvisory) error { out = append(out, a); return nil })
	return out, err
}

// ParseOSV is ReadOSV with a callback per advisory.
func ParseOSV(r io.Reader, fn func(OSVAdvisory) error) error {
	br := bufio.NewReader(r)
	first, err := firstByte(br)
	if err != nil {
		return fmt.Errorf("osv: %w", err)
	}
	dec := json.NewDecoder(br)
	if first == '[' {
		if err := expectDelim(dec, '['); err != nil {
			return fmt.Errorf("osv: %w", err)
		}
		for dec.More() {
			var rec osvRecord
			if err := dec.Decode(&rec); err != nil {
				return fmt.Errorf("osv: %w", err)
			}
			if err := emitOSV(&rec, fn); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("osv: %w", err)
		}
		return nil
	}
	var rec osvRecord
	if err := dec.Decode(&rec); err != nil {
		return fmt.Errorf("osv: %w", err)
	}
	if rec.ID == "" {
		return fmt.Errorf("osv: record without id")
	}
	return emitOSV(&rec, fn)
}

// firstByte answers the first byte that is not JSON white space, leaving it
// unread.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case 0xEF: // a UTF-8 byte order mark
			if b, err := br.Peek(2); err == nil && b[0] == 0xBB && b[1] == 0xBF {
				br.Discard(2)
				continue
			}
		}
		return c, br.UnreadByte()
	}
}

var cveInText = regexp.MustCompile(`CVE-\d{4}-\d{4,}`)

func emitOSV(rec *osvRecord, fn func(OSVAdvisory) error) error {
	if rec.ID == "" {
		return nil
	}
	base := OSVAdvisory{
		ID:        rec.ID,
		Summary:   rec.Summary,
		Published: parseTime(rec.Published),
		Modified:  parseTime(rec.Modified),
		Withdrawn: parseTime(rec.Withdrawn),
	}
	seen := map[string]bool{}
	for _, group := range [][]string{{rec.ID}, rec.Aliases, rec.Upstream, rec.Related} {
		for _, id := range group {
			// "DEBIAN-CVE-2023-4863" and "UBUNTU-CVE-…" name their CVE.
			if m := cveInText.FindString(strings.ToUpper(id)); m != "" && !seen[m] {
				seen[m] = true
				base.CVEs = append(base.CVEs, m)
			}
		}
	}
	for _, s := range rec.Severity {
		if s.Score != "" {
			base.Severity = s.Score
			break
		}
	}
	for _, aff := range rec.Affected {
		a := base
		a.CVEs = base.CVEs // shared, read-only
		a.Ecosystem = NormalizeEcosystem(aff.Package.Ecosystem)
		a.Package = aff.Package.Name
		if a.Ecosystem == "" || a.Package == "" {
			continue
		}
		for _, rg := range aff.Ranges {
			if t := strings.ToUpper(rg.Type); t != "ECOSYSTEM" && t != "SEMVER" {
				continue // GIT ranges name commits, not package versions
			}
			var open *AffectedRange
			for _, ev := range rg.Events {
				switch {
				case ev.Introduced != "":
					if open != nil {
						a.Ranges = append(a.Ranges, *open)
					}
					open = &AffectedRange{Introduced: ev.Introduced}
				case ev.Fixed != "" || ev.LastAffected != "":
					if open == nil {
						open = &AffectedRange{Introduced: "0"}
					}
					open.Fixed, open.LastAffected = ev.Fixed, ev.LastAffected
					a.Ranges = append(a.Ranges, *open)
					open = nil
				}
			}
			if open != nil {
				a.Ranges = append(a.Ranges, *open)
			}
		}
		a.Versions = aff.Versions
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}
