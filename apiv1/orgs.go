package apiv1

import "time"

// OrganizationBody creates an organization (a patchd addition, POST
// /api/v1/organizations): for a person holding the instance-level
// create-organizations permission, who becomes its Administrator.
type OrganizationBody struct {
	Name string `json:"name"`
	// TimeZone is the IANA time zone of its schedules (UTC when empty).
	TimeZone string `json:"timezone,omitempty"`
	// Template names an organization (id or name) the person administers,
	// whose approval and remediation policies, groups, automations and
	// alert rules are copied.
	Template string `json:"template,omitempty"`
}

// Organization is a created organization.
type Organization struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	TimeZone      string    `json:"timezone"`
	CreatedAt     time.Time `json:"createdAt"`
	Administrator string    `json:"administrator"`
	// Copied says what the template gave it (null without a template).
	Copied *OrganizationCopy `json:"copied"`
}

// OrganizationCopy counts what a template gave a new organization.
type OrganizationCopy struct {
	TemplateID        string `json:"templateId"`
	Template          string `json:"template"`
	ApprovalPolicies  int    `json:"approvalPolicies"`
	ApprovalSettings  bool   `json:"approvalSettings"`
	RemediationPolicy bool   `json:"remediationPolicy"`
	CompliancePolicy  bool   `json:"compliancePolicy"`
	Groups            int    `json:"groups"`
	Scripts           int    `json:"scripts"`
	Automations       int    `json:"automations"`
	AlertRules        int    `json:"alertRules"`
	// SkippedAutomations target endpoints by id: endpoints belong to the
	// template organization, so these are not copied.
	SkippedAutomations []string `json:"skippedAutomations"`
	// DisabledAlertRules had a webhook secret, which is not copied: they
	// are copied disabled until the new organization sets its own.
	DisabledAlertRules []string `json:"disabledAlertRules"`
}
