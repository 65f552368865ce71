package console

import (
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulns"
)

// The vulnerabilities page: the CVEs on the organization's fleet (the
// store's query behind GET /api/v1/vulnerabilities, with its filters), the
// affected software and endpoints of each, its remediation status and
// deadline, and the organization's accepted risks and compensating
// controls. Recording and revoking one is what patchd admin vuln accept
// and revoke do (admin.AcceptVulnRisk, admin.RevokeVulnRisk), audited as
// the user. The spec has no permission for these decisions, so, like users
// and credentials, they belong to administrators.

type vulnsData struct {
	Items    []apiv1.Vulnerability
	Page     pager
	MinCVSS  string
	KEV      bool
	Accepted bool
	// Remediation keeps one remediation status; Statuses are the choices.
	Remediation string
	Statuses    []string
	Exceptions  map[string]store.VulnException
	// Policy is the remediation periods.
	Policy apiv1.RemediationPolicy
	// ExceptionList is every exception, expired ones included.
	ExceptionList []store.VulnException
}

// expiryChoices are the validity periods the accept form offers.
var expiryChoices = map[string]time.Duration{"never": 0, "30d": 30 * 24 * time.Hour, "90d": 90 * 24 * time.Hour,
	"180d": 180 * 24 * time.Hour, "365d": 365 * 24 * time.Hour}

func (c *Console) vulnList(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := newPager(r, 50)
	if err != nil {
		return err
	}
	qv := r.URL.Query()
	d := vulnsData{Page: p, MinCVSS: strings.TrimSpace(qv.Get("minCvss")), KEV: qv.Get("kev") == "1", Accepted: qv.Get("accepted") == "1",
		Remediation: qv.Get("remediation"), Statuses: vulns.Statuses}
	if d.Remediation != "" && !slices.Contains(vulns.Statuses, d.Remediation) {
		return badRequest("Remediation must be one of " + strings.Join(vulns.Statuses, ", ") + ".")
	}
	q := store.VulnQuery{OrgID: s.User.OrgID, KEVOnly: d.KEV, IncludeAccepted: d.Accepted, Remediation: d.Remediation,
		Limit: p.Limit, Offset: p.Offset, Now: c.now()}
	if d.MinCVSS != "" {
		f, err := strconv.ParseFloat(d.MinCVSS, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 10 {
			return badRequest("Minimum CVSS must be a number from 0 to 10.")
		}
		q.MinCVSS = &f
	}
	if d.Items, d.Page.Total, err = c.store.ListVulnerabilities(r.Context(), q); err != nil {
		return err
	}
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/remediation-policy", nil, &d.Policy); err != nil {
		return err
	}
	if d.ExceptionList, err = c.store.ListVulnExceptions(r.Context(), s.User.OrgID, "", c.now()); err != nil {
		return err
	}
	d.Exceptions = map[string]store.VulnException{}
	for _, x := range d.ExceptionList {
		if x.Active {
			d.Exceptions[x.CVEID] = x
		}
	}
	return c.render(w, r, s, http.StatusOK, "vulns", "", "Vulnerabilities", "vulns", d)
}

// vulnBack is the vulnerabilities page with the filters the form came from.
func vulnBack(r *http.Request) string {
	if b := r.PostFormValue("back"); strings.HasPrefix(b, "?") {
		if v, err := url.ParseQuery(b[1:]); err == nil {
			return "/console/vulnerabilities?" + v.Encode()
		}
	}
	return "/console/vulnerabilities"
}

func (c *Console) vulnAccept(w http.ResponseWriter, r *http.Request, s *session) error {
	back := vulnBack(r)
	validFor, ok := expiryChoices[r.PostFormValue("expires")]
	if !ok {
		return c.done(w, r, back, badRequest("Choose how long the decision holds."), "")
	}
	kind := r.PostFormValue("kind")
	body := apiv1.VulnExceptionBody{Kind: kind, Reason: r.PostFormValue("reason")}
	if validFor > 0 {
		days := int(validFor / (24 * time.Hour))
		body.ValidDays = &days
	}
	var x apiv1.VulnException
	err := c.callAPI(r, s, http.MethodPost, "/api/v1/vulnerabilities/"+url.PathEscape(r.PathValue("cve"))+"/exception", body, &x)
	if err != nil {
		return c.done(w, r, back, err, "")
	}
	text := x.CVEID + ": risk accepted."
	if kind == store.ExceptionCompensatingControl {
		text = x.CVEID + ": compensating control recorded."
	}
	return c.done(w, r, back, nil, text+" It is left out of the list unless you show accepted ones.")
}

// vulnRevoke revokes the decision on a CVE through the API's operation.
func (c *Console) vulnRevoke(w http.ResponseWriter, r *http.Request, s *session) error {
	back := vulnBack(r)
	cve := strings.ToUpper(r.PathValue("cve"))
	return c.deleted(w, r, s, deletion{api: "/api/v1/vulnerabilities/" + url.PathEscape(cve) + "/exception", page: back, list: back,
		ok: cve + ": the exception was revoked; the CVE counts again."})
}

// vulnPolicySet sets the remediation periods through the API's operation.
func (c *Console) vulnPolicySet(w http.ResponseWriter, r *http.Request, s *session) error {
	const back = "/console/vulnerabilities#h-policy"
	var p apiv1.RemediationPolicy
	for _, f := range []struct {
		name string
		to   *int
	}{{"criticalDays", &p.CriticalDays}, {"highDays", &p.HighDays}, {"mediumDays", &p.MediumDays}, {"lowDays", &p.LowDays}} {
		n, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue(f.name)))
		if err != nil {
			return c.done(w, r, back, badRequest("Each period is a whole number of days."), "")
		}
		*f.to = n
	}
	err := c.callAPI(r, s, http.MethodPut, "/api/v1/remediation-policy", p, nil)
	return c.done(w, r, back, err, "Remediation periods saved: deadlines and statuses follow them now.")
}
