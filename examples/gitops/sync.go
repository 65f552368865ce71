package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
)

// The kinds of objects, each a subfolder of JSON files.
const (
	kindGroup      = "group"
	kindAutomation = "automation"
	kindAlert      = "alert"
)

var folders = map[string]string{kindGroup: "groups", kindAutomation: "automations", kindAlert: "alerts"}

// object is one file: the request body it holds, as JSON values.
type object struct {
	kind, name, path string
	body             map[string]any
}

// Desired is the folder's content by kind.
type Desired map[string][]object

// Load reads every *.json of dir/groups, dir/automations and dir/alerts
// (a missing subfolder is none): each must be the API's request body
// (GroupBody, AutomationBody, AlertRuleBody) with a name unique in its
// folder. An automation (and each ring) may name its group with groupName
// instead of groupId.
func Load(dir string) (Desired, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--dir %s: not a folder", dir)
	}
	d := Desired{}
	for kind, sub := range folders {
		paths, err := filepath.Glob(filepath.Join(dir, sub, "*.json"))
		if err != nil {
			return nil, err
		}
		sort.Strings(paths)
		seen := map[string]string{}
		for _, p := range paths {
			o, err := loadFile(kind, p)
			if err != nil {
				return nil, err
			}
			if other, ok := seen[o.name]; ok {
				return nil, fmt.Errorf("%s and %s both name the %s %q", other, p, kind, o.name)
			}
			seen[o.name] = p
			d[kind] = append(d[kind], o)
		}
	}
	return d, nil
}

func loadFile(kind, path string) (object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return object{}, err
	}
	o := object{kind: kind, path: path}
	if err := json.Unmarshal(data, &o.body); err != nil || o.body == nil {
		return o, fmt.Errorf("%s: not a JSON object: %v", path, err)
	}
	name, _ := o.body["name"].(string)
	if strings.TrimSpace(name) == "" {
		return o, fmt.Errorf("%s: needs a name", path)
	}
	o.name = name
	// The body must decode into the API's type, field names checked.
	probe := cloneMap(o.body)
	if kind == kindAutomation {
		resolveGroups(probe, func(string) (string, error) { return "checked", nil })
	}
	var target any
	switch kind {
	case kindGroup:
		target = &apiv1.GroupBody{}
	case kindAutomation:
		target = &apiv1.AutomationBody{}
	case kindAlert:
		target = &apiv1.AlertRuleBody{}
	}
	if err := strictDecode(probe, target); err != nil {
		return o, fmt.Errorf("%s: %v", path, err)
	}
	return o, nil
}

// strictDecode decodes a JSON value into v, refusing unknown fields.
func strictDecode(m map[string]any, v any) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func cloneMap(m map[string]any) map[string]any {
	data, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return out
}

// resolveGroups replaces groupName (at the top and in each ring) by the
// groupId that id answers.
func resolveGroups(body map[string]any, id func(name string) (string, error)) error {
	resolve := func(m map[string]any) error {
		name, ok := m["groupName"]
		if !ok {
			return nil
		}
		s, _ := name.(string)
		gid, err := id(s)
		if err != nil {
			return err
		}
		delete(m, "groupName")
		m["groupId"] = gid
		return nil
	}
	if err := resolve(body); err != nil {
		return err
	}
	rings, _ := body["rings"].([]any)
	for _, r := range rings {
		if m, ok := r.(map[string]any); ok {
			if err := resolve(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// step is one line of the plan.
type step struct {
	op    string // create, update, delete, keep
	kind  string
	name  string
	diffs []string
	apply func(ctx context.Context) error
}

// Syncer compares the folder with the server and applies the difference.
type Syncer struct {
	c      *client.Client
	out    io.Writer
	dryRun bool
	prune  bool

	counts map[string]int
	// groupIDs are the server's groups by name, and the ones this run
	// creates (an empty id in a dry run).
	groupIDs map[string]string
}

var marks = map[string]string{"create": "+", "update": "~", "delete": "-", "keep": "="}

// Sync plans and applies, kind by kind: groups first (automations name
// them), then automations and alert rules, then the deletions of --prune.
func (s *Syncer) Sync(ctx context.Context, d Desired) error {
	s.counts = map[string]int{}
	groups, err := s.c.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	s.groupIDs = map[string]string{}
	for _, g := range groups.Items {
		s.groupIDs[g.Name] = g.ID
	}
	var deletions []step
	groupSteps, groupDel, err := s.planGroups(ctx, d[kindGroup], groups.Items)
	if err != nil {
		return err
	}
	if err := s.do(ctx, groupSteps); err != nil {
		return err
	}
	autoSteps, autoDel, err := s.planAutomations(ctx, d[kindAutomation])
	if err != nil {
		return err
	}
	if err := s.do(ctx, autoSteps); err != nil {
		return err
	}
	alertSteps, alertDel, err := s.planAlerts(ctx, d[kindAlert])
	if err != nil {
		return err
	}
	if err := s.do(ctx, alertSteps); err != nil {
		return err
	}
	deletions = append(append(append(deletions, autoDel...), alertDel...), groupDel...)
	if err := s.do(ctx, deletions); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "\n%d to create, %d to update, %d to delete, %d unchanged.\n", s.counts["create"], s.counts["update"], s.counts["delete"], s.counts["keep"])
	if s.dryRun {
		fmt.Fprintln(s.out, "Dry run: nothing was changed.")
	}
	return nil
}

// do prints each step and, unless a dry run, applies it.
func (s *Syncer) do(ctx context.Context, steps []step) error {
	for _, st := range steps {
		s.counts[st.op]++
		fmt.Fprintf(s.out, "%s %s %q\n", marks[st.op], st.kind, st.name)
		for _, d := range st.diffs {
			fmt.Fprintf(s.out, "    %s\n", d)
		}
		if s.dryRun || st.apply == nil {
			continue
		}
		if err := st.apply(ctx); err != nil {
			return fmt.Errorf("%s %s %q: %w", st.op, st.kind, st.name, err)
		}
	}
	return nil
}

func (s *Syncer) planGroups(ctx context.Context, want []object, have []apiv1.Group) (steps, deletions []step, err error) {
	byName := map[string]apiv1.Group{}
	for _, g := range have {
		byName[g.Name] = g
	}
	for _, o := range want {
		var body apiv1.GroupBody
		if err := strictDecode(o.body, &body); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", o.path, err)
		}
		cur, ok := byName[o.name]
		if !ok {
			name := o.name
			steps = append(steps, step{op: "create", kind: kindGroup, name: o.name, apply: func(ctx context.Context) error {
				r, err := s.c.CreateGroup(ctx, body)
				s.groupIDs[name] = r.Group.ID
				return err
			}})
			s.groupIDs[o.name] = ""
			continue
		}
		if cur.System {
			return nil, nil, fmt.Errorf("%s: %q is a built-in group, which cannot be changed", o.path, o.name)
		}
		current, err := toMap(cur)
		if err != nil {
			return nil, nil, err
		}
		desired := cloneMap(o.body)
		var diffs []string
		if ids, ok := desired["machineIds"]; ok {
			delete(desired, "machineIds")
			members, err := s.members(ctx, cur.ID)
			if err != nil {
				return nil, nil, err
			}
			if d := diffIDs(ids, members); d != "" {
				diffs = append(diffs, d)
			}
		}
		diffs = append(diffs, diff(desired, current, nil)...)
		id := cur.ID
		steps = append(steps, s.updateStep(kindGroup, o.name, diffs, func(ctx context.Context) error {
			_, err := s.c.PatchGroup(ctx, id, body)
			return err
		}))
	}
	if s.prune {
		for _, g := range have {
			if g.System || hasName(want, g.Name) {
				continue
			}
			id := g.ID
			deletions = append(deletions, step{op: "delete", kind: kindGroup, name: g.Name, apply: func(ctx context.Context) error { return s.c.DeleteGroup(ctx, id) }})
		}
	}
	return steps, deletions, nil
}

// members answers the endpoint ids of a group.
func (s *Syncer) members(ctx context.Context, groupID string) ([]string, error) {
	var ids []string
	for ep, err := range s.c.Endpoints(ctx, client.EndpointQuery{GroupID: groupID}) {
		if err != nil {
			return nil, fmt.Errorf("list the group's endpoints: %w", err)
		}
		ids = append(ids, ep.ID)
	}
	return ids, nil
}

func diffIDs(want any, have []string) string {
	var w []string
	list, _ := want.([]any)
	for _, v := range list {
		s, _ := v.(string)
		w = append(w, s)
	}
	slices.Sort(w)
	h := slices.Clone(have)
	slices.Sort(h)
	if slices.Equal(w, h) {
		return ""
	}
	return fmt.Sprintf("machineIds: %s → %s", jsonText(h), jsonText(w))
}

func (s *Syncer) planAutomations(ctx context.Context, want []object) (steps, deletions []step, err error) {
	list, err := s.c.ListAutomations(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list automations: %w", err)
	}
	byName := map[string]apiv1.Automation{}
	for _, a := range list.Items {
		if _, dup := byName[a.Name]; dup && hasName(want, a.Name) {
			return nil, nil, fmt.Errorf("the server has two automations named %q: rename one", a.Name)
		}
		byName[a.Name] = a
	}
	for _, o := range want {
		desired := cloneMap(o.body)
		if err := resolveGroups(desired, s.groupID); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", o.path, err)
		}
		var body apiv1.AutomationBody
		if err := strictDecode(desired, &body); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", o.path, err)
		}
		cur, ok := byName[o.name]
		if !ok {
			steps = append(steps, step{op: "create", kind: kindAutomation, name: o.name, apply: func(ctx context.Context) error {
				if err := s.resolveLate(desired, &body); err != nil {
					return err
				}
				_, err := s.c.CreateAutomation(ctx, body)
				return err
			}})
			continue
		}
		full, err := s.c.GetAutomation(ctx, cur.ID)
		if err != nil {
			return nil, nil, fmt.Errorf("read automation %q: %w", o.name, err)
		}
		current, err := toMap(full)
		if err != nil {
			return nil, nil, err
		}
		// The spec's answer spells targetMode in capitals (GROUP), its
		// body in small letters (group).
		if tm, ok := current["targetMode"].(string); ok {
			if want, ok := desired["targetMode"].(string); ok && strings.EqualFold(tm, want) {
				current["targetMode"] = want
			}
		}
		diffs := diff(desired, current, map[string]string{"actionType": "action"})
		id := cur.ID
		steps = append(steps, s.updateStep(kindAutomation, o.name, diffs, func(ctx context.Context) error {
			if err := s.resolveLate(desired, &body); err != nil {
				return err
			}
			_, err := s.c.PatchAutomation(ctx, id, body)
			return err
		}))
	}
	if s.prune {
		for _, a := range list.Items {
			if !hasName(want, a.Name) {
				id := a.ID
				deletions = append(deletions, step{op: "delete", kind: kindAutomation, name: a.Name, apply: func(ctx context.Context) error { return s.c.DeleteAutomation(ctx, id) }})
			}
		}
	}
	return steps, deletions, nil
}

// groupID answers the id of a group by name: the server's, or "" for one
// this run creates (known once created, see resolveLate).
func (s *Syncer) groupID(name string) (string, error) {
	id, ok := s.groupIDs[name]
	if !ok {
		return "", fmt.Errorf("no group named %q on the server or in the folder", name)
	}
	if id == "" {
		return "(the new group " + name + ")", nil
	}
	return id, nil
}

// resolveLate replaces the placeholders of groups created in this run by
// their ids, before the automation is sent.
func (s *Syncer) resolveLate(desired map[string]any, body *apiv1.AutomationBody) error {
	fix := func(id *string) error {
		if id == nil || !strings.HasPrefix(*id, "(the new group ") {
			return nil
		}
		name := strings.TrimSuffix(strings.TrimPrefix(*id, "(the new group "), ")")
		if s.groupIDs[name] == "" {
			return fmt.Errorf("group %q was not created", name)
		}
		*id = s.groupIDs[name]
		return nil
	}
	if err := fix(body.GroupID); err != nil {
		return err
	}
	for i := range body.Rings {
		if err := fix(&body.Rings[i].GroupID); err != nil {
			return err
		}
	}
	return nil
}

func (s *Syncer) planAlerts(ctx context.Context, want []object) (steps, deletions []step, err error) {
	list, err := s.c.ListAlertRules(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list alert rules: %w", err)
	}
	byName := map[string]apiv1.AlertRule{}
	for _, r := range list.Items {
		if _, dup := byName[r.Name]; dup && hasName(want, r.Name) {
			return nil, nil, fmt.Errorf("the server has two alert rules named %q: rename one", r.Name)
		}
		byName[r.Name] = r
	}
	for _, o := range want {
		var body apiv1.AlertRuleBody
		if err := strictDecode(o.body, &body); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", o.path, err)
		}
		cur, ok := byName[o.name]
		if !ok {
			steps = append(steps, step{op: "create", kind: kindAlert, name: o.name, apply: func(ctx context.Context) error {
				_, err := s.c.CreateAlertRule(ctx, body)
				return err
			}})
			continue
		}
		if body.Trigger != cur.Trigger {
			return nil, nil, fmt.Errorf("%s: the rule %q has trigger %s on the server; the API does not change a rule's trigger: delete the rule (or rename the file's) first",
				o.path, o.name, cur.Trigger)
		}
		current, err := toMap(cur)
		if err != nil {
			return nil, nil, err
		}
		desired := cloneMap(o.body)
		delete(desired, "trigger")
		var diffs []string
		// The secret is never read back: only whether there is one.
		if secret, ok := desired["webhookSecret"].(string); ok {
			delete(desired, "webhookSecret")
			if (secret != "") != cur.HasWebhookSecret {
				diffs = append(diffs, fmt.Sprintf("webhookSecret: %s → %s", setOrNone(cur.HasWebhookSecret), setOrNone(secret != "")))
			}
		}
		diffs = append(diffs, diff(desired, current, nil)...)
		patch := apiv1.AlertRulePatch{Name: &body.Name, Threshold: body.Threshold, EmailTo: body.EmailTo, WebhookURL: body.WebhookURL,
			WebhookSecret: body.WebhookSecret, ReportKey: body.ReportKey, WebhookRetryMinutes: body.WebhookRetryMinutes}
		id := cur.ID
		steps = append(steps, s.updateStep(kindAlert, o.name, diffs, func(ctx context.Context) error {
			_, err := s.c.UpdateAlertRule(ctx, id, patch)
			return err
		}))
	}
	if s.prune {
		for _, r := range list.Items {
			if !hasName(want, r.Name) {
				id := r.ID
				deletions = append(deletions, step{op: "delete", kind: kindAlert, name: r.Name, apply: func(ctx context.Context) error { return s.c.DeleteAlertRule(ctx, id) }})
			}
		}
	}
	return steps, deletions, nil
}

func setOrNone(set bool) string {
	if set {
		return "(set)"
	}
	return "(none)"
}

// updateStep is an update when there are differences, else a keep.
func (s *Syncer) updateStep(kind, name string, diffs []string, apply func(context.Context) error) step {
	if len(diffs) == 0 {
		return step{op: "keep", kind: kind, name: name}
	}
	return step{op: "update", kind: kind, name: name, diffs: diffs, apply: apply}
}

func hasName(objs []object, name string) bool {
	return slices.ContainsFunc(objs, func(o object) bool { return o.name == name })
}

func toMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

// diff lists the fields of desired whose value the server's object does
// not hold ("field: server → file"), by field name (renamed maps a body's
// field to the answer's). Only what the file gives is compared, and within
// objects only their keys, so the server's defaults are no difference.
func diff(desired, current map[string]any, renamed map[string]string) []string {
	keys := make([]string, 0, len(desired))
	for k := range desired {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		ck := k
		if r, ok := renamed[k]; ok {
			ck = r
		}
		if !holds(desired[k], current[ck]) {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, jsonText(current[ck]), jsonText(desired[k])))
		}
	}
	return out
}

// holds tells whether the server's value have holds the file's want: equal
// scalars (times compared as instants), arrays of the same length whose
// items hold, objects whose keys in want hold.
func holds(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if !holds(v, h[k]) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(w) != len(h) {
			return false
		}
		for i := range w {
			if !holds(w[i], h[i]) {
				return false
			}
		}
		return true
	case string:
		h, ok := have.(string)
		if !ok {
			return false
		}
		if w == h {
			return true
		}
		tw, errW := time.Parse(time.RFC3339, w)
		th, errH := time.Parse(time.RFC3339, h)
		return errW == nil && errH == nil && tw.Equal(th)
	case nil:
		return have == nil
	default:
		return want == have
	}
}

func jsonText(v any) string {
	if v == nil {
		return "null"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
