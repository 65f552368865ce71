package console

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// renderPage renders a page for an administrator, as the console does.
func renderPage(t *testing.T, page, block string, data any) string {
	t.Helper()
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{ConsoleSession: store.ConsoleSession{CSRFToken: "tok", User: store.ConsoleUser{RoleName: "Administrator", Permissions: perm.All}}}
	w := httptest.NewRecorder()
	if err := c.render(w, httptest.NewRequest("GET", "/console/", nil), s, 200, page, block, "T", "", data); err != nil {
		t.Fatal(err)
	}
	return html.UnescapeString(w.Body.String())
}

var ringOn = regexp.MustCompile(`<circle[^>]*class="ring-on"[^>]*>`)

func attr(tag, name string) string {
	m := regexp.MustCompile(`\s` + name + `="([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	return m[1]
}

// ringArc draws the dashboard's ring as SVG does (a circle of
// circumference 100 starting at 3 o'clock, clockwise; its dash pattern
// shifted by stroke-dashoffset; the element rotated by its transform) and
// answers how much of it is drawn and whether the drawn arc starts at 12
// o'clock.
func ringArc(t *testing.T, tag string) (drawn float64, fromTop bool) {
	t.Helper()
	var dash []float64
	for _, f := range strings.Fields(strings.ReplaceAll(attr(tag, "stroke-dasharray"), ",", " ")) {
		n, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("dasharray %q", attr(tag, "stroke-dasharray"))
		}
		dash = append(dash, n)
	}
	if len(dash)%2 == 1 {
		dash = append(dash, dash...)
	}
	offset, _ := strconv.ParseFloat(attr(tag, "stroke-dashoffset"), 64)
	rotate := 0.0
	if m := regexp.MustCompile(`rotate\((-?[0-9.]+)`).FindStringSubmatch(attr(tag, "transform")); m != nil {
		rotate, _ = strconv.ParseFloat(m[1], 64)
	}
	period := 0.0
	for _, d := range dash {
		period += d
	}
	on := func(p float64) bool { // p: position along the circle, 0..100
		q := math.Mod(p+offset, period)
		if q < 0 {
			q += period
		}
		for i, d := range dash {
			if q < d {
				return i%2 == 0
			}
			q -= d
		}
		return false
	}
	const steps = 10000
	n := 0
	for i := range steps {
		if on(float64(i) * 100 / steps) {
			n++
		}
	}
	// 12 o'clock is 270° clockwise from 3 o'clock; the rotation moves it.
	top := math.Mod((270-rotate)/3.6+100, 100)
	return float64(n) * 100 / steps, n > 0 && on(math.Mod(top+0.5, 100)) && (n == steps || !on(math.Mod(top-0.5+100, 100)))
}

// TestDashboardRingDrawsItsShare: the connected ring draws its share, from 12
// o'clock.
func TestDashboardRingDrawsItsShare(t *testing.T) {
	for _, tc := range []struct{ connected, total int }{{10, 10}, {3, 10}, {1, 4}, {0, 5}} {
		want := pct(tc.connected, tc.total)
		body := renderPage(t, "dashboard", "", dashData{Fleet: store.FleetSummary{Endpoints: tc.total, Connected: tc.connected}, ConnPct: want})
		tag := ringOn.FindString(body)
		if tag == "" {
			t.Fatalf("the dashboard has no ring")
		}
		drawn, fromTop := ringArc(t, tag)
		if math.Abs(drawn-float64(want)) > 0.5 || (want > 0 && !fromTop) {
			t.Errorf("at %d%% connected the ring draws %.1f%% (from 12 o'clock: %v): %s", want, drawn, fromTop, tag)
		}
	}
}

// TestAutomationScheduleInPlainWords: the automations list and page say the
// whole schedule, the Patch Tuesday offset included.
func TestAutomationScheduleInPlainWords(t *testing.T) {
	one, two, five := 1, 2, 5
	for _, tc := range []struct {
		a    store.Automation
		want string
	}{
		{store.Automation{Kind: store.KindSimple, ScheduleKind: "RECURRING", Freq: "PATCH_TUESDAY", AtTime: "23:00", OffsetDays: 1}, "Patch Tuesday + 1 day, 23:00"},
		{store.Automation{Kind: store.KindSimple, ScheduleKind: "RECURRING", Freq: "PATCH_TUESDAY", AtTime: "23:00", OffsetDays: 2}, "Patch Tuesday + 2 days, 23:00"},
		{store.Automation{Kind: store.KindSimple, ScheduleKind: "RECURRING", Freq: "PATCH_TUESDAY", AtTime: "22:00"}, "Patch Tuesday, 22:00"},
		{store.Automation{Kind: store.KindSimple, ScheduleKind: "RECURRING", Freq: "WEEKLY", AtTime: "22:00", Weekday: &one}, "Weekly on Monday, 22:00"},
		{store.Automation{Kind: store.KindSimple, ScheduleKind: "RECURRING", Freq: "WEEKLY", AtTime: "22:00", Weekday: &two}, "Weekly on Tuesday, 22:00"},
		{store.Automation{Kind: store.KindSimple, ScheduleKind: "RECURRING", Freq: "MONTHLY", AtTime: "03:00", MonthDay: &five}, "Monthly on day 5, 03:00"},
		{store.Automation{Kind: store.KindRing, StartDate: "2026-12-01", AtTime: "22:00"}, "Rings from 2026-12-01, 22:00"},
	} {
		tc.a.ID, tc.a.Name = "a1", "Auto"
		body := renderPage(t, "automations", "", automationsData{Items: []store.Automation{tc.a}, Groups: map[string]string{}})
		if !strings.Contains(body, tc.want) {
			t.Errorf("the automations list does not say %q", tc.want)
		}
		body = renderPage(t, "automation", "", automationEdit{A: &tc.a, TimeZone: "Europe/Berlin", Weekdays: weekdays, GroupMap: map[string]string{}})
		if !strings.Contains(body, tc.want) {
			t.Errorf("the automation page does not say %q", tc.want)
		}
	}
}

// TestPageClientGoneIsNotAServerError: a page whose browser left (a live
// preview replaced by the next) is not logged as a server error nor answered
// 500.
func TestPageClientGoneIsNotAServerError(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest("GET", "/console/groups/preview", nil).WithContext(ctx)
	r.Header.Set("HX-Request", "true")
	w := httptest.NewRecorder()
	c.fail(w, r, nil, fmt.Errorf("store: preview group: %w", context.Canceled))
	if w.Code == http.StatusInternalServerError || strings.Contains(buf.String(), "level=ERROR") {
		t.Errorf("a cancelled preview answered %d and logged %s", w.Code, buf.String())
	}
}
