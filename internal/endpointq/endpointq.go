// Package endpointq reads the endpoint lists' filters and order from query
// parameters: one reading for GET /api/v1/endpoints (where all but the
// spec's q are patchd additions) and for the console's endpoints list.
package endpointq

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/store"
)

// MissedCheckins is how many check-in intervals an endpoint may go unseen
// and still count as connected: one rule for its status everywhere (the
// API and the console's lists, the replicas' status sweep, the
// "disconnected" alert). Its other half: an endpoint whose agent said it
// stops (POST /agent/v1/stopping) after its last check-in is disconnected
// at once; the store applies both (store.seenConnected, with
// ConnectedSince as its argument).
const MissedCheckins = 3

// DisconnectedAfter is how long an endpoint goes unseen before it counts
// as disconnected, for agents checking in every checkin.
func DisconnectedAfter(checkin time.Duration) time.Duration { return MissedCheckins * checkin }

// ConnectedSince is the oldest last check-in of an endpoint connected at
// now.
func ConnectedSince(now time.Time, checkin time.Duration) time.Time {
	return now.Add(-DisconnectedAfter(checkin))
}

// Keys are the parameters that select endpoints (paging, order and the
// console's columns aside), in the order a link writes them.
var Keys = []string{"q", "search", "status", "platform", "os", "groupId", "missing", "compliance", "pendingReboot", "notSeenDays", "agentVersion",
	"updateKey", "cve", "software", "softwareVersion"}

// Platforms are the values of platform.
var Platforms = []string{"windows", "linux", "macos"}

// MaxNotSeenDays bounds notSeenDays (ten years).
const MaxNotSeenDays = 3650

// Error is a parameter refused, with why.
type Error struct {
	Param, Message string
}

func (e *Error) Error() string { return e.Param + ": " + e.Message }

// Parse reads the filters, sort and order of v for the organization; now
// and connectedSince place notSeenDays and status in time. Paging is the
// caller's.
func Parse(v url.Values, orgID string, now, connectedSince time.Time) (store.EndpointQuery, error) {
	q := store.EndpointQuery{OrgID: orgID, Q: strings.TrimSpace(v.Get("q")), Search: strings.TrimSpace(v.Get("search")),
		Status: v.Get("status"), Platform: v.Get("platform"), OS: strings.TrimSpace(v.Get("os")), GroupID: v.Get("groupId"),
		Missing: v.Get("missing"), Compliance: v.Get("compliance"), Now: now, AgentVersion: strings.TrimSpace(v.Get("agentVersion")), Sort: v.Get("sort"), ConnectedSince: connectedSince,
		UpdateKey: strings.TrimSpace(v.Get("updateKey")), CVE: strings.ToUpper(strings.TrimSpace(v.Get("cve"))),
		Software: v.Get("software"), SoftwareVersion: v.Get("softwareVersion")}
	if q.SoftwareVersion != "" && q.Software == "" {
		return q, &Error{"softwareVersion", "goes with software (the title's name)"}
	}
	oneOf := func(param, val string, allowed []string) error {
		if val == "" || slices.Contains(allowed, val) {
			return nil
		}
		return &Error{param, "must be one of " + strings.Join(allowed, ", ") + ", not " + strconv.Quote(val)}
	}
	for _, err := range []error{oneOf("status", q.Status, store.EndpointStatuses), oneOf("platform", q.Platform, Platforms),
		oneOf("missing", q.Missing, store.EndpointMissing), oneOf("compliance", q.Compliance, store.EndpointCompliance), oneOf("sort", q.Sort, store.EndpointSorts), oneOf("order", v.Get("order"), []string{"asc", "desc"}),
		oneOf("pendingReboot", v.Get("pendingReboot"), []string{"1", "0"})} {
		if err != nil {
			return q, err
		}
	}
	q.Desc = v.Get("order") == "desc"
	q.PendingReboot = v.Get("pendingReboot") == "1"
	if d := v.Get("notSeenDays"); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 || n > MaxNotSeenDays {
			return q, &Error{"notSeenDays", fmt.Sprintf("must be a whole number of days from 1 to %d", MaxNotSeenDays)}
		}
		q.NotSeenSince = now.Add(-time.Duration(n) * 24 * time.Hour)
	}
	return q, nil
}

// Filters is the part of v that selects endpoints, as Parse reads it.
func Filters(v url.Values) url.Values {
	out := url.Values{}
	for _, k := range Keys {
		if x := v.Get(k); x != "" {
			out.Set(k, x)
		}
	}
	return out
}
