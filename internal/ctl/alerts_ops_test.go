package ctl_test

import (
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/ctl"
	"github.com/patchd/patchd/internal/perm"
)

func TestAlertRuleCommands(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	var res apiv1.AlertRuleResult
	h.okJSON(&res, "alerts", "create", "--name", "offline", "--trigger", "ENDPOINT_OFFLINE", "--email-to", "ops@example.com",
		"--webhook-url", "https://hooks.example.com/x")
	id := res.Rule.ID
	r := h.run("s3cret-s3cret\n", "alerts", "update", id, "--threshold", "30", "--email-to", "", "--webhook-secret-stdin")
	if r.code != 0 || !strings.Contains(r.stdout, `Alert rule "offline" updated.`) {
		t.Fatalf("update: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var got apiv1.AlertRule
	h.okJSON(&got, "alerts", "get", id)
	if got.Threshold != 30 || got.EmailTo != nil || !got.HasWebhookSecret || got.WebhookURL == nil {
		t.Fatalf("after update %+v", got)
	}
	if pairs := h.ok("alerts", "get", id); !strings.Contains(pairs, "ENDPOINT_OFFLINE") || !strings.Contains(pairs, "Signed") {
		t.Errorf("get:\n%s", pairs)
	}
	h.okJSON(&got, "alerts", "disable", id)
	if got.Enabled {
		t.Fatalf("disable: %+v", got)
	}
	h.okJSON(&got, "alerts", "enable", id)
	if !got.Enabled {
		t.Fatalf("enable: %+v", got)
	}
	var ev apiv1.AlertEvent
	h.okJSON(&ev, "alerts", "test", id)
	if ev.Event != "TEST" || ev.RuleID != id {
		t.Fatalf("test: %+v", ev)
	}
	if table := h.ok("alerts", "events", id); !strings.Contains(table, "TEST") || !strings.Contains(table, ev.ID) || !strings.Contains(table, "WEBHOOK") {
		t.Errorf("events:\n%s", table)
	}
	h.fail(ctl.ExitUsage, "nothing to change", "alerts", "update", id)
	h.fail(ctl.ExitUsage, "RULE_ID", "alerts", "get")
	h.fail(ctl.ExitAPI, "validation_failed", "alerts", "update", id, "--webhook-url", "")
	h.ok("alerts", "delete", id)
	h.fail(ctl.ExitAPI, "not_found", "alerts", "get", id)
	h.fail(ctl.ExitAPI, "not_found", "alerts", "events", id)
}

func TestGroupsGetCommand(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.All)

	var res apiv1.GroupResult
	h.okJSON(&res, "groups", "create", "--name", "Web servers", "--rule", "hostname:startsWith:web")
	var g apiv1.Group
	h.okJSON(&g, "groups", "get", res.Group.ID)
	if g.ID != res.Group.ID || g.Name != "Web servers" || len(g.Rules) != 1 {
		t.Fatalf("get: %+v", g)
	}
	if pairs := h.ok("groups", "get", res.Group.ID); !strings.Contains(pairs, "Web servers") || !strings.Contains(pairs, "startsWith") {
		t.Errorf("get:\n%s", pairs)
	}
	h.fail(ctl.ExitAPI, "not_found", "groups", "get", "no-such-group")
}
