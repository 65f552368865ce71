package actions

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/valid"
)

func fields(err error) []string {
	var v *valid.Error
	if !errors.As(err, &v) {
		return nil
	}
	var out []string
	for _, p := range v.Problems {
		out = append(out, p.Field)
	}
	return out
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, typ, payload string
		bad                []string // fields with problems; nil = valid
		fixed              string   // expected Fixed JSON, when set
	}{
		{"inline script", "RUN_SCRIPT", `{"script":"echo hi","language":"Bash"}`, nil, `{"script":"echo hi","language":"bash"}`},
		{"pwsh spelling", "RUN_SCRIPT", `{"script":"Get-Date","language":"pwsh"}`, nil, `{"script":"Get-Date","language":"powershell"}`},
		{"script without language", "RUN_SCRIPT", `{"script":"echo"}`, []string{"payload.language"}, ""},
		{"no script", "RUN_SCRIPT", `{}`, []string{"payload.script"}, ""},
		{"stored script", "RUN_SCRIPT", `{"scriptId":"s1","parameters":{"Path":"/tmp","Force":true,"N":3}}`, nil, ""},
		{"both", "RUN_SCRIPT", `{"scriptId":"s1","script":"echo"}`, []string{"payload.script"}, ""},
		{"bad parameter", "RUN_SCRIPT", `{"scriptId":"s1","parameters":{"x":{"a":1}}}`, []string{"payload.parameters.x"}, ""},
		{"wrong type", "RUN_SCRIPT", `{"script":5,"language":"sh"}`, []string{"payload.script"}, ""},
		{"not an object", "REBOOT", `[1]`, []string{"payload"}, ""},
		{"reboot defaults", "REBOOT", ``, nil, `{"message":"","timeoutSeconds":300}`},
		{"reboot", "REBOOT", `{"message":" Patching ","timeoutSeconds":60}`, nil, `{"message":"Patching","timeoutSeconds":60}`},
		{"reboot bad timeout", "REBOOT", `{"timeoutSeconds":-1}`, []string{"payload.timeoutSeconds"}, ""},
		{"winget", "DEPLOY_SOFTWARE", `{"wingetId":"Mozilla.Firefox"}`, nil, `{"wingetId":"Mozilla.Firefox"}`},
		{"url", "DEPLOY_SOFTWARE", `{"url":"https://example.com/a.msi","args":"/qn"}`, nil, `{"url":"https://example.com/a.msi","args":"/qn"}`},
		{"bad url", "DEPLOY_SOFTWARE", `{"url":"ftp://x/a"}`, []string{"payload.url"}, ""},
		{"software nothing", "DEPLOY_SOFTWARE", `{}`, []string{"payload.wingetId"}, ""},
		{"software both", "DEPLOY_SOFTWARE", `{"wingetId":"a","url":"https://x/y"}`, []string{"payload.url"}, ""},
		{"bad sha", "DEPLOY_SOFTWARE", `{"url":"https://x/y","sha256":"zz"}`, []string{"payload.sha256"}, ""},
		{"http url", "DEPLOY_SOFTWARE", `{"url":"http://example.com/a.msi"}`, []string{"payload.url"}, ""},
		{"short sha", "DEPLOY_SOFTWARE", `{"url":"https://x/y","sha256":"` + strings.Repeat("a", 63) + `"}`, []string{"payload.sha256"}, ""},
		{"sha lowercased", "DEPLOY_SOFTWARE", `{"url":"https://x/y.sh","sha256":"` + strings.Repeat("AB", 32) + `"}`, nil, `{"url":"https://x/y.sh","sha256":"` + strings.Repeat("ab", 32) + `"}`},
		{"uninstall", "UNINSTALL_SOFTWARE", `{"name":"7-Zip"}`, nil, `{"name":"7-Zip"}`},
		{"uninstall no name", "UNINSTALL_SOFTWARE", `{"name":"  "}`, []string{"payload.name"}, ""},
		{"deploy default", "DEPLOY_UPDATES", `{}`, nil, ""},
		{"deploy selected", "DEPLOY_UPDATES", `{"mode":"selected","keys":["KB1"]}`, nil, ""},
		{"deploy selected no keys", "DEPLOY_UPDATES", `{"mode":"selected"}`, []string{"payload.keys"}, ""},
		{"deploy filters", "DEPLOY_UPDATES", `{"mode":"filters","filterVersion":2,"approvalMode":"approved_only","filters":{"severities":["critical"],"types":["Security Updates"],"sources":["THIRD_PARTY"]}}`, nil, ""},
		{"deploy bad everything", "DEPLOY_UPDATES", `{"mode":"filters","filterVersion":3,"approvalMode":"maybe","filters":{"severities":["urgent"],"sources":["cloud"]}}`,
			[]string{"payload.approvalMode", "payload.filterVersion", "payload.filters.severities[0]", "payload.filters.sources[0]"}, ""},
		{"deploy filters missing", "DEPLOY_UPDATES", `{"mode":"filters"}`, []string{"payload.filters"}, ""},
		{"deploy bad mode", "DEPLOY_UPDATES", `{"mode":"some"}`, []string{"payload.mode"}, ""},
		{"bad type", "FORMAT_DISK", `{}`, []string{"type"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := Parse(c.typ, json.RawMessage(c.payload), "payload.")
			got := fields(err)
			if strings.Join(got, ",") != strings.Join(c.bad, ",") {
				t.Fatalf("problems %v (%v), want %v", got, err, c.bad)
			}
			if err == nil && !json.Valid(a.Payload) {
				t.Fatalf("payload %s", a.Payload)
			}
			if c.fixed != "" && string(a.Fixed) != c.fixed {
				t.Fatalf("fixed %s, want %s", a.Fixed, c.fixed)
			}
		})
	}
}

func TestApprovalModeSpellings(t *testing.T) {
	for in, want := range map[string]string{"": NotDeclined, "ALL": NotDeclined, "all_but_declined": NotDeclined, "notDeclined": NotDeclined,
		"approved": ApprovedOnly, "APPROVED_ONLY": ApprovedOnly, "onlyApproved": ApprovedOnly, "approved-only": ApprovedOnly} {
		if got, ok := ParseApprovalMode(in); !ok || got != want {
			t.Errorf("%q: %q %v", in, got, ok)
		}
	}
	if _, ok := ParseApprovalMode("declined"); ok {
		t.Error("declined accepted")
	}
}

func sp(s string) *string { return &s }

var fleet = []Missing{
	{Key: "KB1", Title: "Cumulative", KB: sp("KB1"), Severity: "Critical", Source: "OS - Mandatory", Categories: []string{"Security Updates"}},
	{Key: "KB2", Title: "Driver", KB: sp("KB2"), Severity: "Unspecified", Source: "OS - Optional", Categories: []string{"Drivers"}},
	{Key: "Mozilla.Firefox@133", Title: "Firefox", WingetID: sp("Mozilla.Firefox"), Latest: sp("133"), Severity: "Unspecified", Source: "Applications", FixesVulnerability: "Critical"},
	{Key: "Notepad++@8.7", Title: "Notepad++", WingetID: sp("Notepad++.Notepad++"), Latest: sp("8.7"), Severity: "Unspecified", Source: "Applications"},
	{Key: "acme@2", Title: "Acme tool", Latest: sp("2"), Severity: "Unspecified", Source: "Applications"},
	{Key: "debian:openssl@3", Title: "openssl", PackageName: sp("openssl"), Severity: "Important", Source: "OS - Mandatory"},
}

func keys(r Result) string {
	var out []string
	for _, u := range r.Payload.Updates {
		out = append(out, u.Key)
	}
	return strings.Join(out, " ")
}

func TestSelect(t *testing.T) {
	approvals := map[string]string{"KB1": "APPROVED", "Notepad++@8.7": "DECLINED", "Mozilla.Firefox@133": "APPROVED"}
	for _, c := range []struct {
		name, payload, want, nothing string
	}{
		{"all, not declined, skips the sourceless one", `{"mode":"all"}`, "KB1 KB2 Mozilla.Firefox@133 debian:openssl@3", ""},
		{"approved only", `{"mode":"all","approvalMode":"approved"}`, "KB1 Mozilla.Firefox@133", ""},
		{"selected", `{"mode":"selected","keys":["KB2","Notepad++@8.7"]}`, "KB2", ""},
		{"selected declined only", `{"mode":"selected","keys":["Notepad++@8.7"]}`, "", "Nothing to install: 1 matching update(s), 1 declined"},
		{"selected sourceless", `{"mode":"selected","keys":["acme@2"]}`, "", "Nothing to install: 1 matching update(s), 1 without a package source"},
		{"selected unknown", `{"mode":"selected","keys":["KB9"]}`, "", "Nothing to install: no missing update on this endpoint matches the selection"},
		// Without filterVersion 2: applications only by Application Updates, always Unspecified.
		{"v1 regular updates selects OS only", `{"mode":"filters","filters":{"types":["Regular Updates"]}}`, "KB2 debian:openssl@3", ""},
		{"v1 critical selects OS only", `{"mode":"filters","filters":{"severities":["Critical"]}}`, "KB1", ""},
		{"v1 application updates", `{"mode":"filters","filters":{"types":["Application Updates"]}}`, "Mozilla.Firefox@133", ""},
		{"v1 unspecified includes apps", `{"mode":"filters","filters":{"severities":["Unspecified"],"sources":["Applications"]}}`, "Mozilla.Firefox@133", ""},
		// filterVersion 2: an app fixing a vulnerability is a Security Update with its severity.
		{"v2 security", `{"mode":"filters","filterVersion":2,"filters":{"types":["Security Updates"]}}`, "KB1 Mozilla.Firefox@133", ""},
		{"v2 critical", `{"mode":"filters","filterVersion":2,"filters":{"severities":["Critical"]}}`, "KB1 Mozilla.Firefox@133", ""},
		{"v2 regular apps", `{"mode":"filters","filterVersion":2,"filters":{"types":["regular update"],"sources":["third_party"]}}`, "", "Nothing to install: 2 matching update(s), 1 declined, 1 without a package source"},
		{"v2 application updates label matches no app", `{"mode":"filters","filterVersion":2,"filters":{"types":["Application Updates"]}}`, "", "Nothing to install: no missing update on this endpoint matches the selection"},
		{"source OS", `{"mode":"filters","filters":{"sources":["OS"]}}`, "KB1 KB2 debian:openssl@3", ""},
		{"category label", `{"mode":"filters","filters":{"types":["Drivers"]}}`, "KB2", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := Parse("DEPLOY_UPDATES", json.RawMessage(c.payload), "payload.")
			if err != nil {
				t.Fatal(err)
			}
			r := a.Deploy.Select(fleet, approvals)
			if keys(r) != c.want || r.Nothing != c.nothing {
				t.Fatalf("got %q %q, want %q %q", keys(r), r.Nothing, c.want, c.nothing)
			}
			if r.Nothing != "" && !strings.HasPrefix(r.Nothing, "Nothing to install") {
				t.Fatal(r.Nothing)
			}
		})
	}
}

func TestResolveScript(t *testing.T) {
	s := StoredScript{Name: "clean", Language: "bash", Code: "rm -rf $DIR", Parameters: []ScriptParam{{Name: "DIR", Default: "/tmp/x"}, {Name: "KEY", Required: true}},
		RebootExitCodes: []int{3010}, TimeoutSeconds: 600}
	p, err := ResolveScript(s, map[string]string{"KEY": "k"}, 0, "payload.")
	if err != nil {
		t.Fatal(err)
	}
	want := agentproto.RunScriptPayload{Script: "rm -rf $DIR", Language: "bash", Parameters: map[string]string{"DIR": "/tmp/x", "KEY": "k"}, TimeoutSeconds: 600, RebootExitCodes: []int{3010}}
	if string(mustJSON(p)) != string(mustJSON(want)) {
		t.Fatalf("%s", mustJSON(p))
	}
	_, err = ResolveScript(s, map[string]string{"NOPE": "1"}, 0, "payload.")
	if got := strings.Join(fields(err), ","); got != "payload.parameters.NOPE,payload.parameters.KEY" {
		t.Fatalf("problems %s", got)
	}
}
