package store

import "testing"

// Updates as agents report them against findings as the matcher names
// them.
func TestUpdateNames(t *testing.T) {
	for _, c := range []struct {
		title, pkg string
		winget     bool
		installed  string
		latest     string
		software   string
		version    string
		want       bool
	}{
		// patchd-agent's winget rows: "<winget name> <available>".
		{"Google Chrome 131.0.6778.140", "", true, "131.0.6778.86", "131.0.6778.140", "Google Chrome", "131.0.6778.86", true},
		{"Mozilla Firefox (x64 en-US) 132.0", "", true, "131.0.3", "132.0", "Mozilla Firefox", "131.0.3", true},
		{"7-Zip 24.08 (x64) 24.09", "", true, "24.08", "24.09", "7-Zip", "24.08", true},
		{"Microsoft 365 Apps for enterprise - en-us 16.0.19426.20186", "", true, "16.0.19231.20194", "16.0.19426.20186",
			"Microsoft 365 Apps", "16.0.19231.20194", true},
		{"Microsoft Office LTSC Professional Plus 2021 - en-us 16.0.14332.21040", "", true, "16.0.14332.20000", "16.0.14332.21040",
			"Microsoft Office LTSC 2021", "16.0.14332.20000", true},
		// winget knows no installed version.
		{"Google Chrome 131.0.6778.140", "", true, "Unknown", "131.0.6778.140", "Google Chrome", "131.0.6778.86", true},
		// Another install of a product of the same name (another version).
		{"Google Chrome 131.0.6778.140", "", true, "130.0.6723.117", "131.0.6778.140", "Google Chrome", "131.0.6778.86", false},
		// Another product whose name starts with the software's.
		{"Zoomit 9.0", "", true, "8.0", "9.0", "Zoom", "8.0", false},
		{"Google Chrome Beta 132.0.6834.15", "", true, "131.0.6778.86", "132.0.6834.15", "Google Chrome", "131.0.6778.86", true},
		// Package updates: by package name; a title without version.
		{"openssl 3.0.15-1~deb12u1", "openssl", false, "3.0.11-1~deb12u2", "3.0.15-1~deb12u1", "openssl", "3.0.11-1~deb12u2", true},
		{"Google Chrome", "", false, "", "", "Google Chrome", "1", true},
		// Not winget, title with a version: not named.
		{"Google Chrome 131.0.6778.140", "", false, "131.0.6778.86", "131.0.6778.140", "Google Chrome", "131.0.6778.86", false},
	} {
		if got := updateNames(c.title, c.pkg, c.winget, c.installed, c.latest, c.software, c.version); got != c.want {
			t.Errorf("updateNames(%q, %q → %q) = %v, want %v", c.title, c.installed, c.software, got, c.want)
		}
	}
}
