package console

import (
	"fmt"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
)

// trendChart is the dashboard's compliance trend: a bar per recorded day of
// the share of endpoints compliant under the compliance policy (0–100 %) and a line of the open
// critical CVEs (scaled to their highest), over the last Span days, drawn
// in a 0–100 box; Days lists the recorded days for the table under the
// chart.
type trendChart struct {
	Days            []trendDay
	Span            int     // days the chart covers
	BarWidth        float64 // of one day
	CVELine         string
	MaxCVEs         int
	WithCVEs        bool
	First, Last     string
	PatchedNow      int
	PatchedThen     int
	CriticalCVEsNow int
}

type trendDay struct {
	apiv1.ComplianceDay
	Patched int     // percent compliant under the compliance policy
	Known   bool    // the day's compliance was recorded
	X       float64 // where the day's bar starts
}

// fewDays is how many recorded days a trend needs before it reads as one;
// with fewer the dashboard says it fills as days pass.
const fewDays = 7

// Recorded is how many of the span's days were recorded.
func (t trendChart) Recorded() int {
	n := 0
	for _, d := range t.Days {
		if d.Known {
			n++
		}
	}
	return n
}

// Few tells a trend of too few recorded days to read as one yet.
func (t trendChart) Few() bool { return t.Recorded() < min(fewDays, t.Span) }

// newTrend draws the recorded days (oldest first) of the span ending on
// now's date; days outside it are left out.
func newTrend(days []apiv1.ComplianceDay, now time.Time, span int, withCVEs bool) trendChart {
	t := trendChart{Span: span, WithCVEs: withCVEs}
	first := now.UTC().AddDate(0, 0, 1-span)
	t.First, t.Last = first.Format(time.DateOnly), now.UTC().Format(time.DateOnly)
	for _, d := range days {
		if d.Date < t.First || d.Date > t.Last {
			continue
		}
		td := trendDay{ComplianceDay: d, Known: d.Compliant != nil}
		if td.Known {
			td.Patched = pct(*d.Compliant, d.Endpoints)
		}
		t.Days = append(t.Days, td)
		t.MaxCVEs = max(t.MaxCVEs, d.CriticalCVEs)
	}
	if len(t.Days) == 0 {
		return t
	}
	t.PatchedThen, t.PatchedNow = t.Days[0].Patched, t.Days[len(t.Days)-1].Patched
	t.CriticalCVEsNow = t.Days[len(t.Days)-1].CriticalCVEs
	t.BarWidth = 100 / float64(span)
	var cves []string
	for i := range t.Days {
		d := &t.Days[i]
		at, err := time.Parse(time.DateOnly, d.Date)
		if err != nil {
			continue
		}
		d.X = at.Sub(first.Truncate(24*time.Hour)).Hours() / 24 * t.BarWidth
		y := 100.0
		if t.MaxCVEs > 0 {
			y = 100 - float64(d.CriticalCVEs)*100/float64(t.MaxCVEs)
		}
		// The line crosses each day's bar, so one day is a segment too.
		cves = append(cves, fmt.Sprintf("%.2f,%.1f %.2f,%.1f", d.X, y, d.X+t.BarWidth, y))
	}
	t.CVELine = strings.Join(cves, " ")
	return t
}
