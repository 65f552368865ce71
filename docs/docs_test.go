// Package docs holds patchd's documentation; its test keeps the repository
// standing alone: nothing points at design documents outside it, and every
// relative link of the Markdown files resolves.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top folder, seen from this package.
const root = ".."

// outside are the spellings of references to the design folder that once
// lived beside the repository (split so that this file does not hold them).
var outside = []string{"../" + "shared/", "shared" + "/design", "shared" + "/spec"}

// sourceFiles walks the repository's Go and Markdown files, leaving out
// what is not the project's own text: git's folder, installed npm packages
// and captured test data.
func sourceFiles(t *testing.T, visit func(path string, text string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		visit(path, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNothingPointsOutsideTheRepository: the design, the API contract and
// the agent protocol are in docs/design; a clone has nothing beside it.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	sourceFiles(t, func(path, text string) {
		for i, line := range strings.Split(text, "\n") {
			for _, s := range outside {
				if strings.Contains(line, s) {
					t.Errorf("%s:%d points outside the repository (%q); point at docs/design/ instead", path, i+1, s)
				}
			}
		}
	})
}

// mdLink is an inline Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestMarkdownLinksResolve: every relative link of a Markdown file names a
// file or folder of the repository and, with a #fragment into a Markdown
// file, one of its headings.
func TestMarkdownLinksResolve(t *testing.T) {
	sourceFiles(t, func(path, text string) {
		if filepath.Ext(path) != ".md" {
			return
		}
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), file)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: %s does not exist", path, target, dest)
					continue
				}
			}
			if frag == "" || filepath.Ext(dest) != ".md" {
				continue
			}
			b, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(b))[frag] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", path, target, dest, frag)
			}
		}
	})
}

// stripCode removes fenced code blocks and inline code spans, where
// brackets and parentheses are not links.
func stripCode(text string) string {
	return inlineCode.ReplaceAllString(stripFences(text), "")
}

// stripFences removes fenced code blocks, whose lines starting with # are
// not headings.
func stripFences(text string) string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// anchors are the fragments GitHub gives a Markdown file's headings:
// lowercase, punctuation removed, spaces as hyphens, repeats numbered.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range strings.Split(stripFences(text), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
