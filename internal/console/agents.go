package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/perm"
)

// agentPolicyLabels are the policy form's labels of the API's fields.
var agentPolicyLabels = fieldLabels{"policy": "Policy", "version": "Pinned version", "rings": "Rings", "rings[]": "Ring %d",
	"delayHours": "Delay", "successRate": "Success rate"}

// stagedPolicyLabels name the version as the staged form shows it.
var stagedPolicyLabels = fieldLabels{"policy": "Policy", "version": "Version to roll out", "rings": "Rings", "rings[]": "Ring %d",
	"delayHours": "Delay", "successRate": "Success rate"}

// agentRingSlots is how many ring choices the form offers (more when the
// policy has more rings).
const agentRingSlots = 4

type agentsData struct {
	V       apiv1.AgentVersions
	F       url.Values
	Refused string
	// Groups are the organization's groups to choose rings from; Rings is
	// the chosen group id of each ring choice ("" for none).
	Groups []apiv1.Group
	Rings  []string
}

// agentsPage is the Agent versions page: GET /api/v1/agent-versions, and
// the policy form (PUT /api/v1/agent-policy).
func (c *Console) agentsPage(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.agentsShow(w, r, s, http.StatusOK, nil, "")
}

func (c *Console) agentsShow(w http.ResponseWriter, r *http.Request, s *session, status int, f url.Values, refused string) error {
	var v apiv1.AgentVersions
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/agent-versions", nil, &v); err != nil {
		return err
	}
	d := agentsData{V: v, Refused: refused}
	if s.can(perm.EndpointsManage) {
		var groups apiv1.List[apiv1.Group]
		if err := c.callAPI(r, s, http.MethodGet, "/api/v1/groups", nil, &groups); err != nil {
			return err
		}
		d.Groups = groups.Items
	}
	if f == nil {
		f = url.Values{"policy": {v.Policy}, "delay": {"7"}, "delayunit": {"days"}, "successrate": {"95"}}
		if v.PinnedVersion != nil {
			f.Set("version", *v.PinnedVersion)
		}
		if ro := v.Rollout; ro != nil {
			f.Set("version", ro.Version)
			f.Set("successrate", strconv.Itoa(ro.SuccessRate))
			if ro.DelayHours%24 == 0 {
				f.Set("delay", strconv.Itoa(ro.DelayHours/24))
			} else {
				f.Set("delay", strconv.Itoa(ro.DelayHours))
				f.Set("delayunit", "hours")
			}
			for _, g := range ro.Rings {
				if g.GroupID != nil {
					f.Add("ring", *g.GroupID)
				}
			}
		}
	}
	d.F = f
	d.Rings = append(d.Rings, f["ring"]...)
	for len(d.Rings) < agentRingSlots || len(d.Rings) <= len(f["ring"]) {
		d.Rings = append(d.Rings, "")
	}
	return c.render(w, r, s, status, "agents", "", "Agent versions", "agents", d)
}

// agentPolicySet sets the policy through the API; a refusal shows the form
// again as typed.
func (c *Console) agentPolicySet(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	body := apiv1.AgentPolicyBody{Policy: r.PostFormValue("policy")}
	labels := agentPolicyLabels
	switch body.Policy {
	case "pinned":
		v := strings.TrimSpace(r.PostFormValue("version"))
		body.Version = &v
	case "staged":
		labels = stagedPolicyLabels
		if err := stagedBody(r.PostForm, &body); err != nil {
			return c.agentsShow(w, r, s, http.StatusUnprocessableEntity, r.PostForm, err.Error())
		}
	}
	if err := c.callAPI(r, s, http.MethodPut, "/api/v1/agent-policy", body, nil); err != nil {
		text, ok := labels.refusal(err)
		if !ok {
			return err
		}
		return c.agentsShow(w, r, s, refusedStatus(err), r.PostForm, text)
	}
	return c.done(w, r, "/console/agents", nil, "Agent update policy saved.")
}

// formProblem is a staged form's number that is no number.
type formProblem string

func (p formProblem) Error() string { return string(p) }

// stagedBody reads the staged fields: the ring choices in order (empty
// ones left out), the delay in hours or days and the success rate.
func stagedBody(f url.Values, body *apiv1.AgentPolicyBody) error {
	v := strings.TrimSpace(f.Get("version"))
	body.Version = &v
	body.Rings = []string{}
	for _, id := range f["ring"] {
		if id = strings.TrimSpace(id); id != "" {
			body.Rings = append(body.Rings, id)
		}
	}
	var problems []string
	delay, err := strconv.Atoi(strings.TrimSpace(f.Get("delay")))
	if err != nil {
		problems = append(problems, "Delay: a whole number of hours or days")
	} else {
		if f.Get("delayunit") == "days" {
			delay *= 24
		}
		body.DelayHours = &delay
	}
	rate, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f.Get("successrate")), "%")))
	if err != nil {
		problems = append(problems, "Success rate: a whole percent from 0 to 100")
	} else {
		body.SuccessRate = &rate
	}
	if len(problems) > 0 {
		return formProblem(strings.Join(problems, "\n"))
	}
	return nil
}
