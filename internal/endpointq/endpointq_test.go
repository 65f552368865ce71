package endpointq

import (
	"errors"
	"net/url"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	v, _ := url.ParseQuery("q=ws&search=10.0&status=connected&platform=linux&os=debian&groupId=g1&missing=critical&pendingReboot=1&notSeenDays=7&agentVersion=1.2.0&sort=lastSeen&order=desc&limit=5&updateKey=KB5066835&cve=cve-2024-4671")
	q, err := Parse(v, "o1", now, now.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if q.OrgID != "o1" || q.Q != "ws" || q.Search != "10.0" || q.Status != "connected" || q.Platform != "linux" || q.OS != "debian" ||
		q.GroupID != "g1" || q.Missing != "critical" || !q.PendingReboot || !q.NotSeenSince.Equal(now.Add(-7*24*time.Hour)) ||
		q.AgentVersion != "1.2.0" || q.UpdateKey != "KB5066835" || q.CVE != "CVE-2024-4671" || q.Sort != "lastSeen" || !q.Desc || !q.ConnectedSince.Equal(now.Add(-time.Minute)) {
		t.Errorf("parsed %+v", q)
	}
	if got := Filters(v).Encode(); got != "agentVersion=1.2.0&cve=cve-2024-4671&groupId=g1&missing=critical&notSeenDays=7&os=debian&pendingReboot=1&platform=linux&q=ws&search=10.0&status=connected&updateKey=KB5066835" {
		t.Errorf("filters %s", got)
	}
	for _, bad := range []string{"status=asleep", "platform=plan9", "missing=some", "sort=secret", "order=up", "pendingReboot=yes",
		"notSeenDays=0", "notSeenDays=3651", "notSeenDays=x"} {
		v, _ := url.ParseQuery(bad)
		_, err := Parse(v, "o1", now, now)
		var pe *Error
		if !errors.As(err, &pe) || pe.Message == "" {
			t.Errorf("%s: %v, want a parameter error", bad, err)
		}
	}
}
