// Package apiv1 holds the wire types of the REST API v1
// (docs/design/api-contract.md; every field is in openapi/openapi.yaml).
// The server writes them and the Go client reads them, so both follow one
// definition. Nullable fields are pointers and are always sent (as null
// when unknown).
package apiv1

import (
	"encoding/json"
	"strings"
	"time"
)

// Error is the body of every error answer.
type Error struct {
	Error            string    `json:"error"`
	ErrorDescription *string   `json:"error_description"`
	Details          []Problem `json:"details,omitempty"`
}

// Problem is one field that failed validation (422 validation_failed).
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// TokenResponse answers POST /api/oauth/token.
type TokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
}

// Page is a paginated list.
type Page[T any] struct {
	Items  []T `json:"items"`
	Total  int `json:"total"`
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// List is an unpaginated list.
type List[T any] struct {
	Items []T `json:"items"`
	Total int `json:"total"`
}

// OK is the plain success answer.
type OK struct {
	OK bool `json:"ok"`
}

// Endpoint is a managed computer.
type Endpoint struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Hostname      string            `json:"hostname"`
	Platform      string            `json:"platform"`
	Status        string            `json:"status"`
	OS            *string           `json:"os"`
	OSVersion     *string           `json:"osVersion"`
	OSBuild       *string           `json:"osBuild"`
	Type          string            `json:"type"`
	Domain        *string           `json:"domain"`
	ADOU          *string           `json:"adOu"`
	User          *string           `json:"user"`
	Manufacturer  *string           `json:"manufacturer"`
	Model         *string           `json:"model"`
	SerialNumber  *string           `json:"serialNumber"`
	CPU           *string           `json:"cpu"`
	Cores         *int              `json:"cores"`
	RAMGB         *float64          `json:"ramGB"`
	IPAddresses   []string          `json:"ipAddresses"`
	MACAddresses  []string          `json:"macAddresses"`
	Antivirus     *string           `json:"antivirus"`
	PendingReboot bool              `json:"pendingReboot"`
	AgentVersion  *string           `json:"agentVersion"`
	Attributes    map[string]string `json:"attributes"`
	LastBootAt    *time.Time        `json:"lastBootAt"`
	LastSeenAt    *time.Time        `json:"lastSeenAt"`
	EnrolledAt    *time.Time        `json:"enrolledAt"`
	Comment       *string           `json:"comment"`
	// InsecureChannel (a patchd addition): the agent talks to the server
	// over plain HTTP across the network, enrolled with --insecure-http.
	InsecureChannel bool `json:"insecureChannel"`
	// The endpoint's risk (patchd additions, docs/vulnerabilities.md):
	// RiskScore is the highest risk score (0-100, 5 × CVSS + 30 × EPSS +
	// 20 when in KEV) of the CVEs found on it, 0 without any; RiskCVE is
	// that CVE, RiskReason how its score is made ("CVE-2024-9680: CVSS 9.8
	// × 5 = 49 + …").
	RiskScore  float64 `json:"riskScore"`
	RiskCVE    *string `json:"riskCve"`
	RiskReason string  `json:"riskReason,omitempty"`
}

// EndpointDetail is an endpoint with its inventory.
type EndpointDetail struct {
	Endpoint
	Disks          []Disk          `json:"disks"`
	Software       []Software      `json:"software"`
	MissingUpdates []MissingUpdate `json:"missingUpdates"`
}

// Disk is a drive of an endpoint.
type Disk struct {
	Drive  string   `json:"drive"`
	SizeGB *float64 `json:"sizeGB"`
	FreeGB *float64 `json:"freeGB"`
}

// Software is an application installed on an endpoint.
type Software struct {
	Name        string  `json:"name"`
	Version     *string `json:"version"`
	Publisher   *string `json:"publisher"`
	InstallDate *string `json:"installDate"`
}

// MissingUpdate is an update missing on an endpoint (in EndpointDetail).
type MissingUpdate struct {
	ID               string  `json:"id"`
	Title            string  `json:"title"`
	KB               *string `json:"kb"`
	Severity         *string `json:"severity"`
	Source           string  `json:"source"`
	WingetID         *string `json:"wingetId"`
	InstalledVersion *string `json:"installedVersion"`
	LatestVersion    *string `json:"latestVersion"`
	RebootRequired   bool    `json:"rebootRequired"`
}

// EndpointPatch changes an endpoint; every field is optional.
type EndpointPatch struct {
	Name       *string           `json:"name,omitempty"`
	Comment    *string           `json:"comment,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Update is one row per endpoint × missing update.
type Update struct {
	ID               string     `json:"id"`
	Key              string     `json:"key"`
	EndpointID       string     `json:"endpointId"`
	Endpoint         string     `json:"endpoint"`
	Title            string     `json:"title"`
	KB               *string    `json:"kb"`
	Severity         string     `json:"severity"`
	Source           string     `json:"source"`
	Categories       []string   `json:"categories"`
	WingetID         *string    `json:"wingetId"`
	InstalledVersion *string    `json:"installedVersion"`
	LatestVersion    *string    `json:"latestVersion"`
	RebootRequired   bool       `json:"rebootRequired"`
	ReleaseDate      *time.Time `json:"releaseDate"`
	DetectedAt       *time.Time `json:"detectedAt"`
	Approval         string     `json:"approval"`
	// CVEs is a patchd addition: the CVEs found on the endpoint that this
	// update fixes (a Windows update: every CVE of the endpoint's Windows
	// whose fixed build, in Microsoft's security update data, is at or
	// below the build this KB brings), in CVE order.
	CVEs []string `json:"cves"`
	// The update's severity and risk from what it fixes (patchd
	// additions, docs/vulnerabilities.md): severity is, for an
	// application or Linux package update that fixes CVEs found on the
	// fleet, the highest severity of those CVEs (a CVE in CISA's KEV
	// catalog counts as Critical), never below the vendor's;
	// vendorSeverity is what the vendor says (MSRC, a distribution's
	// advisory, Unspecified); severityReason says why ("fixes 3 CVEs ·
	// KEV · CVSS 9.8 · EPSS 0.94", "" when it fixes none known). cveCount,
	// kev, maxCvss and maxEpss are counted over every endpoint missing the
	// update; riskScore (0-100) is the highest risk of those CVEs, riskCve
	// that CVE and riskReason how its score is made.
	UpdateRisk
}

// UpdateRisk is what an update key fixes across the fleet and the severity
// and risk it gives (the patchd additions of Update).
type UpdateRisk struct {
	VendorSeverity string   `json:"vendorSeverity"`
	SeverityReason string   `json:"severityReason"`
	CVECount       int      `json:"cveCount"`
	KEV            bool     `json:"kev"`
	MaxCVSS        *float64 `json:"maxCvss"`
	MaxEPSS        *float64 `json:"maxEpss"`
	RiskScore      float64  `json:"riskScore"`
	RiskCVE        *string  `json:"riskCve"`
	RiskReason     string   `json:"riskReason"`
}

// SoftwareRow is one row per endpoint × application.
type SoftwareRow struct {
	EndpointID   string  `json:"endpointId"`
	Endpoint     string  `json:"endpoint"`
	Name         string  `json:"name"`
	Version      *string `json:"version"`
	Publisher    *string `json:"publisher"`
	InstallDate  *string `json:"installDate"`
	InstalledFor *string `json:"installedFor"`
	InstallType  *string `json:"installType"`
}

// SoftwareTitle is an application by name across the organization's fleet,
// with the number of endpoints that have it and of those that have each of
// its versions (GET /api/v1/software/titles, a patchd addition).
type SoftwareTitle struct {
	Name      string  `json:"name"`
	Publisher *string `json:"publisher"`
	// Hosts counts endpoints: one with two versions of the title counts
	// once, and twice in Installs.
	Hosts    int `json:"hosts"`
	Installs int `json:"installs"`
	// Versions are the most common versions, at most MaxTitleVersions of
	// the VersionCount present.
	Versions     []SoftwareTitleVersion `json:"versions"`
	VersionCount int                    `json:"versionCount"`
}

// MaxTitleVersions bounds SoftwareTitle.Versions.
const MaxTitleVersions = 20

// SoftwareTitleVersion is a version of a SoftwareTitle and the number of
// endpoints that have it; Version is null when none was reported.
type SoftwareTitleVersion struct {
	Version *string `json:"version"`
	Hosts   int     `json:"hosts"`
}

// Vulnerability is a CVE present on the fleet.
type Vulnerability struct {
	CVEID               string        `json:"cveId"`
	CVSSScore           *float64      `json:"cvssScore"`
	Severity            *string       `json:"severity"`
	CISAKEV             bool          `json:"cisaKev"`
	Ransomware          bool          `json:"ransomware"`
	PublishedAt         *time.Time    `json:"publishedAt"`
	RemediationStatus   *string       `json:"remediationStatus"`
	RemediationDeadline *time.Time    `json:"remediationDeadline"`
	NVDURL              *string       `json:"nvdUrl"`
	Description         *string       `json:"description"`
	Software            []string      `json:"software"`
	Endpoints           []EndpointRef `json:"endpoints"`
	// RiskAccepted is a patchd addition (the specification allows added
	// fields): the organization's active decision on the CVE, or null.
	// CVEs with one are listed only when accepted=1 is asked.
	RiskAccepted *RiskAcceptance `json:"riskAccepted"`
	// RemediatedBy is a patchd addition: the updates that fix the CVE on
	// the organization's affected endpoints, most endpoints first.
	RemediatedBy []Remediation `json:"remediatedBy"`
	// EPSS and EPSSPercentile are patchd additions: FIRST's probability
	// (0-1) that the CVE is exploited in the next 30 days and its
	// percentile, null without an EPSS score. RiskScore (0-100) is 5 ×
	// CVSS + 30 × EPSS + 20 when in KEV; RiskReason says how it is made
	// (docs/vulnerabilities.md).
	EPSS           *float64 `json:"epss"`
	EPSSPercentile *float64 `json:"epssPercentile"`
	RiskScore      float64  `json:"riskScore"`
	RiskReason     string   `json:"riskReason"`
}

// Remediation is one update that fixes a CVE on some of an organization's
// endpoints: a Microsoft KB (kind "kb", key "KB5071417", fixedIn the
// Windows build that carries it), a Linux package version (kind "package",
// key the source package, fixedIn the distribution's fixed version) or an
// application version (kind "application", key the product).
type Remediation struct {
	Kind      string  `json:"kind"`
	Key       string  `json:"key"`
	Software  string  `json:"software"`
	FixedIn   *string `json:"fixedIn"`
	Endpoints int     `json:"endpoints"`
}

// RiskAcceptance is an organization's decision to live with a CVE: an
// accepted risk or a compensating control, with its reason and expiry.
type RiskAcceptance struct {
	Kind       string     `json:"kind"` // "accepted" or "compensating_control"
	Reason     string     `json:"reason"`
	ExpiresAt  *time.Time `json:"expiresAt"` // null: until revoked
	AcceptedBy string     `json:"acceptedBy"`
	AcceptedAt time.Time  `json:"acceptedAt"`
}

// EndpointRef names an endpoint.
type EndpointRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Group is an endpoint group. The fields after Members are patchd
// additions (the specification allows added fields): the group's criteria
// and uptime alert settings, as GroupBody sets them.
type Group struct {
	ID                  string      `json:"id"`
	Name                string      `json:"name"`
	System              bool        `json:"system"`
	Kind                string      `json:"kind"`
	Members             int         `json:"members"`
	Description         *string     `json:"description"`
	MatchAll            bool        `json:"matchAll"`
	Rules               []GroupRule `json:"rules"`
	ExcludeRules        []GroupRule `json:"excludeRules"`
	OfflineAlertMinutes *int        `json:"offlineAlertMinutes"`
	OnlineAlert         bool        `json:"onlineAlert"`
}

// GroupRule is a dynamic membership criterion.
type GroupRule struct {
	Field string `json:"field"`
	Op    string `json:"op"`
	Value string `json:"value"`
}

// GroupBody creates a group, or (every field optional) changes one.
type GroupBody struct {
	Name                *string      `json:"name,omitempty"`
	Description         *string      `json:"description,omitempty"`
	MatchAll            *bool        `json:"matchAll,omitempty"`
	Rules               *[]GroupRule `json:"rules,omitempty"`
	ExcludeRules        *[]GroupRule `json:"excludeRules,omitempty"`
	MachineIDs          *[]string    `json:"machineIds,omitempty"`
	OfflineAlertMinutes *int         `json:"offlineAlertMinutes,omitempty"`
	OnlineAlert         *bool        `json:"onlineAlert,omitempty"`
}

// Ref is the {id, name} of a created or changed object.
type Ref struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// GroupResult answers group writes.
type GroupResult struct {
	OK    bool `json:"ok"`
	Group Ref  `json:"group"`
}

// Automation is a stored automation.
type Automation struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Action        string          `json:"action"`
	ActionLabel   string          `json:"actionLabel"`
	Kind          string          `json:"kind"`
	ScheduleKind  *string         `json:"scheduleKind"`
	Freq          *string         `json:"freq"`
	AtTime        *string         `json:"atTime"`
	Weekday       *int            `json:"weekday"`
	MonthDay      *int            `json:"monthDay"`
	OffsetDays    int             `json:"offsetDays"`
	WindowMinutes *int            `json:"windowMinutes"`
	RunAt         *time.Time      `json:"runAt"`
	Enabled       bool            `json:"enabled"`
	TargetMode    string          `json:"targetMode"`
	GroupID       *string         `json:"groupId"`
	EndpointIDs   []string        `json:"endpointIds"`
	LastRunAt     *time.Time      `json:"lastRunAt"`
	NextRunAt     *time.Time      `json:"nextRunAt"`
	CreatedBy     *string         `json:"createdBy"`
	Description   *string         `json:"description,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	StartDate     *string         `json:"startDate,omitempty"`
	Rings         []Ring          `json:"rings,omitempty"`
}

// Ring is a stage of a RING automation.
type Ring struct {
	Name       string `json:"name"`
	GroupID    string `json:"groupId"`
	OffsetDays int    `json:"offsetDays"`
}

// AutomationBody creates an automation or replaces one.
type AutomationBody struct {
	Name          string          `json:"name"`
	ActionType    string          `json:"actionType"`
	Description   *string         `json:"description,omitempty"`
	Kind          *string         `json:"kind,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	TargetMode    *string         `json:"targetMode,omitempty"`
	GroupID       *string         `json:"groupId,omitempty"`
	EndpointIDs   []string        `json:"endpointIds,omitempty"`
	ScheduleKind  *string         `json:"scheduleKind,omitempty"`
	RunAt         *string         `json:"runAt,omitempty"`
	Freq          *string         `json:"freq,omitempty"`
	AtTime        *string         `json:"atTime,omitempty"`
	Weekday       *int            `json:"weekday,omitempty"`
	MonthDay      *int            `json:"monthDay,omitempty"`
	OffsetDays    *int            `json:"offsetDays,omitempty"`
	WindowMinutes *int            `json:"windowMinutes,omitempty"`
	Enabled       *bool           `json:"enabled,omitempty"`
	StartDate     *string         `json:"startDate,omitempty"`
	Rings         []Ring          `json:"rings,omitempty"`
}

// AutomationPatch is a light change of an automation.
type AutomationPatch struct {
	Enabled     *bool   `json:"enabled,omitempty"`
	Name        *string `json:"name,omitempty"`
	Description *string `json:"description,omitempty"`
}

// AutomationCreated answers POST /api/v1/automations.
type AutomationCreated struct {
	OK         bool `json:"ok"`
	Automation struct {
		ID     string  `json:"id"`
		Name   string  `json:"name"`
		RunID  *string `json:"runId"`
		Queued int     `json:"queued"`
	} `json:"automation"`
}

// AutomationResult answers PATCH /api/v1/automations/{id}.
type AutomationResult struct {
	OK         bool `json:"ok"`
	Automation Ref  `json:"automation"`
}

// ActionBody queues a one-off action.
type ActionBody struct {
	EndpointIDs []string        `json:"endpointIds"`
	Type        string          `json:"type"`
	Label       string          `json:"label,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// RunStarted answers actions and automation runs.
type RunStarted struct {
	OK     bool   `json:"ok"`
	RunID  string `json:"runId"`
	Queued int    `json:"queued"`
}

// ApprovalKey is one key of an ApprovalBody.
type ApprovalKey struct {
	Key   string `json:"key"`
	Title string `json:"title,omitempty"`
}

// ApprovalBody approves, declines or resets updates.
type ApprovalBody struct {
	Keys   []ApprovalKey `json:"keys"`
	Status string        `json:"status"`
}

// ApprovalResult answers POST /api/v1/updates/approvals.
type ApprovalResult struct {
	OK      bool   `json:"ok"`
	Count   int    `json:"count"`
	Status  string `json:"status"`
	Changed int    `json:"changed"`
}

// Run is one execution of an automation or action.
type Run struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	ActionType     string     `json:"actionType"`
	Status         string     `json:"status"`
	StartedAt      *time.Time `json:"startedAt"`
	FinishedAt     *time.Time `json:"finishedAt"`
	Total          int        `json:"total"`
	Succeeded      int        `json:"succeeded"`
	Failed         int        `json:"failed"`
	CreatedBy      *string    `json:"createdBy"`
	AutomationID   *string    `json:"automationId"`
	AutomationName *string    `json:"automationName"`
	Detail         *string    `json:"detail"`
}

// RunCommand is the per-endpoint result of a run.
type RunCommand struct {
	ID         string     `json:"id"`
	MachineID  string     `json:"machineId"`
	Endpoint   string     `json:"endpoint"`
	Status     string     `json:"status"`
	StartedAt  *time.Time `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	CreatedAt  *time.Time `json:"createdAt"`
	Result     *string    `json:"result"`
}

// AlertRule is a stored alert rule.
type AlertRule struct {
	ID               string  `json:"id"`
	Name             string  `json:"name"`
	Trigger          string  `json:"trigger"`
	Threshold        int     `json:"threshold"`
	Enabled          bool    `json:"enabled"`
	EmailTo          *string `json:"emailTo"`
	WebhookURL       *string `json:"webhookUrl"`
	ReportKey        *string `json:"reportKey"`
	HasWebhookSecret bool    `json:"hasWebhookSecret"`
	// WebhookRetryMinutes (a patchd addition): how long failed webhook
	// deliveries are tried again; 0 is the specification's single try.
	WebhookRetryMinutes int        `json:"webhookRetryMinutes"`
	Events              int        `json:"events"`
	CreatedAt           *time.Time `json:"createdAt"`
}

// AlertRuleBody creates an alert rule.
type AlertRuleBody struct {
	Name          string  `json:"name"`
	Trigger       string  `json:"trigger"`
	Threshold     *int    `json:"threshold,omitempty"`
	EmailTo       *string `json:"emailTo,omitempty"`
	WebhookURL    *string `json:"webhookUrl,omitempty"`
	WebhookSecret *string `json:"webhookSecret,omitempty"`
	ReportKey     *string `json:"reportKey,omitempty"`
	// WebhookRetryMinutes (a patchd addition; default 0, no retry).
	WebhookRetryMinutes *int `json:"webhookRetryMinutes,omitempty"`
}

// FailedDelivery is an alert delivery that failed for good (a patchd
// addition): GET /api/v1/alerts/{id}/failed-deliveries.
type FailedDelivery struct {
	ID       string    `json:"id"`
	EventID  string    `json:"eventId"`
	Channel  string    `json:"channel"`
	Title    string    `json:"title"`
	RaisedAt time.Time `json:"raisedAt"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error"`
	FailedAt time.Time `json:"failedAt"`
}

// DeliveryQueued answers POST /api/v1/alerts/{id}/failed-deliveries/{delivery}/resend.
type DeliveryQueued struct {
	OK       bool   `json:"ok"`
	Delivery string `json:"delivery"`
}

// AlertRulePatch changes an alert rule (patchd addition): only the fields
// given change; an empty string removes emailTo, webhookUrl, webhookSecret
// or reportKey. The trigger of a rule does not change.
type AlertRulePatch struct {
	Name          *string `json:"name,omitempty"`
	Threshold     *int    `json:"threshold,omitempty"`
	EmailTo       *string `json:"emailTo,omitempty"`
	WebhookURL    *string `json:"webhookUrl,omitempty"`
	WebhookSecret *string `json:"webhookSecret,omitempty"`
	ReportKey     *string `json:"reportKey,omitempty"`
	// WebhookRetryMinutes (a patchd addition): 0 for the spec's single try.
	WebhookRetryMinutes *int `json:"webhookRetryMinutes,omitempty"`
}

// AlertEvent is an event an alert rule raised, with the outcome of its
// deliveries (null while pending or when the channel is not set).
type AlertEvent struct {
	ID             string    `json:"id"`
	RuleID         string    `json:"ruleId"`
	Event          string    `json:"event"`
	Severity       string    `json:"severity"`
	Title          string    `json:"title"`
	Detail         string    `json:"detail"`
	EndpointID     *string   `json:"endpointId"`
	RaisedAt       time.Time `json:"raisedAt"`
	EmailOutcome   *string   `json:"emailOutcome"`
	WebhookOutcome *string   `json:"webhookOutcome"`
}

// AlertRuleResult answers POST /api/v1/alerts.
type AlertRuleResult struct {
	OK   bool `json:"ok"`
	Rule Ref  `json:"rule"`
}

// ReportMeta describes a report of the catalog.
type ReportMeta struct {
	Key         string `json:"key"`
	Title       string `json:"title"`
	Category    string `json:"category"`
	Description string `json:"description"`
}

// Report is a built-in report's data.
type Report struct {
	Title       string     `json:"title"`
	Columns     []string   `json:"columns"`
	Rows        [][]any    `json:"rows"`
	Total       int        `json:"total"`
	CollectedAt *time.Time `json:"collectedAt"`
}

// ScriptParameter is a parameter a stored script declares (patchd addition).
type ScriptParameter struct {
	Name     string `json:"name"`
	Default  string `json:"default"`
	Required bool   `json:"required"`
}

// Script is a script of the organization's library, run by RUN_SCRIPT
// actions that name it with payload.scriptId (patchd addition).
type Script struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	Language        string            `json:"language"`
	Code            string            `json:"code"`
	Parameters      []ScriptParameter `json:"parameters"`
	RebootExitCodes []int             `json:"rebootExitCodes"`
	TimeoutSeconds  int               `json:"timeoutSeconds"`
	CreatedAt       time.Time         `json:"createdAt"`
	UpdatedAt       time.Time         `json:"updatedAt"`
}

// ScriptBody creates a script (name, language and code required) or, with
// any subset of its fields, changes one (patchd addition).
type ScriptBody struct {
	Name            *string            `json:"name,omitempty"`
	Language        *string            `json:"language,omitempty"`
	Code            *string            `json:"code,omitempty"`
	Parameters      *[]ScriptParameter `json:"parameters,omitempty"`
	RebootExitCodes *[]int             `json:"rebootExitCodes,omitempty"`
	TimeoutSeconds  *int               `json:"timeoutSeconds,omitempty"`
}

// EnrollToken is an enrollment token as listed: never the secret
// (patchd addition).
type EnrollToken struct {
	ID        string     `json:"id"`
	ExpiresAt *time.Time `json:"expiresAt"`
	Revoked   bool       `json:"revoked"`
	Uses      int        `json:"uses"`
	CreatedAt time.Time  `json:"createdAt"`
}

// EnrollTokenBody creates an enrollment token (patchd addition).
type EnrollTokenBody struct {
	// ExpiresInHours is how long the token is valid; 0 or left out: it
	// never expires.
	ExpiresInHours int `json:"expiresInHours,omitempty"`
}

// NewEnrollToken is a created enrollment token: the only answer that holds
// the token (patchd addition).
type NewEnrollToken struct {
	ID        string     `json:"id"`
	Token     string     `json:"token"`
	CASHA256  string     `json:"caSha256,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt"`
}

// Secret is the token without its CA pin (what installers that pin the CA
// themselves take).
func (t NewEnrollToken) Secret() string { return strings.TrimSuffix(t.Token, "."+t.CASHA256) }

// AuditEntry is one line of the organization's Audit Trail (patchd addition).
type AuditEntry struct {
	ID         string         `json:"id"`
	At         time.Time      `json:"at"`
	Actor      string         `json:"actor"`
	Action     string         `json:"action"`
	TargetType string         `json:"targetType"`
	TargetID   *string        `json:"targetId"`
	Summary    map[string]any `json:"summary"`
	// Address is the client address of the write ("" for the command line
	// and the server's own jobs).
	Address string `json:"address"`
}

// AgentVersions is the organization's agents: the versions its endpoints
// run, the releases the server publishes, the target its policy sets, who
// is behind and the recent update failures (patchd addition, GET
// /api/v1/agent-versions).
type AgentVersions struct {
	// Policy is latest, pinned, staged or none; PinnedVersion goes with
	// pinned, Rollout with staged.
	Policy        string  `json:"policy"`
	PinnedVersion *string `json:"pinnedVersion"`
	// Target is the agentTarget the check-ins answer ("latest", the pinned
	// or staged version; under staged only the rings rolling out or done
	// get it) or null (agents are left as they are).
	Target    *string             `json:"target"`
	Rollout   *AgentRollout       `json:"rollout,omitempty"`
	Releases  []AgentRelease      `json:"releases"`
	Versions  []AgentVersionCount `json:"versions"`
	Endpoints int                 `json:"endpoints"`
	// Behind counts the endpoints whose agent is behind the version they
	// should run (Behind of their row).
	Behind   int                  `json:"behind"`
	Failures []AgentUpdateFailure `json:"failures"`
}

// AgentRelease is the signed agent release published for one platform.
type AgentRelease struct {
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
}

// AgentVersionCount is how many endpoints of a platform and architecture
// run an agent version, the version they should run (the pinned one, else
// the release published for them; null when there is none) and whether
// they are behind it: not at a pinned or staged version, older than the
// release (an agent newer than the release is not behind).
type AgentVersionCount struct {
	Platform      string  `json:"platform"`
	Arch          string  `json:"arch"`
	AgentVersion  string  `json:"agentVersion"`
	Endpoints     int     `json:"endpoints"`
	WantedVersion *string `json:"wantedVersion"`
	Behind        bool    `json:"behind"`
}

// AgentUpdateFailure is the last self-update an endpoint's agent reported
// as failed or rolled back.
type AgentUpdateFailure struct {
	EndpointID   string    `json:"endpointId"`
	Hostname     string    `json:"hostname"`
	Platform     string    `json:"platform"`
	AgentVersion string    `json:"agentVersion"`
	Version      string    `json:"version"`
	Reason       string    `json:"reason"`
	At           time.Time `json:"at"`
}

// AgentPolicyBody sets the organization's agent update policy (patchd
// addition, PUT /api/v1/agent-policy): latest, pinned (with version),
// staged (with version, rings, delayHours and successRate) or none.
type AgentPolicyBody struct {
	Policy  string  `json:"policy"`
	Version *string `json:"version,omitempty"`
	// Rings are endpoint group ids in order; the endpoints in none of them
	// form the last ring.
	Rings       []string `json:"rings,omitempty"`
	DelayHours  *int     `json:"delayHours,omitempty"`
	SuccessRate *int     `json:"successRate,omitempty"`
}

// AgentRollout is a staged agent update: the version, the gate and each
// ring's state (patchd addition, in AgentVersions).
type AgentRollout struct {
	Version     string      `json:"version"`
	DelayHours  int         `json:"delayHours"`
	SuccessRate int         `json:"successRate"`
	Rings       []AgentRing `json:"rings"`
}

// AgentRing is one ring of a staged agent update. GroupID and GroupName
// are null for the last ring, the endpoints in none of the groups. State
// is waiting, rolling_out, done or halted; Updated counts the ring's
// endpoints that run the version, Failed those that reported an update
// failure of it.
type AgentRing struct {
	Position  int        `json:"position"`
	GroupID   *string    `json:"groupId"`
	GroupName *string    `json:"groupName"`
	State     string     `json:"state"`
	StartedAt *time.Time `json:"startedAt"`
	DoneAt    *time.Time `json:"doneAt"`
	HaltedAt  *time.Time `json:"haltedAt"`
	Endpoints int        `json:"endpoints"`
	Updated   int        `json:"updated"`
	Failed    int        `json:"failed"`
}

// ComplianceDay is an organization's fleet on one UTC day, as last recorded
// that day (patchd addition, GET /api/v1/compliance/history): of its
// endpoints, those missing no update, those missing a critical one and
// those missing only others; the CVEs on the fleet of critical severity
// and those overdue for remediation (accepted risks and compensating
// controls left out).
type ComplianceDay struct {
	Date            string    `json:"date"`
	Endpoints       int       `json:"endpoints"`
	FullyPatched    int       `json:"fullyPatched"`
	MissingCritical int       `json:"missingCritical"`
	MissingOther    int       `json:"missingOther"`
	CriticalCVEs    int       `json:"criticalCves"`
	OverdueCVEs     int       `json:"overdueCves"`
	RecordedAt      time.Time `json:"recordedAt"`
	// Compliant (patchd addition) is how many endpoints had no update
	// missing past the compliance policy's deadline; null on days recorded
	// before patchd knew compliance policies.
	Compliant *int `json:"compliant"`
}

// CompliancePolicy is how many days an update of each severity may stay
// missing on an endpoint before the endpoint is out of compliance (patchd
// addition, GET and PUT /api/v1/compliance-policy). Description says it in
// a sentence (answers only).
type CompliancePolicy struct {
	CriticalDays    int `json:"criticalDays"`
	ImportantDays   int `json:"importantDays"`
	ModerateDays    int `json:"moderateDays"`
	LowDays         int `json:"lowDays"`
	UnspecifiedDays int `json:"unspecifiedDays"`
	// KEVDays is the deadline of an update that fixes a CVE in CISA's KEV
	// catalog, whatever its severity (patchd addition; 14 when not given).
	KEVDays     int    `json:"kevDays,omitempty"`
	Description string `json:"description,omitempty"`
}

// ApprovalPolicy is the organization's automatic approval policy (patchd
// addition, GET and PUT /api/v1/approval-policy): updates matching a rule
// are approved delayDays after they are first seen; declineOlder declines
// the older versions an approved update supersedes.
type ApprovalPolicy struct {
	DeclineOlder bool                 `json:"declineOlder"`
	Rules        []ApprovalPolicyRule `json:"rules"`
}

// ApprovalPolicyRule is one rule of the approval policy: severity (one of
// the spec's, or ANY) and source (OS, THIRD_PARTY or ANY).
type ApprovalPolicyRule struct {
	Severity  string `json:"severity"`
	Source    string `json:"source"`
	DelayDays int    `json:"delayDays"`
}

// ApprovalPolicyBody replaces the organization's approval policy: every
// rule and the declineOlder setting, both required.
type ApprovalPolicyBody struct {
	DeclineOlder *bool                 `json:"declineOlder"`
	Rules        *[]ApprovalPolicyRule `json:"rules"`
}

// VulnException is a decision about a CVE (patchd addition, GET
// /api/v1/vulnerability-exceptions): its risk accepted (kind accepted) or
// a compensating control in place (compensating_control), with the reason,
// who decided and until when; active is false once it expired.
// endpoints counts the organization's endpoints that have the CVE now.
type VulnException struct {
	ID        string     `json:"id"`
	CVEID     string     `json:"cveId"`
	Kind      string     `json:"kind"`
	Reason    string     `json:"reason"`
	ExpiresAt *time.Time `json:"expiresAt"`
	CreatedBy string     `json:"createdBy"`
	CreatedAt time.Time  `json:"createdAt"`
	Active    bool       `json:"active"`
	Endpoints int        `json:"endpoints"`
}

// VulnExceptionBody records a decision about a CVE (POST
// /api/v1/vulnerabilities/{cve}/exception): kind and reason, and at most
// one of expiresAt and validDays (neither: no expiry).
type VulnExceptionBody struct {
	Kind      string     `json:"kind"`
	Reason    string     `json:"reason"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	ValidDays *int       `json:"validDays,omitempty"`
}

// RemediationPolicy is the organization's remediation periods in days by
// CVSS severity (patchd addition, GET and PUT
// /api/v1/remediation-policy): a CVE is overdue that many days after it
// was first seen on the fleet.
type RemediationPolicy struct {
	CriticalDays int `json:"criticalDays"`
	HighDays     int `json:"highDays"`
	MediumDays   int `json:"mediumDays"`
	LowDays      int `json:"lowDays"`
}

// SSO is the organization's single sign-on provider (patchd addition, GET
// and PUT /api/v1/sso); the client secret is never answered, only whether
// one is stored.
type SSO struct {
	ProviderName    string           `json:"providerName"`
	Issuer          string           `json:"issuer"`
	ClientID        string           `json:"clientId"`
	HasClientSecret bool             `json:"hasClientSecret"`
	AllowedDomains  []string         `json:"allowedDomains"`
	Scopes          []string         `json:"scopes"`
	RoleClaim       string           `json:"roleClaim"`
	RoleMap         []SSORoleMapping `json:"roleMap"`
	DefaultRole     string           `json:"defaultRole"`
	JustInTime      bool             `json:"justInTime"`
	// ProviderVerifiesEmail: the provider verifies every address it
	// gives, so an ID token without email_verified counts as verified.
	ProviderVerifiesEmail bool      `json:"providerVerifiesEmail"`
	Enabled               bool      `json:"enabled"`
	UpdatedBy             string    `json:"updatedBy"`
	UpdatedAt             time.Time `json:"updatedAt"`
}

// SSORoleMapping gives the users whose role claim holds Value the role
// named Role.
type SSORoleMapping struct {
	Value string `json:"value"`
	Role  string `json:"role"`
}

// SSOBody sets the organization's single sign-on provider (PUT
// /api/v1/sso): every field but clientSecret, which, when absent, keeps
// the stored one (a new provider needs it).
type SSOBody struct {
	ProviderName   string           `json:"providerName"`
	Issuer         string           `json:"issuer"`
	ClientID       string           `json:"clientId"`
	ClientSecret   *string          `json:"clientSecret,omitempty"`
	AllowedDomains []string         `json:"allowedDomains"`
	Scopes         []string         `json:"scopes"`
	RoleClaim      string           `json:"roleClaim"`
	RoleMap        []SSORoleMapping `json:"roleMap"`
	DefaultRole    string           `json:"defaultRole"`
	JustInTime     bool             `json:"justInTime"`
	// ProviderVerifiesEmail: see SSO.
	ProviderVerifiesEmail bool `json:"providerVerifiesEmail"`
	Enabled               bool `json:"enabled"`
}

// GroupCompliance is one group's line of the compliance report by group
// (patchd addition, GET /api/v1/compliance/groups): its members, those
// compliant under the organization's compliance policy, and those missing
// a critical update.
type GroupCompliance struct {
	GroupID         string `json:"groupId"`
	Name            string `json:"name"`
	Endpoints       int    `json:"endpoints"`
	Compliant       int    `json:"compliant"`
	MissingCritical int    `json:"missingCritical"`
}

// ComplianceByGroup is the compliance report by group with the policy it
// applies (patchd addition, GET /api/v1/compliance/groups).
type ComplianceByGroup struct {
	Policy CompliancePolicy  `json:"policy"`
	Items  []GroupCompliance `json:"items"`
	Total  int               `json:"total"`
}
