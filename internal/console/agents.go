package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/patchd/patchd/apiv1"
)

// agentPolicyLabels are the policy form's labels of the API's fields.
var agentPolicyLabels = fieldLabels{"policy": "Policy", "version": "Pinned version"}

type agentsData struct {
	V       apiv1.AgentVersions
	F       url.Values
	Refused string
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
	if f == nil {
		f = url.Values{"policy": {v.Policy}}
		if v.PinnedVersion != nil {
			f.Set("version", *v.PinnedVersion)
		}
	}
	return c.render(w, r, s, status, "agents", "", "Agent versions", "agents", agentsData{V: v, F: f, Refused: refused})
}

// agentPolicySet sets the policy through the API; a refusal shows the form
// again as typed.
func (c *Console) agentPolicySet(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	body := apiv1.AgentPolicyBody{Policy: r.PostFormValue("policy")}
	if v := strings.TrimSpace(r.PostFormValue("version")); v != "" || body.Policy == "pinned" {
		body.Version = &v
	}
	if body.Policy != "pinned" {
		body.Version = nil // the version field is for pinned only
	}
	if err := c.callAPI(r, s, http.MethodPut, "/api/v1/agent-policy", body, nil); err != nil {
		text, ok := agentPolicyLabels.refusal(err)
		if !ok {
			return err
		}
		return c.agentsShow(w, r, s, refusedStatus(err), r.PostForm, text)
	}
	return c.done(w, r, "/console/agents", nil, "Agent update policy saved.")
}
