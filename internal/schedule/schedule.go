// Package schedule computes when automations run: the next slot of a
// recurring schedule (DAILY, WEEKLY, MONTHLY, PATCH_TUESDAY) or a one-off
// (ONCE) in the organization's time zone, maintenance windows, and the
// stages of a RING rollout with their success gate. It knows no clock of
// its own: every function takes the instant it reasons about, so tests pass
// a fake one.
package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Frequencies of a recurring schedule (spec: Automation.freq).
const (
	Daily        = "DAILY"
	Weekly       = "WEEKLY"
	Monthly      = "MONTHLY"
	PatchTuesday = "PATCH_TUESDAY"
)

// Schedule kinds (spec: AutomationBody.scheduleKind).
const (
	KindNow       = "NOW"
	KindOnce      = "ONCE"
	KindRecurring = "RECURRING"
)

// Limits of schedule fields.
const (
	MaxMonthDay   = 28
	MaxOffsetDays = 31
)

// Clock is a time of day, HH:MM.
type Clock struct{ Hour, Minute int }

// ParseClock reads "HH:MM" (00:00 to 23:59; a single-digit hour is accepted).
func ParseClock(s string) (Clock, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hour, err1 := strconv.Atoi(h)
	minute, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || len(h) < 1 || len(h) > 2 || hour < 0 || hour > 23 || minute < 0 || minute > 59 {
		return Clock{}, fmt.Errorf("must be a time of day HH:MM, 00:00 to 23:59")
	}
	return Clock{hour, minute}, nil
}

func (c Clock) String() string { return fmt.Sprintf("%02d:%02d", c.Hour, c.Minute) }

// Recurring is a recurring schedule.
type Recurring struct {
	Freq string
	At   Clock
	// Weekday is for WEEKLY (0 = Sunday).
	Weekday time.Weekday
	// MonthDay is for MONTHLY (1 to 28).
	MonthDay int
	// OffsetDays is for PATCH_TUESDAY: days after the second Tuesday.
	OffsetDays int
}

// Validate reports the first problem of the schedule's fields.
func (r Recurring) Validate() error {
	switch r.Freq {
	case Daily:
	case Weekly:
		if r.Weekday < time.Sunday || r.Weekday > time.Saturday {
			return fmt.Errorf("weekday must be 0 (Sunday) to 6")
		}
	case Monthly:
		if r.MonthDay < 1 || r.MonthDay > MaxMonthDay {
			return fmt.Errorf("monthDay must be 1 to %d", MaxMonthDay)
		}
	case PatchTuesday:
		if r.OffsetDays < 0 || r.OffsetDays > MaxOffsetDays {
			return fmt.Errorf("offsetDays must be 0 to %d", MaxOffsetDays)
		}
	default:
		return fmt.Errorf("freq must be DAILY, WEEKLY, MONTHLY or PATCH_TUESDAY")
	}
	return nil
}

// At is the instant of the clock time c on the local calendar day y-m-d in
// loc. A time that does not exist that day (the hour skipped when clocks
// spring forward) is moved forward by the length of the gap, so the slot
// still happens once; a time that happens twice (clocks fall back) is the
// first of the two.
func At(y int, m time.Month, d int, c Clock, loc *time.Location) time.Time {
	t := time.Date(y, m, d, c.Hour, c.Minute, 0, 0, loc)
	// time.Date is unspecified about which offset it picks around a
	// transition; pin both cases down.
	if t.Hour() != c.Hour || t.Minute() != c.Minute {
		// In a gap: interpret the wall time with the offset in force before it.
		before := time.Date(y, m, d, 0, 0, 0, 0, loc)
		_, off := before.Zone()
		naive := time.Date(y, m, d, c.Hour, c.Minute, 0, 0, time.UTC)
		return naive.Add(-time.Duration(off) * time.Second).In(loc)
	}
	if earlier := t.Add(-time.Hour); earlier.Hour() == c.Hour && earlier.Minute() == c.Minute && earlier.Day() == d {
		return earlier
	}
	if earlier := t.Add(-30 * time.Minute); earlier.Hour() == c.Hour && earlier.Minute() == c.Minute && earlier.Day() == d {
		return earlier // zones with a 30-minute shift (Australia/Lord_Howe)
	}
	return t
}

// PatchTuesdayOf is the day of month of the second Tuesday of y-m.
func PatchTuesdayOf(y int, m time.Month) int {
	first := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).Weekday()
	return 1 + (int(time.Tuesday)-int(first)+7)%7 + 7
}

// Next is the first slot of r strictly after the instant after, in loc.
func (r Recurring) Next(after time.Time, loc *time.Location) time.Time {
	local := after.In(loc)
	y, m, d := local.Date()
	switch r.Freq {
	case Daily, Weekly:
		// Start one day early: the slot of yesterday's date can be after
		// "after" only when a transition shifted it, which At rules out, but
		// it costs one iteration to be sure.
		day := time.Date(y, m, d-1, 12, 0, 0, 0, time.UTC)
		for i := 0; i < 16; i++ {
			dy, dm, dd := day.Date()
			if r.Freq == Daily || day.Weekday() == r.Weekday {
				if t := At(dy, dm, dd, r.At, loc); t.After(after) {
					return t
				}
			}
			day = day.AddDate(0, 0, 1)
		}
	case Monthly, PatchTuesday:
		month := time.Date(y, m-1, 1, 12, 0, 0, 0, time.UTC)
		for i := 0; i < 4; i++ {
			my, mm, _ := month.Date()
			var t time.Time
			if r.Freq == Monthly {
				t = At(my, mm, r.MonthDay, r.At, loc)
			} else {
				date := time.Date(my, mm, PatchTuesdayOf(my, mm)+r.OffsetDays, 12, 0, 0, 0, time.UTC)
				t = At(date.Year(), date.Month(), date.Day(), r.At, loc)
			}
			if t.After(after) {
				return t
			}
			month = month.AddDate(0, 1, 0)
		}
	}
	panic("schedule: Next of an invalid schedule: " + r.Freq)
}

// Window is a maintenance window: a run may start up to Minutes after its
// slot. Zero means no limit.
type Window struct{ Minutes int }

// End is the end of the window that opens at slot; ok is false without a limit.
func (w Window) End(slot time.Time) (end time.Time, ok bool) {
	if w.Minutes <= 0 {
		return time.Time{}, false
	}
	return slot.Add(time.Duration(w.Minutes) * time.Minute), true
}

// Missed tells whether a slot that fires at now came too late to run: its
// window ended already (a server that was down). Without a window a late
// slot still runs, once.
func (w Window) Missed(slot, now time.Time) bool {
	end, ok := w.End(slot)
	return ok && now.After(end)
}

// Date is a calendar day, YYYY-MM-DD.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// ParseDate reads YYYY-MM-DD, or the date part of an RFC 3339 time.
func ParseDate(s string) (Date, error) {
	s = strings.TrimSpace(s)
	if len(s) > 10 && (s[10] == 'T' || s[10] == ' ') {
		s = s[:10]
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return Date{}, fmt.Errorf("must be a date YYYY-MM-DD")
	}
	return Date{t.Year(), t.Month(), t.Day()}, nil
}

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// AddDays is the date n days later.
func (d Date) AddDays(n int) Date {
	t := time.Date(d.Year, d.Month, d.Day+n, 12, 0, 0, 0, time.UTC)
	return Date{t.Year(), t.Month(), t.Day()}
}

// Ring is a stage of a RING rollout: it runs OffsetDays after the start date.
type Ring struct {
	Name       string
	OffsetDays int
}

// DefaultMinSuccessRate is the share of a ring's endpoints that must
// succeed before the next ring runs (Action1 uses the same default).
const DefaultMinSuccessRate = 0.70

// RingSlot is when ring i of a rollout starting on start at clock c runs.
func RingSlot(start Date, c Clock, ring Ring, loc *time.Location) time.Time {
	d := start.AddDays(ring.OffsetDays)
	return At(d.Year, d.Month, d.Day, c, loc)
}

// RingOutcome is what the previous ring achieved when the next one is due.
type RingOutcome struct {
	Name string
	// Attempted counts the commands that had something to do (not those
	// cancelled because nothing was to install there).
	Attempted int
	Succeeded int
	Running   bool
}

// Gate decides whether the next ring may run after prev: it may when prev's
// success rate reached minRate. A ring whose endpoints had nothing to do
// passes. reason says why a rollout halts.
func Gate(prev RingOutcome, minRate float64) (proceed bool, reason string) {
	if prev.Attempted == 0 {
		return true, ""
	}
	rate := float64(prev.Succeeded) / float64(prev.Attempted)
	if rate+1e-9 >= minRate {
		return true, ""
	}
	still := ""
	if prev.Running {
		still = ", and its run was still going"
	}
	return false, fmt.Sprintf("rollout halted: ring %q succeeded on %d of %d endpoints (%.0f%%), below the minimum of %.0f%%%s",
		prev.Name, prev.Succeeded, prev.Attempted, rate*100, minRate*100, still)
}
