package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// fieldLabels maps the API's field paths of one form to the form's labels.
// A path with an index is looked up with [] ("rings[].groupId"), its label
// taking the 1-based position for %d ("Group of ring %d").
type fieldLabels map[string]string

var fieldIndex = regexp.MustCompile(`\[(\d+)\]`)

// label is the form's label of an API field path, or "" when the form has
// none.
func (l fieldLabels) label(field string) string {
	if s, ok := l[field]; ok {
		return s
	}
	m := fieldIndex.FindStringSubmatch(field)
	if m == nil {
		return ""
	}
	n, _ := strconv.Atoi(m[1])
	if s, ok := l[fieldIndex.ReplaceAllString(field, "[]")]; ok {
		if strings.Contains(s, "%d") {
			return strings.Replace(s, "%d", strconv.Itoa(n+1), 1)
		}
		return s
	}
	// rings[1].groupId without its own label: the list's label.
	if s, ok := l[field[:strings.Index(field, "[")]]; ok {
		return s + " (entry " + strconv.Itoa(n+1) + ")"
	}
	return ""
}

var apiName = regexp.MustCompile(`\b[a-z]+[A-Z][A-Za-z]*\b`)

// say is one problem as the form speaks: its label, and the API's field
// names in the message replaced by the form's labels.
func (l fieldLabels) say(field, message string) string {
	message = apiName.ReplaceAllStringFunc(message, func(w string) string {
		if s := l.label(w); s != "" {
			return `"` + s + `"`
		}
		return w
	})
	name := l.label(field)
	if name == "" {
		name = field
	}
	if name == "" {
		return message
	}
	return name + ": " + message
}

// lines are field problems in the form's words, one a line.
func (l fieldLabels) lines(problems []valid.Problem) string {
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = l.say(p.Field, p.Message)
	}
	return strings.Join(lines, "\n")
}

// refusal is the text of a refusal of the API's code (a 4xx) in the
// form's words, each problem on a line; ok is false for any other error.
func (l fieldLabels) refusal(err error) (text string, ok bool) {
	var ae *apiError
	var pe *pageError
	var ve *valid.Error
	switch {
	case errors.As(err, &ae) && ae.Status < 500:
		if len(ae.Details) == 0 {
			return ae.Text(), true
		}
		return l.lines(ae.Details), true
	case errors.As(err, &pe) && pe.status < 500:
		return pe.msg, true
	case errors.As(err, &ve):
		return l.lines(ve.Problems), true
	}
	return "", false
}

// refusedStatus is the status of a form shown again after a refusal.
func refusedStatus(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status
	}
	var pe *pageError
	if errors.As(err, &pe) {
		return pe.status
	}
	return http.StatusUnprocessableEntity
}

// automationLabels are the automation form's labels of the API's fields.
var automationLabels = fieldLabels{
	"name": "Name", "description": "Description", "actionType": "Action", "payload": "Action settings",
	"payload.scriptId": "Stored script", "payload.script": "Code", "payload.language": "Language", "payload.wingetId": "winget id",
	"payload.name": "Application name", "payload.message": "Message", "payload.timeoutSeconds": "Delay (seconds)",
	"payload.approvalMode": "Which updates", "payload.filters": "Only these severities", "payload.filters.severities": "Only these severities",
	"payload.filters.severities[]": "Only these severities", "payload.mode": "Which updates",
	"windowMinutes": "Maintenance window", "kind": "Kind", "targetMode": "Target", "groupId": "Group", "endpointIds": "Endpoint ids",
	"endpointIds[]": "Endpoint id %d", "scheduleKind": "Schedule", "runAt": "Date and time", "freq": "Frequency", "weekday": "Weekday",
	"monthDay": "Day of the month", "offsetDays": "Days after Patch Tuesday", "atTime": "Time of day", "startDate": "First ring date",
	"rings": "Rings", "rings[].groupId": "Group of ring %d", "rings[].offsetDays": "Days after start of ring %d", "rings[].name": "Name of ring %d",
	"enabled": "Enabled",
}

// alertLabels are the alert rule form's labels of the API's fields.
var alertLabels = fieldLabels{
	"name": "Name", "trigger": "Trigger", "threshold": "Threshold", "emailTo": "E-mail recipients", "emailTo[]": "E-mail recipient %d",
	"webhookUrl": "Webhook URL", "webhookSecret": "Webhook secret", "reportKey": "Report watched", "enabled": "Enabled",
	"webhookRetryMinutes": "Retry failed webhooks for",
}

// automationActions are the actions the automation form offers.
var automationActions = [][2]string{{"DEPLOY_UPDATES", "Deploy updates"}, {"REBOOT", "Reboot"}, {"RUN_SCRIPT", "Run a script"},
	{"DEPLOY_SOFTWARE", "Install software (winget)"}, {"UNINSTALL_SOFTWARE", "Uninstall software"}}

// maxRingRows is how many rings the form reads (the API's limit).
const maxRingRows = 20

// ringRows are the ring rows the form shows: four, or as many as the
// automation has.
func ringRows(f url.Values) []int {
	n := len(ringRowsShown)
	for i := range maxRingRows {
		if f.Get("ring"+strconv.Itoa(i)+"group") != "" {
			n = max(n, i+1)
		}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// scriptLabels are the script form's labels of the API's fields.
var scriptLabels = fieldLabels{
	"name": "Name", "language": "Language", "code": "Code", "parameters": "Parameters",
	"parameters[]": "Parameter %d", "rebootExitCodes": "Exit codes that mean \"reboot needed\"",
	"timeoutSeconds": "Time limit in seconds",
}

var (
	formSeverities = []string{"Critical", "Important", "Moderate", "Low"}
	formLanguages  = []string{"powershell", "sh", "bash", "python", "cmd"}
	ringRowsShown  = []int{0, 1, 2, 3}
)

// newAutomationValues are the new automation form's first values.
func newAutomationValues() url.Values {
	f := url.Values{"actionType": {"DEPLOY_UPDATES"}, "approvalMode": {"approved"}, "message": {"Restarting for maintenance"},
		"timeoutSeconds": {"300"}, "language": {"powershell"}, "kind": {"SCHEDULED"}, "targetMode": {"all"}, "scheduleKind": {"RECURRING"},
		"freq": {"PATCH_TUESDAY"}, "monthDay": {"1"}, "offsetDays": {"0"}, "atTime": {"22:00"}}
	for _, i := range ringRowsShown {
		n := strconv.Itoa(i)
		f.Set("ring"+n+"name", "Ring "+strconv.Itoa(i+1))
		f.Set("ring"+n+"offset", n)
	}
	return f
}

// automationValues are an automation as the form's values (its edit page).
// keep is its payload when the form cannot show it whole (set through the
// API: selected update keys, script parameters…): the form then keeps it
// as it is unless the action changes.
func automationValues(a store.Automation, loc *time.Location) (f url.Values, keep string) {
	f = newAutomationValues()
	f.Set("name", a.Name)
	f.Set("description", a.Description)
	f.Set("actionType", a.ActionType)
	f.Set("enabled", strconv.FormatBool(a.Enabled))
	var p map[string]any
	json.Unmarshal(a.Payload, &p)
	str := func(k string) string {
		if v, ok := p[k].(string); ok {
			return v
		}
		return ""
	}
	switch a.ActionType {
	case "DEPLOY_UPDATES":
		if m := str("approvalMode"); m != "" {
			f.Set("approvalMode", m)
		}
		if flt, ok := p["filters"].(map[string]any); ok {
			if flt["kev"] == true {
				f.Set("kev", "true")
			}
			for _, k := range []string{"minCvss", "minEpss"} {
				if v, ok := flt[k].(float64); ok {
					f.Set(k, strconv.FormatFloat(v, 'f', -1, 64))
				}
			}
			if sev, ok := flt["severities"].([]any); ok {
				for _, s := range sev {
					if v, ok := s.(string); ok {
						f.Add("severities", v)
					}
				}
			}
		}
	case "REBOOT":
		f.Set("message", str("message"))
		if n, ok := p["timeoutSeconds"].(float64); ok {
			f.Set("timeoutSeconds", strconv.FormatFloat(n, 'f', 0, 64))
		}
	case "RUN_SCRIPT":
		f.Set("scriptId", str("scriptId"))
		f.Set("script", str("script"))
		if l := str("language"); l != "" {
			f.Set("language", l)
		}
	case "DEPLOY_SOFTWARE":
		f.Set("wingetId", str("wingetId"))
	case "UNINSTALL_SOFTWARE":
		f.Set("softwareName", str("name"))
	}
	if a.WindowMinutes != nil {
		f.Set("windowMinutes", strconv.Itoa(*a.WindowMinutes))
	}
	if a.Kind == store.KindRing {
		f.Set("kind", "RING")
		f.Set("startDate", a.StartDate)
		f.Set("atTime", a.AtTime)
		for _, i := range ringRowsShown {
			n := strconv.Itoa(i)
			f.Del("ring" + n + "name")
			f.Del("ring" + n + "offset")
		}
		for i, ring := range a.Rings {
			n := strconv.Itoa(i)
			f.Set("ring"+n+"name", ring.Name)
			f.Set("ring"+n+"group", ring.GroupID)
			f.Set("ring"+n+"offset", strconv.Itoa(ring.OffsetDays))
		}
	} else {
		f.Set("targetMode", a.TargetMode)
		f.Set("groupId", a.GroupID)
		f.Set("endpointIds", strings.Join(a.EndpointIDs, "\n"))
		f.Set("scheduleKind", a.ScheduleKind)
		if a.RunAt != nil {
			f.Set("runAt", a.RunAt.In(loc).Format("2006-01-02T15:04"))
		}
		if a.Freq != "" {
			f.Set("freq", a.Freq)
		}
		f.Set("atTime", a.AtTime)
		if a.Weekday != nil {
			f.Set("weekday", strconv.Itoa(*a.Weekday))
		}
		if a.MonthDay != nil {
			f.Set("monthDay", strconv.Itoa(*a.MonthDay))
		}
		f.Set("offsetDays", strconv.Itoa(a.OffsetDays))
	}
	if !sameJSON(a.Payload, actionPayload(f)) {
		keep = string(a.Payload)
	}
	return f, keep
}

// sameJSON tells whether a stored payload says the same as one the form
// builds.
func sameJSON(stored json.RawMessage, built map[string]any) bool {
	var a, b any
	if json.Unmarshal(stored, &a) != nil {
		return false
	}
	raw, _ := json.Marshal(built)
	json.Unmarshal(raw, &b)
	return reflect.DeepEqual(a, b)
}
