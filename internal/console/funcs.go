package console

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
)

var funcs = template.FuncMap{
	// minutes writes a whole number of minutes in words ("2 hours").
	"minutes": func(n *int) string { return durationWords(time.Duration(*n) * time.Minute) },
	// Durations in words ("2 hours"), from a duration or a count of units.
	"duration":  durationWords,
	"minutesOf": func(n int) string { return durationWords(time.Duration(n) * time.Minute) },
	"hoursOf":   func(n int) string { return durationWords(time.Duration(n) * time.Hour) },
	"daysOf":    func(n int) string { return durationWords(time.Duration(n) * 24 * time.Hour) },
	"when":      when,
	"whenp":     func(t *time.Time) string { return whenPtr(t) },
	"ago":       ago,
	"str":       func(s *string) string { return deref(s) },
	// num is a count that may be absent ("" then).
	"num": func(n *int) string {
		if n == nil {
			return ""
		}
		return strconv.Itoa(*n)
	},
	"platformName": func(p string) string {
		if n, ok := platformNames[p]; ok {
			return n
		}
		return p
	},
	"platformNames": func() map[string]string { return platformNames },
	"actionName": func(typ string) string {
		for _, a := range automationActions {
			if a[0] == typ {
				return a[1]
			}
		}
		return typ
	},
	"plain": plain,
	"triggerLabel": func(name string) string {
		if t, ok := alerts.Lookup(name); ok && t.Label != "" {
			return t.Label
		}
		return name
	},
	"lower":     strings.ToLower,
	"hasPrefix": strings.HasPrefix,
	"mentions":  strings.Contains,
	// score shows a CVSS score with one decimal, or — without one.
	"score": func(f *float64) string {
		if f == nil {
			return "—"
		}
		return strconv.FormatFloat(*f, 'f', 1, 64)
	},
	"join":     strings.Join,
	"pathesc":  url.PathEscape,
	"schedule": scheduleText,
	"nothing":  nothingToInstall,
	// has tells whether a form's field holds a value (ticked boxes).
	"has": func(f url.Values, k, v string) bool {
		for _, x := range f[k] {
			if x == v {
				return true
			}
		}
		return false
	},
	// contains tells whether a list holds a value.
	"contains": slices.Contains[[]string],
	"count":    count,
	"pct":      pct,
	// ratio is n of total in percent with two decimals (an SVG arc's
	// length on a ring of circumference 100).
	"ratio": func(n, total int) string {
		if total <= 0 {
			return "0"
		}
		return strconv.FormatFloat(float64(n)*100/float64(total), 'f', 2, 64)
	},
	"add":      func(a, b int) int { return a + b },
	"sub":      func(a, b int) int { return a - b },
	"sevclass": func(s string) string { return "sev-" + strings.ToLower(s) },
	// remclass is the badge class of a remediation status ("Due soon": rem-due-soon).
	"remclass": func(s string) string { return "rem-" + strings.ReplaceAll(strings.ToLower(s), " ", "-") },
	"query":    func(v url.Values) template.URL { return template.URL(v.Encode()) },
	"lines":    func(s string) []string { return strings.Split(s, "\n") },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func whenPtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return when(*t)
}

func ago(t *time.Time) string {
	if t == nil {
		return "never"
	}
	d := time.Since(*t)
	switch {
	case d < 0:
		return "in " + (-d).Round(time.Minute).String()
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

// pct is part of whole in percent (0 to 100), for bar widths.
func pct(part, whole int) int {
	if whole <= 0 {
		return 0
	}
	return part * 100 / whole
}

// pager is the paging of a table.
type pager struct {
	Limit, Offset, Total int
	Query                url.Values // the filters, without offset
}

func newPager(r *http.Request, defaultLimit int) (pager, error) {
	p := pager{Limit: defaultLimit, Query: url.Values{}}
	q := r.URL.Query()
	for k, v := range q {
		if k != "offset" {
			p.Query[k] = v
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return p, badRequest("limit must be a number")
		}
		p.Limit = min(max(n, 1), 500)
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, badRequest("offset must be a number ≥ 0")
		}
		p.Offset = n
	}
	return p, nil
}

func (p pager) First() int { return min(p.Offset+1, p.Total) }
func (p pager) Last() int  { return min(p.Offset+p.Limit, p.Total) }
func (p pager) HasPrev() bool {
	return p.Offset > 0
}
func (p pager) HasNext() bool { return p.Offset+p.Limit < p.Total }
func (p pager) at(offset int) template.URL {
	q := url.Values{}
	for k, v := range p.Query {
		q[k] = v
	}
	q.Set("offset", strconv.Itoa(max(offset, 0)))
	return template.URL("?" + q.Encode())
}
func (p pager) Prev() template.URL { return p.at(p.Offset - p.Limit) }
func (p pager) Next() template.URL { return p.at(p.Offset + p.Limit) }

// done ends a form post: back to the page with a message. A refusal of
// the API's code (validation, conflict, not found) is shown to the user; any
// other error is the page's error.
func (c *Console) done(w http.ResponseWriter, r *http.Request, back string, err error, okText string) error {
	var ae *apiError
	var pe *pageError
	switch {
	case errors.As(err, &ae) && ae.Status < 500:
		setFlash(w, c, "error", ae.Text())
	case errors.As(err, &pe) && pe.status < 500:
		setFlash(w, c, "error", pe.msg)
	case err != nil:
		return err
	default:
		setFlash(w, c, "ok", okText)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// deletion is what a console delete button does: the REST API path it
// deletes, the page a refusal goes back to (the object's own), the page
// shown after the delete (the list) with its message, and, when the
// console words a refusal its own way, the function that does.
type deletion struct {
	api, page, list, ok string
	refusal             func(error) error
}

// deleted ends a delete button: DELETE through the REST API in the
// process (validated and audited there), then to the list with the
// message; a refusal goes back to the object's page with the API's words.
func (c *Console) deleted(w http.ResponseWriter, r *http.Request, s *session, d deletion) error {
	if err := c.callAPI(r, s, http.MethodDelete, d.api, nil, nil); err != nil {
		if d.refusal != nil {
			err = d.refusal(err)
		}
		return c.done(w, r, d.page, err, "")
	}
	return c.done(w, r, d.list, nil, d.ok)
}

// count shows a number read from JSON (an audit summary) as a whole
// number, and anything missing as a dash.
func count(v any) string {
	switch n := v.(type) {
	case float64:
		return strconv.FormatFloat(n, 'f', 0, 64)
	case int:
		return strconv.Itoa(n)
	case int64:
		return strconv.FormatInt(n, 10)
	}
	return "—"
}

// scheduleText says an automation's schedule as people say it: "Patch
// Tuesday + 1 day, 23:00", "Weekly on Monday, 22:00", "Rings from
// 2026-12-01, 22:00". RunAt (a ONCE automation) is shown in UTC.
func scheduleText(a store.Automation) string {
	at := ""
	if a.AtTime != "" {
		at = ", " + a.AtTime
	}
	if a.Kind == store.KindRing {
		return "Rings from " + a.StartDate + at
	}
	switch a.ScheduleKind {
	case "NOW":
		return "Once, at creation"
	case "ONCE":
		return "Once, " + whenPtr(a.RunAt)
	}
	switch a.Freq {
	case "DAILY":
		return "Daily" + at
	case "WEEKLY":
		if a.Weekday != nil && *a.Weekday >= 0 && *a.Weekday < len(weekdays) {
			return "Weekly on " + weekdays[*a.Weekday] + at
		}
		return "Weekly" + at
	case "MONTHLY":
		if a.MonthDay != nil {
			return "Monthly on day " + strconv.Itoa(*a.MonthDay) + at
		}
		return "Monthly" + at
	case "PATCH_TUESDAY":
		switch {
		case a.OffsetDays == 1:
			return "Patch Tuesday + 1 day" + at
		case a.OffsetDays > 1:
			return "Patch Tuesday + " + strconv.Itoa(a.OffsetDays) + " days" + at
		}
		return "Patch Tuesday" + at
	}
	return strings.TrimSpace(a.ScheduleKind + " " + a.Freq + " " + a.AtTime)
}

// platformNames are the platforms as people write them.
var platformNames = map[string]string{"windows": "Windows", "linux": "Linux", "macos": "macOS"}

// plainWords are the words the console shows for the API's enum values.
var plainWords = map[string]string{
	"PENDING": "Waiting", "RUNNING": "Running", "SUCCESS": "Succeeded", "FAILED": "Failed",
	"CANCELLED": "Cancelled", "STOPPED": "Stopped", "COMPLETED": "Completed",
	"NEW": "New", "APPROVED": "Approved", "DECLINED": "Declined",
	"connected": "Connected", "disconnected": "Disconnected",
	"ANY": "Any", "OS": "Operating system", "THIRD_PARTY": "Applications",
}

// plain is the word shown for an enum value, or the value itself when it
// has none.
func plain(v string) string {
	if w, ok := plainWords[v]; ok {
		return w
	}
	return v
}

func isNotFound(err error) bool { return errors.Is(err, dberr.ErrNotFound) }

func ptr[T any](v T) *T { return &v }
