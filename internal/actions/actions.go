// Package actions owns what an action asks an endpoint to do, without HTTP
// or SQL: the validation of each action type's payload (every field problem
// at once, as valid.Errors), the payload handed to agents, and the
// DEPLOY_UPDATES selection that turns an endpoint's missing updates, the
// organization's approvals and the payload's filters into the explicit list
// of updates the agent installs.
package actions

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/valid"
)

// Types lists the action types with their labels (Automation.actionLabel).
var Types = map[string]string{
	agentproto.TypeRunScript:         "Run script",
	agentproto.TypeDeployUpdates:     "Deploy updates",
	agentproto.TypeReboot:            "Reboot",
	agentproto.TypeDeploySoftware:    "Deploy software",
	agentproto.TypeUninstallSoftware: "Uninstall software",
}

// Label is the display label of an action type.
func Label(actionType string) string { return Types[actionType] }

// Limits of payload values.
const (
	MaxScriptBytes      = 256 << 10
	MaxText             = 1024
	MaxRebootTimeout    = 24 * 3600
	MaxScriptTimeout    = 24 * 3600
	DefaultRebootTimout = 300
)

// Languages a script may be written in, with the spellings accepted for each.
var languages = map[string]string{
	"sh": "sh", "shell": "sh", "bash": "bash",
	"powershell": "powershell", "pwsh": "powershell", "ps": "powershell", "ps1": "powershell",
	"python": "python", "python3": "python", "py": "python",
	"cmd": "cmd", "bat": "cmd", "batch": "cmd",
}

// Language normalizes a script language; ok is false for an unknown one.
func Language(s string) (string, bool) {
	l, ok := languages[strings.ToLower(strings.TrimSpace(s))]
	return l, ok
}

// Action is a validated action: its type, the payload as stored (normalized),
// and what is needed to resolve it per endpoint when a run is created.
type Action struct {
	Type string
	// Payload is the normalized payload, stored with the automation or run.
	Payload json.RawMessage
	// Fixed is the payload every command carries, for the types that need
	// no resolution at run time (inline scripts, reboot, software).
	Fixed json.RawMessage
	// ScriptID and Parameters name a stored script resolved at run time.
	ScriptID   string
	Parameters map[string]string
	// Deploy is the DEPLOY_UPDATES selection.
	Deploy *Selection
}

// runScriptBody is every field a RUN_SCRIPT payload may carry.
type runScriptBody struct {
	Script         *string        `json:"script"`
	Language       *string        `json:"language"`
	ScriptID       *string        `json:"scriptId"`
	Parameters     map[string]any `json:"parameters"`
	TimeoutSeconds *int           `json:"timeoutSeconds"`
}

// Parse validates the payload of an action of type actionType. Problems
// name their field under prefix (for example "payload.").
func Parse(actionType string, payload json.RawMessage, prefix string) (Action, error) {
	a := Action{Type: actionType}
	var errs valid.Errors
	if _, ok := Types[actionType]; !ok {
		errs.Add(strings.TrimSuffix(prefix, "payload.")+"type", "must be RUN_SCRIPT, DEPLOY_UPDATES, REBOOT, DEPLOY_SOFTWARE or UNINSTALL_SOFTWARE")
		return a, errs.Err()
	}
	p := bytes.TrimSpace(payload)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		p = []byte("{}")
	}
	if p[0] != '{' {
		return a, valid.One(strings.TrimSuffix(prefix, "."), "must be an object")
	}
	field := func(name string) string { return prefix + name }
	decode := func(v any) bool {
		if err := json.Unmarshal(p, v); err != nil {
			var te *json.UnmarshalTypeError
			if ok := asTypeError(err, &te); ok && te.Field != "" {
				errs.Add(field(te.Field), "has the wrong type")
			} else {
				errs.Add(strings.TrimSuffix(prefix, "."), "must be a valid object")
			}
			return false
		}
		return true
	}
	var out any
	switch actionType {
	case agentproto.TypeRunScript:
		var b runScriptBody
		if !decode(&b) {
			break
		}
		timeout := 0
		if b.TimeoutSeconds != nil {
			timeout = *b.TimeoutSeconds
			if timeout < 0 || timeout > MaxScriptTimeout {
				errs.Add(field("timeoutSeconds"), "must be 0 to %d", MaxScriptTimeout)
			}
		}
		params := map[string]string{}
		for k, v := range b.Parameters {
			s, ok := scalar(v)
			if !ok {
				errs.Add(field("parameters."+k), "must be a string, number or boolean")
			}
			params[k] = s
		}
		switch {
		case b.ScriptID != nil && strings.TrimSpace(*b.ScriptID) != "":
			if b.Script != nil && *b.Script != "" {
				errs.Add(field("script"), "give either script and language, or scriptId, not both")
			}
			a.ScriptID, a.Parameters = strings.TrimSpace(*b.ScriptID), params
			out = map[string]any{"scriptId": a.ScriptID, "parameters": params}
			if timeout > 0 {
				out.(map[string]any)["timeoutSeconds"] = timeout
			}
		case b.Script == nil || strings.TrimSpace(*b.Script) == "":
			errs.Add(field("script"), "is required (or scriptId for a stored script)")
		default:
			lang, ok := "", false
			if b.Language != nil {
				lang, ok = Language(*b.Language)
			}
			if !ok {
				errs.Add(field("language"), "must be sh, bash, powershell, python or cmd")
			}
			if len(*b.Script) > MaxScriptBytes {
				errs.Add(field("script"), "must be at most %d bytes", MaxScriptBytes)
			}
			fixed := agentproto.RunScriptPayload{Script: *b.Script, Language: lang, TimeoutSeconds: timeout}
			if len(params) > 0 {
				fixed.Parameters = params
			}
			out = fixed
			a.Fixed = mustJSON(fixed)
		}
	case agentproto.TypeDeployUpdates:
		var b selectionBody
		if !decode(&b) {
			break
		}
		sel, problems := b.check(prefix)
		errs.Problems = append(errs.Problems, problems...)
		a.Deploy = &sel
		out = sel.stored()
	case agentproto.TypeReboot:
		var b struct {
			Message        *string `json:"message"`
			TimeoutSeconds *int    `json:"timeoutSeconds"`
		}
		if !decode(&b) {
			break
		}
		r := agentproto.RebootPayload{TimeoutSeconds: DefaultRebootTimout}
		if b.Message != nil {
			r.Message = strings.TrimSpace(*b.Message)
			if utf8.RuneCountInString(r.Message) > MaxText {
				errs.Add(field("message"), "must have at most %d characters", MaxText)
			}
		}
		if b.TimeoutSeconds != nil {
			r.TimeoutSeconds = *b.TimeoutSeconds
			if r.TimeoutSeconds < 0 || r.TimeoutSeconds > MaxRebootTimeout {
				errs.Add(field("timeoutSeconds"), "must be 0 to %d", MaxRebootTimeout)
			}
		}
		out, a.Fixed = r, mustJSON(r)
	case agentproto.TypeDeploySoftware:
		var b agentproto.DeploySoftwarePayload
		if !decode(&b) {
			break
		}
		b.WingetID, b.URL, b.Args, b.PackageName, b.SHA256 = strings.TrimSpace(b.WingetID), strings.TrimSpace(b.URL), strings.TrimSpace(b.Args),
			strings.TrimSpace(b.PackageName), strings.ToLower(strings.TrimSpace(b.SHA256))
		switch {
		case b.WingetID == "" && b.URL == "" && b.PackageName == "":
			errs.Add(field("wingetId"), "is required (or url, with args, for an installer to download)")
		case b.WingetID != "" && b.URL != "":
			errs.Add(field("url"), "give either wingetId or url, not both")
		}
		if b.URL != "" {
			// The installer runs as root: it comes over https only.
			if u, err := url.Parse(b.URL); err != nil || u.Scheme != "https" || u.Host == "" {
				errs.Add(field("url"), "must be an https URL (the installer runs with the highest privileges)")
			}
		}
		if b.SHA256 != "" && (len(b.SHA256) != 64 || strings.Trim(b.SHA256, "0123456789abcdef") != "") {
			errs.Add(field("sha256"), "must be 64 hexadecimal digits")
		}
		for name, v := range map[string]string{"wingetId": b.WingetID, "args": b.Args, "packageName": b.PackageName, "url": b.URL} {
			if utf8.RuneCountInString(v) > MaxText*2 {
				errs.Add(field(name), "must have at most %d characters", MaxText*2)
			}
		}
		out, a.Fixed = b, mustJSON(b)
	case agentproto.TypeUninstallSoftware:
		var b agentproto.UninstallSoftwarePayload
		if !decode(&b) {
			break
		}
		b.Name = strings.TrimSpace(b.Name)
		if b.Name == "" {
			errs.Add(field("name"), "is required: the application's name as in the software inventory")
		} else if utf8.RuneCountInString(b.Name) > MaxText {
			errs.Add(field("name"), "must have at most %d characters", MaxText)
		}
		out, a.Fixed = b, mustJSON(b)
	}
	if err := errs.Err(); err != nil {
		return a, err
	}
	a.Payload = mustJSON(out)
	return a, nil
}

func asTypeError(err error, target **json.UnmarshalTypeError) bool {
	te, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*target = te
	}
	return ok
}

// scalar renders a parameter value as the text a script receives.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool, float64:
		b, _ := json.Marshal(x)
		return string(b), true
	case nil:
		return "", true
	}
	return "", false
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("actions: encode payload: " + err.Error())
	}
	return b
}

// ScriptParam is a parameter a stored script declares.
type ScriptParam struct {
	Name     string `json:"name"`
	Default  string `json:"default"`
	Required bool   `json:"required,omitempty"`
}

// StoredScript is what a stored script gives a run.
type StoredScript struct {
	Name            string
	Language        string
	Code            string
	Parameters      []ScriptParam
	RebootExitCodes []int
	TimeoutSeconds  int
}

// ResolveScript builds the RUN_SCRIPT payload of a stored script with the
// run's parameters over the script's defaults. A parameter the script does
// not declare, or a required one left empty, is a problem of the payload.
func ResolveScript(s StoredScript, params map[string]string, timeout int, prefix string) (agentproto.RunScriptPayload, error) {
	var errs valid.Errors
	values := map[string]string{}
	for _, p := range s.Parameters {
		values[p.Name] = p.Default
	}
	for k, v := range params {
		if !slices.ContainsFunc(s.Parameters, func(p ScriptParam) bool { return p.Name == k }) {
			errs.Add(prefix+"parameters."+k, "the script %q has no such parameter", s.Name)
			continue
		}
		values[k] = v
	}
	for _, p := range s.Parameters {
		if p.Required && values[p.Name] == "" {
			errs.Add(prefix+"parameters."+p.Name, "is required by the script %q", s.Name)
		}
	}
	if timeout == 0 {
		timeout = s.TimeoutSeconds
	}
	out := agentproto.RunScriptPayload{Script: s.Code, Language: s.Language, TimeoutSeconds: timeout, RebootExitCodes: s.RebootExitCodes}
	if len(values) > 0 {
		out.Parameters = values
	}
	return out, errs.Err()
}
