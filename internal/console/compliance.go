package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/updates"
)

// The Compliance page: the organization's compliance policy (how many days
// each severity may stay missing), each group's compliance under it, and
// for administrators the form that sets the policy through the API.

type complianceData struct {
	Policy      updates.CompliancePolicy
	Description string
	Groups      []groupComplianceRow
	// Fields are the policy's periods with their labels, for the form.
	Fields []complianceField
}

type groupComplianceRow struct {
	store.GroupCompliance
	Pct     int
	Overdue int
}

type complianceField struct {
	Name, Label string
	Days        int
}

func (c *Console) compliancePage(w http.ResponseWriter, r *http.Request, s *session) error {
	gs, p, err := c.store.ComplianceByGroup(r.Context(), s.User.OrgID, c.now())
	if err != nil {
		return err
	}
	d := complianceData{Policy: p, Description: p.Describe()}
	for _, g := range gs {
		d.Groups = append(d.Groups, groupComplianceRow{GroupCompliance: g, Pct: pct(g.Compliant, g.Endpoints), Overdue: g.Endpoints - g.Compliant})
	}
	for i, days := range p.Periods() {
		d.Fields = append(d.Fields, complianceField{Name: updates.ComplianceFields[i], Label: updates.ComplianceLabels[i], Days: days})
	}
	return c.render(w, r, s, http.StatusOK, "compliance", "", "Compliance", "compliance", d)
}

// compliancePolicySet sets the compliance policy through the API's operation.
func (c *Console) compliancePolicySet(w http.ResponseWriter, r *http.Request, s *session) error {
	const back = "/console/compliance#h-policy"
	var days [6]int
	for i, name := range updates.ComplianceFields {
		n, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue(name)))
		if err != nil {
			return c.done(w, r, back, badRequest("Each period is a whole number of days."), "")
		}
		days[i] = n
	}
	body := apiv1.CompliancePolicy{CriticalDays: days[0], ImportantDays: days[1], ModerateDays: days[2], LowDays: days[3], UnspecifiedDays: days[4],
		KEVDays: days[5]}
	err := c.callAPI(r, s, http.MethodPut, "/api/v1/compliance-policy", body, nil)
	return c.done(w, r, back, err, "Compliance policy saved: the dashboard, the endpoints list and this page follow it now.")
}
