package match

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

//go:embed cpemap.json
var defaultCatalogJSON []byte

// Product is what an installed application is known as in the NVD.
type Product struct {
	Display      string   // the name shown in findings, "Mozilla Firefox ESR"
	CPEs         []string // vendor:product keys, "mozilla:firefox_esr"
	VersionStyle string   // see catalogEntry.VersionStyle
	RangesOnly   bool     // see catalogEntry.RangesOnly
}

// catalogEntry is one product of cpemap.json. Names and prefixes are
// compared with normalised installed names (see NormalizeName); publishers
// are lower-case substrings of the installed publisher, one of which must
// be present when the publisher is known; RequirePublisher also refuses an
// unknown publisher, for names too common to trust alone ("Zoom", "Box").
type catalogEntry struct {
	Display          string   `json:"display"`
	CPE              []string `json:"cpe"`
	Names            []string `json:"names"`
	Prefixes         []string `json:"prefixes"`
	Publishers       []string `json:"publishers"`
	RequirePublisher bool     `json:"requirePublisher"`
	// VersionStyle names a translation of the installed version into the
	// NVD's: "oracle-java" turns Windows' "8.0.3810.9" into "1.8.0update381",
	// as the NVD writes Java 8 updates (cpe …:oracle:jre:1.8.0:update381).
	VersionStyle string `json:"versionStyle"`
	// RangesOnly ignores the NVD's rules without a version ("any version",
	// cpe …:microsoft:365_apps:-:…) for this product. The NVD writes
	// continuously updated Microsoft products that way, because Microsoft
	// publishes no fixed build for them, and legacy EdgeHTML Edge under the
	// CPE Chromium Edge has used since 2023: applied, such rules would flag
	// every install, patched or not, with every CVE ever published for it.
	RangesOnly bool `json:"rangesOnly"`
}

// Catalog maps installed application names to NVD products. It is safe for
// concurrent use; answers are cached per (name, publisher).
type Catalog struct {
	byName   map[string][]*catalogEntry
	byPrefix map[string][]*catalogEntry
	mu       sync.RWMutex
	cache    map[[2]string][]Product
}

var (
	defaultOnce    sync.Once
	defaultCatalog *Catalog
)

// DefaultCatalog answers the catalog embedded from cpemap.json.
func DefaultCatalog() *Catalog {
	defaultOnce.Do(func() {
		c, err := LoadCatalog(strings.NewReader(string(defaultCatalogJSON)))
		if err != nil {
			panic("match: embedded cpemap.json: " + err.Error())
		}
		defaultCatalog = c
	})
	return defaultCatalog
}

// LoadCatalog reads a catalog in the format of cpemap.json.
func LoadCatalog(r io.Reader) (*Catalog, error) {
	var entries []*catalogEntry
	if err := json.NewDecoder(r).Decode(&entries); err != nil {
		return nil, fmt.Errorf("match: catalog: %w", err)
	}
	c := &Catalog{byName: map[string][]*catalogEntry{}, byPrefix: map[string][]*catalogEntry{}, cache: map[[2]string][]Product{}}
	for i, e := range entries {
		if e.Display == "" || len(e.CPE) == 0 || len(e.Names)+len(e.Prefixes) == 0 {
			return nil, fmt.Errorf("match: catalog entry %d (%q): display, cpe and a name or prefix are required", i, e.Display)
		}
		for j, k := range e.CPE {
			if strings.Count(k, ":") != 1 {
				return nil, fmt.Errorf("match: catalog entry %q: cpe %q is not vendor:product", e.Display, k)
			}
			e.CPE[j] = strings.ToLower(k)
		}
		for j, p := range e.Publishers {
			e.Publishers[j] = strings.ToLower(p)
		}
		switch e.VersionStyle {
		case "", "oracle-java":
		default:
			return nil, fmt.Errorf("match: catalog entry %q: unknown versionStyle %q", e.Display, e.VersionStyle)
		}
		for _, n := range e.Names {
			key := NormalizeName(n)
			c.byName[key] = append(c.byName[key], e)
		}
		for _, p := range e.Prefixes {
			key := NormalizeName(p)
			c.byPrefix[key] = append(c.byPrefix[key], e)
		}
	}
	return c, nil
}

// Len answers the number of names and prefixes the catalog knows.
func (c *Catalog) Len() int { return len(c.byName) + len(c.byPrefix) }

// Resolve answers the NVD products an installed application is, or none.
func (c *Catalog) Resolve(name, publisher string) []Product {
	key := [2]string{name, publisher}
	c.mu.RLock()
	p, ok := c.cache[key]
	c.mu.RUnlock()
	if ok {
		return p
	}
	p = c.resolve(name, publisher)
	c.mu.Lock()
	if len(c.cache) > 200000 { // a fleet with endless distinct names: start over
		c.cache = map[[2]string][]Product{}
	}
	c.cache[key] = p
	c.mu.Unlock()
	return p
}

func (c *Catalog) resolve(name, publisher string) []Product {
	norm := NormalizeName(name)
	if norm == "" {
		return nil
	}
	pub := strings.ToLower(publisher)
	candidates := c.byName[norm]
	if len(candidates) == 0 {
		// The longest prefix of whole words: "intellij idea community edition".
		words := strings.Fields(norm)
		for n := len(words); n > 0 && len(candidates) == 0; n-- {
			candidates = c.byPrefix[strings.Join(words[:n], " ")]
		}
	}
	var out []Product
	for _, e := range candidates {
		if !publisherFits(e, pub) {
			continue
		}
		out = append(out, Product{Display: e.Display, CPEs: e.CPE, VersionStyle: e.VersionStyle, RangesOnly: e.RangesOnly})
	}
	return out
}

func publisherFits(e *catalogEntry, pub string) bool {
	if strings.TrimSpace(pub) == "" {
		return !e.RequirePublisher
	}
	if len(e.Publishers) == 0 {
		return true
	}
	for _, p := range e.Publishers {
		if strings.Contains(pub, p) {
			return true
		}
	}
	return false
}

// dropWords are words of installed names that say nothing about the product.
var dropWords = map[string]bool{
	"x64": true, "x86": true, "x86_64": true, "amd64": true, "arm64": true, "aarch64": true, "ia64": true,
	"64-bit": true, "32-bit": true, "64bit": true, "32bit": true, "win64": true, "win32": true,
	"version": true, "release": true,
}

// NormalizeName reduces an installed application's display name to the
// form the catalog uses: lower case; trademark signs, anything in
// parentheses or brackets ("(x64 en-US)", "(remove only)", "(TM)"), anything
// after " - " (a language or an edition), architecture words, version
// numbers and locale tags removed; a macOS ".app" suffix dropped; spaces
// squeezed. "Mozilla Firefox 115.3.1 ESR (x64 en-US)" → "mozilla firefox esr".
func NormalizeName(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch r {
		case '(', '[', '{':
			depth++
			continue
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
			continue
		case '®', '™', '©', '℠':
			continue
		case '_':
			r = ' '
		}
		if depth > 0 {
			continue
		}
		if unicode.IsSpace(r) {
			r = ' '
		}
		b.WriteRune(unicode.ToLower(r))
	}
	out := b.String()
	if i := strings.Index(out, " - "); i > 0 {
		out = out[:i]
	}
	out = strings.TrimSuffix(strings.TrimSpace(out), ".app")
	words := strings.Fields(out)
	kept := words[:0]
	for _, w := range words {
		w = strings.Trim(w, ",;:")
		if w == "" || dropWords[w] || isVersionWord(w) || isLocale(w) {
			continue
		}
		kept = append(kept, w)
	}
	return strings.Join(kept, " ")
}

// isVersionWord: "23.01", "15", "v3.1.2", "17.0.8+7", "2015-2022".
func isVersionWord(w string) bool {
	if len(w) > 1 && w[0] == 'v' && w[1] >= '0' && w[1] <= '9' {
		w = w[1:]
	}
	if w == "" || w[0] < '0' || w[0] > '9' {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= 'a' && c <= 'z' {
			return false
		}
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// isLocale: "en-us", "de-de", "pt-br".
func isLocale(w string) bool {
	if len(w) != 5 || w[2] != '-' {
		return false
	}
	for _, i := range []int{0, 1, 3, 4} {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// nvdVersion translates an installed version into the NVD's spelling for
// the products that need it.
func nvdVersion(style, v string) string {
	if style != "oracle-java" {
		return v
	}
	// Java 8 on Windows: 8.0.<update*10>.<build> → 1.8.0update<update>.
	parts := strings.Split(v, ".")
	if len(parts) >= 3 && parts[0] == "8" && parts[1] == "0" && len(parts[2]) >= 2 && strings.HasSuffix(parts[2], "0") {
		u := strings.TrimLeft(parts[2][:len(parts[2])-1], "0")
		if u != "" && strings.Trim(u, "0123456789") == "" {
			return "1.8.0update" + u
		}
	}
	// "1.8.0_381" (macOS, Linux tarballs) → 1.8.0update381.
	if rest, ok := strings.CutPrefix(v, "1.8.0_"); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
		return "1.8.0update" + rest
	}
	return v
}
