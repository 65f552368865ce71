package vulns

import (
	"os"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/vulns/feeds"
)

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func TestDeadline(t *testing.T) {
	f, err := os.Open("testdata/kev-subset.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kevs, err := feeds.ReadKEV(f)
	if err != nil {
		t.Fatal(err)
	}
	var webp *feeds.KEV
	for i := range kevs {
		if kevs[i].CVEID == "CVE-2023-4863" {
			webp = &kevs[i]
		}
	}
	if webp == nil {
		t.Fatal("CVE-2023-4863 not in the KEV fixture")
	}
	detected := time.Date(2023, 9, 20, 10, 30, 0, 0, time.UTC)
	custom := Policy{Critical: 7 * 24 * time.Hour} // other fields zero: defaults
	cases := []struct {
		name     string
		kev      *feeds.KEV
		detected time.Time
		severity string
		policy   Policy
		want     time.Time
	}{
		// The KEV due date wins over a later severity deadline (HIGH: +30 days).
		{"kev due date", webp, detected, "HIGH", DefaultPolicy(), time.Date(2023, 10, 4, 23, 59, 59, 0, time.UTC)},
		// ... and over an earlier one too: CISA's date is the deadline.
		{"kev due date, critical", webp, detected, "CRITICAL", Policy{Critical: time.Hour}, time.Date(2023, 10, 4, 23, 59, 59, 0, time.UTC)},
		{"kev without due date", &feeds.KEV{CVEID: "CVE-X"}, detected, "LOW", DefaultPolicy(), detected.Add(180 * 24 * time.Hour)},
		{"critical", nil, detected, "CRITICAL", DefaultPolicy(), detected.Add(15 * 24 * time.Hour)},
		{"high", nil, detected, "High", DefaultPolicy(), detected.Add(30 * 24 * time.Hour)},
		{"medium", nil, detected, "MEDIUM", DefaultPolicy(), detected.Add(90 * 24 * time.Hour)},
		{"low", nil, detected, "low", DefaultPolicy(), detected.Add(180 * 24 * time.Hour)},
		{"custom critical", nil, detected, "CRITICAL", custom, detected.Add(7 * 24 * time.Hour)},
		{"custom falls back", nil, detected, "HIGH", custom, detected.Add(30 * 24 * time.Hour)},
		{"zero policy", nil, detected, "MEDIUM", Policy{}, detected.Add(90 * 24 * time.Hour)},
		{"unknown severity", nil, detected, "", DefaultPolicy(), time.Time{}},
		{"never detected", nil, time.Time{}, "HIGH", DefaultPolicy(), time.Time{}},
	}
	for _, c := range cases {
		if got := Deadline(c.kev, c.detected, c.severity, c.policy); !got.Equal(c.want) {
			t.Errorf("%s: Deadline = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestStatus(t *testing.T) {
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		deadline time.Time
		want     string
	}{
		{now.Add(-time.Second), StatusOverdue},
		{day(2023, 10, 4), StatusOverdue},
		{now, StatusDueSoon},
		{now.Add(time.Hour), StatusDueSoon},
		{now.Add(7 * 24 * time.Hour), StatusDueSoon},
		{now.Add(7*24*time.Hour + time.Second), StatusDueLater},
		{now.AddDate(0, 3, 0), StatusDueLater},
		{time.Time{}, ""},
	}
	for _, c := range cases {
		if got := Status(c.deadline, now); got != c.want {
			t.Errorf("Status(%v) = %q, want %q", c.deadline, got, c.want)
		}
	}
	// The KEV end-of-day deadline: due that day is not yet overdue.
	k := &feeds.KEV{DueDate: day(2024, 3, 1)}
	if got := Status(Deadline(k, time.Time{}, "", DefaultPolicy()), now); got != StatusDueSoon {
		t.Errorf("due today = %q", got)
	}
}

func TestSeverityFromCVSS(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		score *float64
		want  string
	}{
		{f(10), "Critical"}, {f(9.0), "Critical"}, {f(8.9), "High"}, {f(7.0), "High"}, {f(6.9), "Medium"},
		{f(4.0), "Medium"}, {f(3.9), "Low"}, {f(0.1), "Low"}, {f(0), ""}, {nil, ""},
	} {
		if got := SeverityFromCVSS(c.score); got != c.want {
			t.Errorf("SeverityFromCVSS(%v) = %q, want %q", c.score, got, c.want)
		}
	}
	if DisplaySeverity("CRITICAL") != "Critical" || DisplaySeverity("") != "" {
		t.Error("DisplaySeverity")
	}
	// Deadline accepts both spellings.
	d := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if !Deadline(nil, d, SeverityFromCVSS(f(9.8)), DefaultPolicy()).Equal(Deadline(nil, d, "CRITICAL", DefaultPolicy())) {
		t.Error("Critical and CRITICAL differ")
	}
}
