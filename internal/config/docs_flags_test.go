package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/config"
)

// TestScaleOutDocNamesServeFlags: every flag docs/scale-out.md names on its
// own (`--name`, `--name value`) is one `patchd serve` accepts; the page
// named --scheduler-interval, which serve rejects.
func TestScaleOutDocNamesServeFlags(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scale-out.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile("`--([a-z][a-z0-9-]*)[^`]*`").FindAllStringSubmatch(string(doc), -1)
	if len(flags) == 0 {
		t.Fatal("no flags found in docs/scale-out.md")
	}
	for _, m := range flags {
		_, err := config.ParseServe([]string{"--" + m[1]})
		if err != nil && strings.Contains(err.Error(), "not defined") {
			t.Errorf("docs/scale-out.md names %s, which patchd serve rejects: %v", m[0], err)
		}
	}
}
