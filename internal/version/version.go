// Package version holds what a patchd program was built as: its version,
// the commit and the commit's date. A release build sets them with
//
//	-ldflags "-X github.com/patchd/patchd/internal/version.Version=1.4.0
//	          -X github.com/patchd/patchd/internal/version.Commit=<sha>
//	          -X github.com/patchd/patchd/internal/version.Date=<RFC 3339>"
//
// (scripts/release does); a plain `go build` or `go run` in a checkout
// leaves Version "dev" and takes the commit and date from the Go build
// information (vcs.revision, vcs.time), when the go command recorded them.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time with -X (see the package comment).
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)

// Info is what a program was built as.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
}

// Get answers the build's Info: the linker-set values, else the Go build
// information's version-control settings ("unknown" when neither has
// them, as in a test binary).
func Get() Info {
	i := Info{Version: Version, Commit: Commit, Date: Date, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if i.Commit == "" {
					i.Commit = s.Value
				}
			case "vcs.time":
				if i.Date == "" {
					i.Date = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && Commit == "" && i.Commit != "" {
			i.Commit += "-dirty"
		}
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	if i.Date == "" {
		i.Date = "unknown"
	}
	return i
}

// String is the line `PROGRAM version` prints after the program's name:
// "1.4.0 (commit 0123abcd…, 2026-11-28T04:05:10Z, go1.26.8 linux/amd64)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s, %s %s/%s)", i.Version, i.Commit, i.Date, i.GoVersion, runtime.GOOS, runtime.GOARCH)
}
