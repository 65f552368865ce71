package schedule

import (
	"testing"
	"time"
)

func loc(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("time zone %s: %v", name, err)
	}
	return l
}

// at parses a wall time in a zone, for expectations ("2026-03-08 03:30 -0400").
func parse(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse("2006-01-02 15:04 -0700", s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPatchTuesdayOf(t *testing.T) {
	for _, c := range []struct {
		y    int
		m    time.Month
		want int
	}{
		{2024, time.January, 9}, {2024, time.February, 13}, {2024, time.October, 8}, {2025, time.January, 14},
		{2025, time.July, 8}, {2026, time.September, 8}, {2026, time.December, 8}, {2027, time.June, 8},
		{2026, time.February, 10}, {2024, time.May, 14}, {2023, time.August, 8}, {2022, time.November, 8},
	} {
		if got := PatchTuesdayOf(c.y, c.m); got != c.want {
			t.Errorf("%d-%02d: %d, want %d", c.y, c.m, got, c.want)
		}
		if d := time.Date(c.y, c.m, c.want, 0, 0, 0, 0, time.UTC); d.Weekday() != time.Tuesday {
			t.Errorf("%d-%02d-%02d is a %s", c.y, c.m, c.want, d.Weekday())
		}
	}
}

func TestNext(t *testing.T) {
	clock := func(s string) Clock {
		c, err := ParseClock(s)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, c := range []struct {
		name  string
		r     Recurring
		zone  string
		after string // as parse reads it
		want  string
	}{
		{"daily later today", Recurring{Freq: Daily, At: clock("22:00")}, "UTC", "2026-05-01 10:00 +0000", "2026-05-01 22:00 +0000"},
		{"daily exactly at slot goes to tomorrow", Recurring{Freq: Daily, At: clock("10:00")}, "UTC", "2026-05-01 10:00 +0000", "2026-05-02 10:00 +0000"},
		{"daily across year end", Recurring{Freq: Daily, At: clock("00:30")}, "Europe/Berlin", "2026-12-31 23:45 +0100", "2027-01-01 00:30 +0100"},
		{"daily in a zone ahead of UTC", Recurring{Freq: Daily, At: clock("01:00")}, "Asia/Tokyo", "2026-05-01 15:30 +0000", "2026-05-01 16:00 +0000"},
		{"daily spring forward New York: 02:30 does not exist, runs once at 03:30", Recurring{Freq: Daily, At: clock("02:30")}, "America/New_York", "2026-03-07 02:30 -0500", "2026-03-08 03:30 -0400"},
		{"daily after the shifted slot", Recurring{Freq: Daily, At: clock("02:30")}, "America/New_York", "2026-03-08 03:30 -0400", "2026-03-09 02:30 -0400"},
		{"daily fall back New York: 01:30 happens twice, runs at the first", Recurring{Freq: Daily, At: clock("01:30")}, "America/New_York", "2026-10-31 01:30 -0400", "2026-11-01 01:30 -0400"},
		{"daily fall back, not again at the second 01:30", Recurring{Freq: Daily, At: clock("01:30")}, "America/New_York", "2026-11-01 01:30 -0400", "2026-11-02 01:30 -0500"},
		{"daily spring forward Berlin", Recurring{Freq: Daily, At: clock("02:15")}, "Europe/Berlin", "2026-03-28 12:00 +0100", "2026-03-29 03:15 +0200"},
		{"daily fall back Berlin", Recurring{Freq: Daily, At: clock("02:15")}, "Europe/Berlin", "2026-10-24 12:00 +0200", "2026-10-25 02:15 +0200"},
		{"daily southern hemisphere spring forward Sydney", Recurring{Freq: Daily, At: clock("02:30")}, "Australia/Sydney", "2026-10-03 12:00 +1000", "2026-10-04 03:30 +1100"},
		{"daily Lord Howe half-hour shift", Recurring{Freq: Daily, At: clock("02:10")}, "Australia/Lord_Howe", "2026-10-03 12:00 +1030", "2026-10-04 02:40 +1100"},
		{"weekly Wednesday", Recurring{Freq: Weekly, At: clock("09:00"), Weekday: time.Wednesday}, "UTC", "2026-05-01 10:00 +0000", "2026-05-06 09:00 +0000"},
		{"weekly same day before slot", Recurring{Freq: Weekly, At: clock("18:00"), Weekday: time.Friday}, "UTC", "2026-05-01 10:00 +0000", "2026-05-01 18:00 +0000"},
		{"weekly Sunday across DST in Berlin", Recurring{Freq: Weekly, At: clock("02:30"), Weekday: time.Sunday}, "Europe/Berlin", "2026-03-22 02:30 +0100", "2026-03-29 03:30 +0200"},
		{"weekly in the org zone, not UTC", Recurring{Freq: Weekly, At: clock("23:30"), Weekday: time.Monday}, "America/Los_Angeles", "2026-05-04 00:00 +0000", "2026-05-04 23:30 -0700"},
		{"monthly later this month", Recurring{Freq: Monthly, At: clock("03:00"), MonthDay: 15}, "UTC", "2026-01-10 00:00 +0000", "2026-01-15 03:00 +0000"},
		{"monthly next month", Recurring{Freq: Monthly, At: clock("03:00"), MonthDay: 15}, "UTC", "2026-01-15 03:00 +0000", "2026-02-15 03:00 +0000"},
		{"monthly 28th in February of a leap year", Recurring{Freq: Monthly, At: clock("04:00"), MonthDay: 28}, "UTC", "2028-02-01 00:00 +0000", "2028-02-28 04:00 +0000"},
		{"monthly 28th after February of a leap year", Recurring{Freq: Monthly, At: clock("04:00"), MonthDay: 28}, "UTC", "2028-02-28 04:00 +0000", "2028-03-28 04:00 +0000"},
		{"monthly across year end", Recurring{Freq: Monthly, At: clock("04:00"), MonthDay: 1}, "Europe/London", "2026-12-01 04:00 +0000", "2027-01-01 04:00 +0000"},
		{"monthly in summer time", Recurring{Freq: Monthly, At: clock("04:00"), MonthDay: 1}, "Europe/London", "2026-06-15 00:00 +0000", "2026-07-01 04:00 +0100"},
		{"patch tuesday this month", Recurring{Freq: PatchTuesday, At: clock("20:00")}, "UTC", "2026-09-01 00:00 +0000", "2026-09-08 20:00 +0000"},
		{"patch tuesday next month", Recurring{Freq: PatchTuesday, At: clock("20:00")}, "UTC", "2026-09-08 20:00 +0000", "2026-10-13 20:00 +0000"},
		{"patch tuesday + 3 days", Recurring{Freq: PatchTuesday, At: clock("02:00"), OffsetDays: 3}, "America/Chicago", "2026-09-01 00:00 -0500", "2026-09-11 02:00 -0500"},
		{"patch tuesday + offset crossing into next month", Recurring{Freq: PatchTuesday, At: clock("02:00"), OffsetDays: 20}, "UTC", "2026-12-20 00:00 +0000", "2026-12-28 02:00 +0000"},
		{"patch tuesday offset of last month still ahead", Recurring{Freq: PatchTuesday, At: clock("02:00"), OffsetDays: 25}, "UTC", "2027-01-01 00:00 +0000", "2027-01-02 02:00 +0000"},
		{"patch tuesday in a leap February (Feb 1 is a Tuesday)", Recurring{Freq: PatchTuesday, At: clock("09:00"), OffsetDays: 16}, "UTC", "2028-02-01 00:00 +0000", "2028-02-24 09:00 +0000"},
		{"patch tuesday + 21 in a leap February lands on the 29th", Recurring{Freq: PatchTuesday, At: clock("09:00"), OffsetDays: 21}, "UTC", "2028-02-10 00:00 +0000", "2028-02-29 09:00 +0000"},
		{"patch tuesday on spring-forward day in Chicago", Recurring{Freq: PatchTuesday, At: clock("02:30"), OffsetDays: 5}, "America/Chicago", "2026-03-01 00:00 -0600", "2026-03-15 02:30 -0500"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.r.Validate(); err != nil {
				t.Fatal(err)
			}
			got := c.r.Next(parse(t, c.after), loc(t, c.zone))
			if want := parse(t, c.want); !got.Equal(want) {
				t.Errorf("Next = %s, want %s", got, want)
			}
		})
	}
}

// A year of slots of every frequency, in zones with DST changes: every
// slot is strictly later than the one before, lands on its clock time (or
// the hour after a spring-forward gap), and no day holds two slots.
func TestNextSequence(t *testing.T) {
	for _, zone := range []string{"UTC", "America/New_York", "Europe/Berlin", "Australia/Sydney", "Asia/Kolkata", "America/Santiago"} {
		l := loc(t, zone)
		for _, r := range []Recurring{
			{Freq: Daily, At: Clock{2, 30}}, {Freq: Daily, At: Clock{1, 30}}, {Freq: Daily, At: Clock{0, 0}},
			{Freq: Weekly, At: Clock{2, 30}, Weekday: time.Sunday}, {Freq: Monthly, At: Clock{23, 59}, MonthDay: 28},
			{Freq: PatchTuesday, At: Clock{2, 30}, OffsetDays: 7},
		} {
			prev := time.Date(2027, 12, 31, 0, 0, 0, 0, l)
			days := map[string]bool{}
			for i := 0; i < 400; i++ {
				next := r.Next(prev, l)
				if !next.After(prev) {
					t.Fatalf("%s %v: %s is not after %s", zone, r, next, prev)
				}
				day := next.In(l).Format("2006-01-02")
				if days[day] {
					t.Fatalf("%s %v: two slots on %s", zone, r, day)
				}
				days[day] = true
				lt := next.In(l)
				if (lt.Hour() != r.At.Hour || lt.Minute() != r.At.Minute) && lt.Sub(time.Date(lt.Year(), lt.Month(), lt.Day(), r.At.Hour, r.At.Minute, 0, 0, time.UTC).Add(-time.Duration(offset(lt))*time.Second)) > 2*time.Hour {
					t.Fatalf("%s %v: slot at %s", zone, r, lt)
				}
				switch r.Freq {
				case Weekly:
					if lt.Weekday() != r.Weekday {
						t.Fatalf("%s weekly slot on %s", zone, lt.Weekday())
					}
				case Monthly:
					if lt.Day() != r.MonthDay {
						t.Fatalf("%s monthly slot on day %d", zone, lt.Day())
					}
				}
				prev = next
			}
		}
	}
}

func offset(t time.Time) int { _, o := t.Zone(); return o }

func TestParseClock(t *testing.T) {
	for in, ok := range map[string]bool{"00:00": true, "23:59": true, "9:05": true, "24:00": false, "12:60": false, "12:5": false, "": false, "1200": false, "ab:cd": false, "-1:00": false} {
		if _, err := ParseClock(in); (err == nil) != ok {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		r  Recurring
		ok bool
	}{
		{Recurring{Freq: Daily}, true}, {Recurring{Freq: "HOURLY"}, false}, {Recurring{Freq: Weekly, Weekday: 7}, false},
		{Recurring{Freq: Monthly, MonthDay: 29}, false}, {Recurring{Freq: Monthly, MonthDay: 0}, false}, {Recurring{Freq: Monthly, MonthDay: 28}, true},
		{Recurring{Freq: PatchTuesday, OffsetDays: -1}, false}, {Recurring{Freq: PatchTuesday, OffsetDays: 31}, true},
	} {
		if err := c.r.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.r, err)
		}
	}
}

func TestWindow(t *testing.T) {
	slot := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	w := Window{Minutes: 60}
	if end, ok := w.End(slot); !ok || !end.Equal(slot.Add(time.Hour)) {
		t.Fatalf("end %s %v", end, ok)
	}
	if w.Missed(slot, slot.Add(59*time.Minute)) || !w.Missed(slot, slot.Add(61*time.Minute)) {
		t.Fatal("window edges")
	}
	if (Window{}).Missed(slot, slot.Add(1000*time.Hour)) {
		t.Fatal("no window never misses")
	}
}

func TestRings(t *testing.T) {
	start, err := ParseDate("2026-03-06")
	if err != nil {
		t.Fatal(err)
	}
	ny := loc(t, "America/New_York")
	if got, want := RingSlot(start, Clock{2, 30}, Ring{OffsetDays: 2}, ny), parse(t, "2026-03-08 03:30 -0400"); !got.Equal(want) {
		t.Errorf("ring across DST: %s want %s", got, want)
	}
	if got := start.AddDays(26); got.String() != "2026-04-01" {
		t.Errorf("AddDays %s", got)
	}
	if d, err := ParseDate("2026-03-06T10:00:00Z"); err != nil || d != start {
		t.Errorf("date of a date-time: %v %v", d, err)
	}
	if _, err := ParseDate("2026-02-30"); err == nil {
		t.Error("2026-02-30 accepted")
	}
	for _, c := range []struct {
		o    RingOutcome
		rate float64
		ok   bool
	}{
		{RingOutcome{Attempted: 10, Succeeded: 7}, 0.7, true},
		{RingOutcome{Attempted: 10, Succeeded: 6}, 0.7, false},
		{RingOutcome{Attempted: 3, Succeeded: 2}, 0.7, false},
		{RingOutcome{Attempted: 0}, 0.7, true},
		{RingOutcome{Attempted: 4, Succeeded: 4}, 1, true},
		{RingOutcome{Attempted: 4, Succeeded: 1, Running: true}, 0.2, true},
	} {
		ok, reason := Gate(c.o, c.rate)
		if ok != c.ok || ok != (reason == "") {
			t.Errorf("%+v at %.2f: %v %q", c.o, c.rate, ok, reason)
		}
	}
	_, reason := Gate(RingOutcome{Name: "Pilot", Attempted: 10, Succeeded: 5}, 0.7)
	if reason != `rollout halted: ring "Pilot" succeeded on 5 of 10 endpoints (50%), below the minimum of 70%` {
		t.Errorf("reason %q", reason)
	}
}
