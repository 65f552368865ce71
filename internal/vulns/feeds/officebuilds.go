package feeds

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// OfficeBuild is one release of Microsoft 365 Apps (Click-to-Run) in one
// update channel, as Microsoft's "Update history for Microsoft 365 Apps
// (listed by date)" lists it: on 2025-11-11 the Current Channel got
// Version 2510, Build 19328.20190 (installed as 16.0.19328.20190).
//
// Microsoft's security update data names no build for Click-to-Run (its
// fixes are "Click to Run" with a link to the release notes); the builds a
// channel gets on the month's Patch Tuesday are that month's security
// release. Matching uses both: see internal/vulns/match (Office).
type OfficeBuild struct {
	Released time.Time // the release date (UTC midnight)
	// Channel is the update channel ("Current", "Monthly Enterprise",
	// "Semi-Annual Enterprise", "Semi-Annual Enterprise Preview") or, for
	// volume-licensed Office, the product as Microsoft's security release
	// notes name it ("Office LTSC 2024 Volume Licensed", "Office LTSC 2021
	// Volume Licensed", "Office 2019 Volume Licensed").
	Channel string
	Version string // "2510"
	Build   string // "19328.20190"
}

// officeBuildsDoc is the machine-readable copy of Microsoft's page that the
// public DataForGeeks project keeps (content/ms/msapps/buildnumbers.json):
// one row per release and channel, values as Microsoft's table gives them.
// A document headed "patchdOfficeBuilds" instead has rows of the same shape
// for volume-licensed Office (Office LTSC 2024/2021, Office 2019), whose
// update histories have no machine-readable copy.
type officeBuildsDoc struct {
	DataForGeeks *json.RawMessage `json:"DataForGeeks"`
	Data         []struct {
		ReleaseDate string `json:"ReleaseDate"`
		Channel     string `json:"Channel"`
		Build       string `json:"Build"`
		Version     string `json:"Version"`
		FullBuild   string `json:"FullBuild"`
	} `json:"Data"`
}

// ParseOfficeBuilds reads a Microsoft 365 Apps release history. Rows whose
// date or build does not parse are an error: the history decides which
// installs are fixed, so it is read whole or not at all.
func ParseOfficeBuilds(r io.Reader) ([]OfficeBuild, error) {
	var d officeBuildsDoc
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return nil, fmt.Errorf("office builds: %w", err)
	}
	out := make([]OfficeBuild, 0, len(d.Data))
	for i, row := range d.Data {
		day, err := time.Parse("2006-01-02", strings.TrimSpace(row.ReleaseDate))
		if err != nil {
			return nil, fmt.Errorf("office builds: row %d: release date %q", i, row.ReleaseDate)
		}
		build := strings.TrimPrefix(strings.TrimSpace(row.Build), "16.0.")
		if build == "" {
			build = strings.TrimPrefix(strings.TrimSpace(row.FullBuild), "16.0.")
		}
		if _, _, ok := ParseOfficeBuild(build); !ok {
			return nil, fmt.Errorf("office builds: row %d: build %q", i, row.Build)
		}
		ch := strings.TrimSpace(row.Channel)
		if ch == "" {
			return nil, fmt.Errorf("office builds: row %d: no channel", i)
		}
		out = append(out, OfficeBuild{Released: day.UTC(), Channel: ch, Version: strings.TrimSpace(row.Version), Build: build})
	}
	return out, nil
}

// ParseOfficeBuild reads an Office build, "19328.20190" or
// "16.0.19328.20190", into its two numbers.
func ParseOfficeBuild(s string) (major, minor int, ok bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "16.0.")
	a, b, found := strings.Cut(s, ".")
	if !found {
		return 0, 0, false
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || x <= 0 || y < 0 {
		return 0, 0, false
	}
	return x, y, true
}

// PatchTuesday answers the second Tuesday of an MSRC month ("2025-Nov"):
// the day Microsoft releases that month's security updates.
func PatchTuesday(month string) (time.Time, bool) {
	t, err := time.Parse("2006-Jan", strings.TrimSpace(month))
	if err != nil {
		return time.Time{}, false
	}
	first := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	off := (int(time.Tuesday) - int(first.Weekday()) + 7) % 7
	return first.AddDate(0, 0, off+7), true
}
