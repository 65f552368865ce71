package console

import (
	"math"
	"regexp"
	"strconv"
	"testing"
)

// TestFocusRingContrast: the focus ring's colour has at least 3:1 contrast
// against the white cards and the grey page (WCAG 1.4.11, non-text
// contrast); the amber alone had 1.64:1.
func TestFocusRingContrast(t *testing.T) {
	css, err := assets.ReadFile("static/console.css")
	if err != nil {
		t.Fatal(err)
	}
	ring := regexp.MustCompile(`:focus-visible \{ outline: 3px solid var\((--[a-z-]+)\)`).FindSubmatch(css)
	if ring == nil {
		t.Fatal("no :focus-visible outline of a colour variable in console.css")
	}
	m := regexp.MustCompile(regexp.QuoteMeta(string(ring[1])) + `: (#[0-9a-f]{6});`).FindSubmatch(css)
	if m == nil {
		t.Fatalf("no value of %s", ring[1])
	}
	for _, bg := range []string{"#ffffff", "#f6f7f9"} {
		if c := contrast(string(m[1]), bg); c < 3 {
			t.Errorf("focus ring %s on %s: %.2f:1, want at least 3:1", m[1], bg, c)
		}
	}
}

// contrast is the WCAG contrast ratio of two #rrggbb colours.
func contrast(a, b string) float64 {
	lum := func(hex string) float64 {
		var c [3]float64
		for i := range c {
			n, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
			v := float64(n) / 255
			if v <= 0.03928 {
				c[i] = v / 12.92
			} else {
				c[i] = math.Pow((v+0.055)/1.055, 2.4)
			}
		}
		return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
	}
	la, lb := lum(a), lum(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}
