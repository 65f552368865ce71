package alerts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Severities of an event.
const (
	Info     = "info"
	Warning  = "warning"
	Critical = "critical"
)

// Event names carried in the body's "event" field: the trigger that raised
// it, ENDPOINT_ONLINE for a GROUP_UPTIME member back online, TEST for
// patchd admin alert test.
const (
	EventEndpointOnline = "ENDPOINT_ONLINE"
	EventTest           = "TEST"
)

// SignatureHeader carries the body's signature when the rule has a secret.
const SignatureHeader = "X-Service-Signature"

// RuleRef is the rule object of the webhook body.
type RuleRef struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Trigger string `json:"trigger"`
}

// Message is what one event delivers: the webhook's JSON body, and the
// e-mail's subject (Title) and plain-text body (Text).
type Message struct {
	// ID is the event's id (a patchd addition; receivers may de-duplicate).
	ID           string    `json:"id"`
	Event        string    `json:"event"`
	At           time.Time `json:"at"`
	Organization string    `json:"organization"`
	Rule         RuleRef   `json:"rule"`
	Severity     string    `json:"severity"`
	Title        string    `json:"title"`
	Detail       string    `json:"detail"`
	Text         string    `json:"text"`
}

// NewMessage fills the ready-to-display text of an event: chat tools'
// incoming webhooks (Slack, Teams, Mattermost) render "text" as is, so it
// reads on its own: severity, title, detail and which rule raised it.
func NewMessage(id, event string, at time.Time, org string, rule RuleRef, severity, title, detail string) Message {
	m := Message{ID: id, Event: event, At: at.UTC().Truncate(time.Millisecond), Organization: org, Rule: rule,
		Severity: severity, Title: title, Detail: detail}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s", strings.ToUpper(severity), title)
	if detail != "" {
		b.WriteString("\n" + detail)
	}
	fmt.Fprintf(&b, "\nOrganization: %s · Rule: %s (%s) · %s", org, rule.Name, rule.Trigger, m.At.Format("2006-01-02 15:04 UTC"))
	m.Text = b.String()
	return m
}

// Body is the webhook's JSON body. Its "text" is ChatText of m.Text (the
// e-mail keeps the plain text); title, detail and the names are as raised.
func (m Message) Body() []byte {
	m.Text = ChatText(m.Text)
	b, err := json.Marshal(m)
	if err != nil {
		// Message holds only strings and a time: it always marshals.
		panic(err)
	}
	return b
}

// ChatText makes text safe to render in a chat tool's incoming webhook,
// where endpoint, software and user names an agent reported would otherwise
// be markup: &, < and > are escaped as Slack's message formatting asks
// (so "<https://x|label>" and "<!channel>" stay text); a mention ("@here",
// "@channel", "@all", "@someone": an @ that starts a word) and a Markdown
// link ("[label](url)", Mattermost and Teams) get a zero-width space that
// breaks them without changing what is read.
func ChatText(text string) string {
	var b strings.Builder
	b.Grow(len(text) + 16)
	var prev rune
	for i, r := range text {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '@':
			b.WriteRune(r)
			if next, _ := utf8.DecodeRuneInString(text[i+1:]); !isWordRune(prev) && (isWordRune(next) || next == '!') {
				b.WriteString(zeroWidthSpace)
			}
		case '(':
			if prev == ']' {
				b.WriteString(zeroWidthSpace)
			}
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

const zeroWidthSpace = "\u200b"

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Sign answers the X-Service-Signature value of body: "sha256=" and the
// hex HMAC-SHA256 of the raw body keyed with the rule's secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify checks a signature header against body in constant time (what a
// receiver does; docs/alerts.md shows the same lines).
func Verify(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(header), []byte(Sign(secret, body)))
}
