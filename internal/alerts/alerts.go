// Package alerts owns the rules of patchd's alerting with no HTTP or SQL:
// the triggers and what their threshold means, recipient and webhook URL
// checks, the delivered message (JSON body and chat-ready text), its
// HMAC-SHA256 signature, and a dialer that refuses private targets after
// DNS resolution. The store raises events; internal/worker delivers them.
package alerts

import (
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/patchd/patchd/internal/valid"
)

// Triggers of AlertRuleBody.trigger.
const (
	NewEndpoint = "NEW_ENDPOINT"
	// EndpointReenrolled (a patchd addition) is raised when an agent enrolls
	// with the machine id of an enrolled endpoint and takes it over.
	EndpointReenrolled = "ENDPOINT_REENROLLED"
	// AgentUpdateFailed (a patchd addition) is raised when an agent reports
	// a self-update that failed or was rolled back.
	AgentUpdateFailed     = "AGENT_UPDATE_FAILED"
	EndpointOffline       = "ENDPOINT_OFFLINE"
	GroupUptime           = "GROUP_UPTIME"
	RebootRequired        = "REBOOT_REQUIRED"
	CriticalVuln          = "CRITICAL_VULN"
	MissingCriticalUpdate = "MISSING_CRITICAL_UPDATE"
	ReportRows            = "REPORT_ROWS"
)

// Trigger describes one trigger: its threshold's default, range and meaning.
type Trigger struct {
	Name string
	// Label is the trigger as people say it (the console shows it).
	Label            string
	DefaultThreshold int
	// Min and Max bound the threshold of a trigger that uses it; a trigger
	// that ignores it (Ignored) takes any value from 0 to MaxIgnored.
	Min, Max int
	Ignored  bool
	// Threshold says what the threshold means (docs/alerts.md repeats it).
	Threshold string
}

// MaxIgnored is the largest threshold stored for a trigger that ignores it:
// the column is a 32-bit integer on both engines.
const MaxIgnored = 1<<31 - 1

// Triggers lists every trigger, in the order of the documentation.
var Triggers = []Trigger{
	{Name: NewEndpoint, Label: "New endpoint", Ignored: true, Threshold: "ignored (any value from 0 is kept as given; default 0): every endpoint enrolled for the first time raises one event"},
	{Name: EndpointReenrolled, Label: "Endpoint enrolled again", Ignored: true, Threshold: "ignored (any value from 0 is kept as given; default 0): every enrollment with the machine id of an enrolled endpoint raises one event (a patchd addition)"},
	{Name: AgentUpdateFailed, Label: "Agent update failed", Ignored: true, Threshold: "ignored (any value from 0 is kept as given; default 0): every self-update an agent reports as failed or rolled back raises one event (a patchd addition)"},
	{Name: EndpointOffline, Label: "Endpoint offline", DefaultThreshold: 60, Min: 1, Max: 525600, Threshold: "minutes since the endpoint's last check-in, once it counts as disconnected (default 60)"},
	{Name: GroupUptime, Label: "Group goes offline or back online", Ignored: true, Threshold: "ignored (any value from 0 is kept as given; default 0): each group's offlineAlertMinutes and onlineAlert decide"},
	{Name: RebootRequired, Label: "Reboot pending too long", DefaultThreshold: 24, Min: 1, Max: 8760, Threshold: "hours the endpoint has been reporting a pending reboot (default 24)"},
	{Name: CriticalVuln, Label: "Critical vulnerability found", DefaultThreshold: 9, Min: 0, Max: 10, Threshold: "minimum CVSS base score, in whole points (default 9 = 9.0); a CVE in the CISA KEV catalog always qualifies"},
	{Name: MissingCriticalUpdate, Label: "Critical update missing too long", DefaultThreshold: 7, Min: 0, Max: 3650, Threshold: "days since a Critical update was first found missing on the endpoint (default 7)"},
	{Name: ReportRows, Label: "Report has rows", DefaultThreshold: 1, Min: 1, Max: 1000000, Threshold: "minimum number of rows of the report reportKey (default 1)"},
}

// Lookup finds a trigger by name.
func Lookup(name string) (Trigger, bool) {
	for _, t := range Triggers {
		if t.Name == name {
			return t, true
		}
	}
	return Trigger{}, false
}

// TriggerNames lists the trigger names.
func TriggerNames() []string {
	out := make([]string, len(Triggers))
	for i, t := range Triggers {
		out[i] = t.Name
	}
	return out
}

// ReportKeys are the reports REPORT_ROWS can watch: every report key of the
// specification (section 2), which the report catalog serves (a test of
// internal/reports holds the two lists together).
var ReportKeys = []string{
	"endpoints", "installed-software", "web-browsers", "instant-messengers", "cloud-storage-apps",
	"software-by-endpoint", "hardware-inventory", "disk-drives", "disks-summary", "network-adapters",
	"monitors", "physical-memory", "firmware", "processors", "motherboards", "sound-devices",
	"scsi-controllers", "windows-drivers", "printers", "update-summary", "weekly-update-summary",
	"missing-updates", "missing-critical-updates", "missing-third-party", "installed-updates", "reboots",
	"update-status", "windows-update-settings", "win11-compatibility", "windows-update-history",
	"update-statistic", "antivirus-status", "bitlocker-status", "local-user-accounts", "local-groups",
	"group-membership", "profiles-by-computer", "local-administrators", "shared-folders", "logged-on-users",
	"offline-endpoints", "low-disk-space", "computer-ad-domains", "environment-variables",
	"to-internet-domains", "bitlocker-key", "logical-disks", "disk-volumes", "os-information",
	"os-install-dates", "computer-time-zones", "running-processes", "routing-tables", "to-tcp-ip-addresses",
	"services", "startup-items", "applied-gpo", "boot-configuration", "agent-configuration", "vulnerabilities",
	"vulnerable-software", "compensating-controls", "moveit-vulnerability", "webp-vulnerability", "cisa-kev",
	"vulnerabilities-by-endpoint", "compliance", "windows-hot-fixes", "cyber-essentials-email",
	"cyber-essentials-office", "cyber-essentials-web-browsers", "ms-outlook-versions", "hw-manufacturers",
	"logon-statistics", "profiles-by-user", "sd-card-usage", "usb-disk-usage", "open-hidden-shares",
	"local-time", "windows-event-logs", "process-memory-stats", "disk-partitions", "disks-without-bitlocker",
	"ntfs-disk-quotas", "all-critical-vulnerabilities", "vulnerability-summary", "cve-2025-5480-status",
	"compliance-history", "compliance-by-group", // patchd additions
}

// KnownReport tells whether REPORT_ROWS can watch the report key.
func KnownReport(key string) bool { return slices.Contains(ReportKeys, key) }

// Limits of rule fields.
const (
	MaxName       = 200
	MaxRecipients = 50
	MaxSecret     = 512
	MaxURL        = 2048
)

// ParseRecipients reads a comma-separated list of bare e-mail addresses
// ("a@example.com, b@example.com"); display names are refused so that the
// stored value is exactly the recipient list.
func ParseRecipients(s string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("empty recipient in the list")
		}
		if !isAddress(part) {
			return nil, fmt.Errorf("%q is not an e-mail address", part)
		}
		out = append(out, part)
	}
	if len(out) > MaxRecipients {
		return nil, fmt.Errorf("at most %d recipients", MaxRecipients)
	}
	return out, nil
}

// isAddress accepts local@domain with a dotted domain, nothing around it.
func isAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s || strings.ContainsAny(s, "\r\n<>") {
		return false
	}
	domain := s[strings.LastIndexByte(s, '@')+1:]
	return strings.Contains(domain, ".") && !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".")
}

// CheckWebhookURL accepts an absolute https:// URL with a host and no
// credentials. Where it points is checked at delivery, after DNS.
func CheckWebhookURL(s string) error {
	if len(s) > MaxURL {
		return fmt.Errorf("must have at most %d characters", MaxURL)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("is not a URL")
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return fmt.Errorf("must be an HTTPS URL (https://…)")
	}
	if u.Hostname() == "" {
		return fmt.Errorf("must name a host")
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials; use webhookSecret to sign deliveries")
	}
	if u.Fragment != "" {
		return fmt.Errorf("must not have a fragment")
	}
	return nil
}

// Rule is an alert rule's settings as given by an administrator; an empty
// string is an absent value.
type Rule struct {
	Name          string
	Trigger       string
	Threshold     *int
	EmailTo       string
	WebhookURL    string
	WebhookSecret string
	ReportKey     string
	// WebhookRetryMinutes (a patchd addition) is how long a failed webhook
	// delivery is tried again, with exponential back-off; 0 is the
	// specification's rule: one try of 10 seconds, no retry.
	WebhookRetryMinutes int
}

// MaxWebhookRetryMinutes bounds WebhookRetryMinutes (one day).
const MaxWebhookRetryMinutes = 1440

// Check normalises r (trimmed names and recipients, the trigger's default
// threshold) and answers every field problem at once.
func (r *Rule) Check() error {
	var errs valid.Errors
	r.Name = strings.TrimSpace(r.Name)
	switch {
	case r.Name == "":
		errs.Add("name", "is required")
	case utf8.RuneCountInString(r.Name) > MaxName:
		errs.Add("name", "must have at most %d characters", MaxName)
	}
	t, ok := Lookup(r.Trigger)
	switch {
	case r.Trigger == "":
		errs.Add("trigger", "is required")
	case !ok:
		errs.Add("trigger", "must be one of %s", strings.Join(TriggerNames(), ", "))
	case r.Threshold == nil:
		n := t.DefaultThreshold
		r.Threshold = &n
	case t.Ignored:
		if *r.Threshold < 0 || *r.Threshold > MaxIgnored {
			errs.Add("threshold", "must be a whole number from 0 to %d; %s %s", MaxIgnored, t.Name, t.Threshold)
		}
	case *r.Threshold < t.Min || *r.Threshold > t.Max:
		errs.Add("threshold", "must be between %d and %d for %s: %s", t.Min, t.Max, t.Name, t.Threshold)
	}
	r.EmailTo = strings.TrimSpace(r.EmailTo)
	if r.EmailTo != "" {
		list, err := ParseRecipients(r.EmailTo)
		if err != nil {
			errs.Add("emailTo", "must be comma-separated e-mail addresses: %v", err)
		} else {
			r.EmailTo = strings.Join(list, ", ")
		}
	}
	r.WebhookURL = strings.TrimSpace(r.WebhookURL)
	if r.WebhookURL != "" {
		if err := CheckWebhookURL(r.WebhookURL); err != nil {
			errs.Add("webhookUrl", "%v", err)
		}
	}
	if r.WebhookSecret != "" && r.WebhookURL == "" {
		errs.Add("webhookSecret", "signs webhook deliveries: give webhookUrl too")
	}
	if len(r.WebhookSecret) > MaxSecret {
		errs.Add("webhookSecret", "must have at most %d bytes", MaxSecret)
	}
	switch {
	case r.WebhookRetryMinutes < 0 || r.WebhookRetryMinutes > MaxWebhookRetryMinutes:
		errs.Add("webhookRetryMinutes", "must be a whole number of minutes from 0 (no retry) to %d", MaxWebhookRetryMinutes)
	case r.WebhookRetryMinutes > 0 && r.WebhookURL == "":
		errs.Add("webhookRetryMinutes", "retries webhook deliveries: give webhookUrl too")
	}
	if r.EmailTo == "" && r.WebhookURL == "" {
		errs.Add("emailTo", "give emailTo, webhookUrl or both: an event must go somewhere")
	}
	r.ReportKey = strings.TrimSpace(r.ReportKey)
	switch {
	case r.Trigger == ReportRows && r.ReportKey == "":
		errs.Add("reportKey", "is required for REPORT_ROWS: a report key such as missing-critical-updates")
	case r.Trigger == ReportRows && !KnownReport(r.ReportKey):
		errs.Add("reportKey", "%q is not a report key (GET /api/v1/reports/_list lists them)", r.ReportKey)
	case r.Trigger != ReportRows && r.ReportKey != "" && ok:
		errs.Add("reportKey", "is only for REPORT_ROWS")
	}
	return errs.Err()
}
