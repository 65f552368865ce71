package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestAgentsPageStaged: the Agents page's policy form sets a staged
// policy (ring groups in order, the delay in days, the success rate)
// through the API, shows each ring's state, and shows a refusal in the
// form's words with the form as typed, changing nothing.
func TestAgentsPageStaged(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	ag := e.Enroll("staged-1", "pilot-pc", "linux")
	pilot := "Pilot"
	g, err := e.Admin.CreateGroup(ctx, apiv1.GroupBody{Name: &pilot, MachineIDs: &[]string{ag.ID}})
	if err != nil {
		t.Fatal(err)
	}
	a := newBrowser(t, e.URL)
	a.signIn("alice@example.com")
	if _, body := a.get("/console/agents"); !strings.Contains(body, `<option value="staged"`) || !strings.Contains(body, `<option value="`+g.Group.ID+`">Pilot</option>`) {
		t.Fatalf("no staged choice or ring groups in the form:\n%.4000s", body)
	}

	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"policy": {"staged"}, "version": {"2.0.0"}, "ring": {"", ""}, "delay": {"2"}, "delayunit": {"days"}, "successrate": {"90"}}, "Rings:"},
		{url.Values{"policy": {"staged"}, "version": {"2.0.0"}, "ring": {g.Group.ID}, "delay": {"soon"}, "delayunit": {"days"}, "successrate": {"90"}}, "Delay: a whole number"},
		{url.Values{"policy": {"staged"}, "version": {"2.0.0"}, "ring": {g.Group.ID}, "delay": {"2"}, "delayunit": {"days"}, "successrate": {"120"}}, "Success rate: must be 0 to 100"},
		{url.Values{"policy": {"staged"}, "version": {""}, "ring": {g.Group.ID}, "delay": {"2"}, "delayunit": {"days"}, "successrate": {"90"}}, "Version to roll out:"},
	} {
		code, _, page := a.post("/console/agents/policy", c.form)
		if code != http.StatusUnprocessableEntity || !strings.Contains(page, c.want) || !strings.Contains(page, `name="delay" inputmode="numeric" value="`+c.form.Get("delay")+`"`) {
			t.Errorf("%v: %d, want 422 with %q\n%.5000s", c.form, code, c.want, page)
		}
	}
	if p, _ := e.Store.AgentPolicyOf(ctx, e.Org.ID); p.Policy != "" {
		t.Fatalf("a refused form changed the policy: %+v", p)
	}

	code, loc, _ := a.post("/console/agents/policy", url.Values{"policy": {"staged"}, "version": {"2.0.0"}, "ring": {"", g.Group.ID, ""},
		"delay": {"2"}, "delayunit": {"days"}, "successrate": {"90 %"}})
	if code != http.StatusSeeOther || loc != "/console/agents" {
		t.Fatalf("set: %d %s", code, loc)
	}
	p, err := e.Store.AgentPolicyOf(ctx, e.Org.ID)
	if err != nil || p.Policy != store.AgentPolicyStaged || p.Version != "2.0.0" || len(p.Rings) != 1 || p.Rings[0] != g.Group.ID || p.Delay.Hours() != 48 || p.SuccessRate != 90 {
		t.Fatalf("policy: %+v %v", p, err)
	}
	_, body := a.get("/console/agents")
	for _, want := range []string{"goes out ring by ring", "has run it for 2 days and 90 %", `id="rings"`, ">Pilot</a>", "rolling out", "all other endpoints", "waiting for the ring before",
		`<option value="` + g.Group.ID + `" selected>Pilot</option>`, `name="delay" inputmode="numeric" value="2"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
