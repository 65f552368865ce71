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
)

// Triggers of AlertRuleBody.trigger.
const (
	NewEndpoint           = "NEW_ENDPOINT"
	EndpointOffline       = "ENDPOINT_OFFLINE"
	GroupUptime           = "GROUP_UPTIME"
	RebootRequired        = "REBOOT_REQUIRED"
	CriticalVuln          = "CRITICAL_VULN"
	MissingCriticalUpdate = "MISSING_CRITICAL_UPDATE"
	ReportRows            = "REPORT_ROWS"
)

// Trigger describes one trigger: its threshold's default, range and meaning.
type Trigger struct {
	Name             string
	DefaultThreshold int
	Min, Max         int
	// Threshold says what the threshold means (docs/alerts.md repeats it).
	Threshold string
}

// Triggers lists every trigger, in the order of the documentation.
var Triggers = []Trigger{
	{NewEndpoint, 0, 0, 0, "not used (0): every endpoint enrolled for the first time raises one event"},
	{EndpointOffline, 60, 1, 525600, "minutes since the endpoint's last check-in, once it counts as disconnected (default 60)"},
	{GroupUptime, 0, 0, 0, "not used (0): each group's offlineAlertMinutes and onlineAlert decide"},
	{RebootRequired, 24, 1, 8760, "hours the endpoint has been reporting a pending reboot (default 24)"},
	{CriticalVuln, 9, 0, 10, "minimum CVSS base score, in whole points (default 9 = 9.0); a CVE in the CISA KEV catalog always qualifies"},
	{MissingCriticalUpdate, 7, 0, 3650, "days since a Critical update was first found missing on the endpoint (default 7)"},
	{ReportRows, 1, 1, 1000000, "minimum number of rows of the report reportKey (default 1)"},
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

// ReportKeys are the reports whose rows REPORT_ROWS can count (the store
// counts them in SQL; others join when the report catalog serves them).
var ReportKeys = []string{"endpoints", "offline-endpoints", "missing-updates", "missing-critical-updates", "reboots", "vulnerabilities", "cisa-kev"}

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
