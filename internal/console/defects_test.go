package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// Issue 18, defect 10: no "· serial" without a serial number, a signed-in
// 404 keeps the navigation and does not offer to sign in, and the dashboard
// gives no green "0 overdue" before any vulnerability feed was loaded.
func TestEmptySerialSignedIn404AndNoFeed(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	ag := e.Enroll("m-1", "one", "linux")
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")

	code, body := b.get("/console/endpoints/" + ag.ID)
	if code != http.StatusOK || strings.Contains(body, "serial") {
		t.Errorf("endpoint without a serial number: %d, the page says %q", code, between(body, "<dt>Hardware</dt>", "</dd>"))
	}
	code, body = b.get("/console/no-such-page")
	if code != http.StatusNotFound || !strings.Contains(body, `aria-label="Main"`) || strings.Contains(body, `href="/console/login"`) {
		t.Errorf("a signed-in 404 (%d) has navigation %v and offers to sign in %v", code, strings.Contains(body, `aria-label="Main"`), strings.Contains(body, `href="/console/login"`))
	}
	code, body = b.get("/console/")
	if code != http.StatusOK || strings.Contains(body, `id="overdue"`) || !strings.Contains(body, `id="no-feed"`) {
		t.Errorf("the dashboard before any feed (%d): %q", code, between(body, `id="h-vulns"`, "</section>"))
	}
	// Signed out, the 404 page still offers to sign in.
	code, body = newBrowser(t, e.URL).get("/console/no-such-page")
	if code != http.StatusNotFound || !strings.Contains(body, `href="/console/login"`) {
		t.Errorf("a signed-out 404 (%d) does not offer to sign in", code)
	}
}

// between is the text of s from after start to end (for messages).
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		s = s[:j]
	}
	return s
}

// Issue 18, defect 5: the schedule preview never lists a past date as a
// next run; it says the date is past, as the server will.
func TestSchedulePreviewRefusesPastDates(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	code, body := b.get("/console/automations/preview?kind=SCHEDULED&scheduleKind=ONCE&runAt=2020-01-01T10:00&atTime=22:00")
	if code != http.StatusOK || strings.Contains(body, "<li>") || !strings.Contains(body, "in the past") {
		t.Errorf("preview of a past date: %d %s", code, body)
	}
	next := time.Now().AddDate(0, 0, 3).UTC().Format("2006-01-02T15:04")
	code, body = b.get("/console/automations/preview?kind=SCHEDULED&scheduleKind=ONCE&runAt=" + next + "&atTime=22:00")
	if code != http.StatusOK || strings.Count(body, "<li>") != 1 {
		t.Errorf("preview of a future date: %d %s", code, body)
	}
}
