package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/store"
)

type groupsData struct {
	Groups []store.Group
}

func (c *Console) groupList(w http.ResponseWriter, r *http.Request, s *session) error {
	list, err := c.store.ListGroups(r.Context(), s.User.OrgID, c.now())
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "groups", "", "Groups", "groups", groupsData{Groups: list})
}

// ruleRows is how many rule rows the editor offers.
const ruleRows = 6

type groupEdit struct {
	G       store.Group
	New     bool
	Rules   []groups.Rule // padded to ruleRows
	Exclude []groups.Rule
	Fields  []string
	Ops     []string
	Members []store.EndpointName
	Total   int
}

func pad(rules []groups.Rule) []groups.Rule {
	out := append([]groups.Rule(nil), rules...)
	for len(out) < ruleRows {
		out = append(out, groups.Rule{})
	}
	return out
}

var ruleFields = []string{"hostname", "name", "os", "osVersion", "platform", "domain", "adOu", "type", "arch", "antivirus", "reboot",
	"agentVersion", "user", "manufacturer", "model", "attr1", "attr2", "attr3", "attr4", "attr5"}

func (c *Console) groupNew(w http.ResponseWriter, r *http.Request, s *session) error {
	d := groupEdit{New: true, G: store.Group{Kind: groups.Dynamic, MatchAll: true}, Rules: pad(nil), Exclude: pad(nil), Fields: ruleFields, Ops: groups.Ops}
	return c.render(w, r, s, http.StatusOK, "group", "", "New group", "groups", d)
}

func (c *Console) groupDetail(w http.ResponseWriter, r *http.Request, s *session) error {
	g, err := c.store.GetGroup(r.Context(), s.User.OrgID, r.PathValue("id"), c.now())
	if err != nil {
		if isNotFound(err) {
			return notFound("group")
		}
		return err
	}
	ids, err := c.store.GroupMemberIDs(r.Context(), s.User.OrgID, g.ID)
	if err != nil {
		return err
	}
	names, err := c.store.EndpointNames(r.Context(), s.User.OrgID, ids[:min(len(ids), 200)])
	if err != nil {
		return err
	}
	d := groupEdit{G: g, Rules: pad(g.Rules), Exclude: pad(g.ExcludeRules), Fields: ruleFields, Ops: groups.Ops, Members: names, Total: len(ids)}
	return c.render(w, r, s, http.StatusOK, "group", "", g.Name, "groups", d)
}

// formRules reads the rule rows prefix0field, prefix0op, prefix0value, …;
// rows without a field are left out.
func formRules(f url.Values, prefix string) []apiv1.GroupRule {
	out := []apiv1.GroupRule{}
	for i := range ruleRows {
		n := prefix + strconv.Itoa(i)
		field := strings.TrimSpace(f.Get(n + "field"))
		if field == "" {
			continue
		}
		out = append(out, apiv1.GroupRule{Field: field, Op: f.Get(n + "op"), Value: f.Get(n + "value")})
	}
	return out
}

func groupBody(f url.Values) map[string]any {
	b := map[string]any{"name": f.Get("name"), "description": f.Get("description"), "matchAll": f.Get("matchAll") == "true"}
	if f.Get("kind") == groups.Static {
		ids := append([]string{}, strings.FieldsFunc(f.Get("machineIds"), func(r rune) bool { return r == '\n' || r == ',' || r == ' ' || r == '\r' })...)
		b["machineIds"] = ids
	} else {
		b["rules"], b["excludeRules"] = formRules(f, "r"), formRules(f, "x")
	}
	return b
}

// groupPreview answers the members dynamic rules would have now, without
// saving anything (the editor's live preview, an htmx fragment).
func (c *Console) groupPreview(w http.ResponseWriter, r *http.Request, s *session) error {
	f := r.URL.Query()
	crit := groups.Criteria{MatchAll: f.Get("matchAll") == "true"}
	var problems []string
	for _, pr := range []struct {
		prefix string
		into   *[]groups.Rule
	}{{"r", &crit.Rules}, {"x", &crit.Exclude}} {
		for _, in := range formRules(f, pr.prefix) {
			rule, probs := groups.CheckRule(in.Field, in.Op, in.Value)
			for _, p := range probs {
				problems = append(problems, in.Field+" "+p.Path+": "+p.Message)
			}
			*pr.into = append(*pr.into, rule)
		}
	}
	d := map[string]any{"Problems": problems}
	if len(problems) == 0 {
		n, sample, err := c.store.PreviewGroup(r.Context(), s.User.OrgID, crit, 25)
		if err != nil {
			return err
		}
		d["Total"], d["Sample"] = n, sample
	}
	return c.render(w, r, s, http.StatusOK, "group", "preview", "", "", d)
}

func (c *Console) groupCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	var out apiv1.GroupResult
	if err := c.callAPI(r, s, http.MethodPost, "/api/v1/groups", groupBody(r.PostForm), &out); err != nil {
		return c.done(w, r, "/console/groups/new", err, "")
	}
	return c.done(w, r, "/console/groups/"+out.Group.ID, nil, "Group "+out.Group.Name+" created.")
}

func (c *Console) groupSave(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	id := r.PathValue("id")
	err := c.callAPI(r, s, http.MethodPatch, "/api/v1/groups/"+id, groupBody(r.PostForm), nil)
	return c.done(w, r, "/console/groups/"+id, err, "Group saved.")
}

func (c *Console) groupDelete(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	return c.deleted(w, r, s, deletion{api: "/api/v1/groups/" + id, page: "/console/groups/" + id, list: "/console/groups", ok: "Group deleted."})
}

func (c *Console) groupNames(r *http.Request, s *session) (map[string]string, []store.Group, error) {
	list, err := c.store.ListGroups(r.Context(), s.User.OrgID, c.now())
	if err != nil {
		return nil, nil, err
	}
	m := map[string]string{}
	for _, g := range list {
		m[g.ID] = g.Name
	}
	return m, list, nil
}
