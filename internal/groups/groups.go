// Package groups owns the membership logic of endpoint groups that needs
// neither HTTP nor SQL: the fields a dynamic rule can test, the eight
// operators, validation of rules, and the evaluation of a group's include
// and exclude rules against an endpoint's facts. Every comparison is
// case-insensitive.
package groups

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Kinds of group (spec: Group.kind).
const (
	Static  = "STATIC"
	Dynamic = "DYNAMIC"
)

// Built-in groups every organization has.
const (
	BuiltinAll = "all"
	BuiltinNew = "new"
)

// Names of the built-in groups.
const (
	NameAll = "All endpoints"
	NameNew = "New endpoints"
)

// Operators of a rule (spec: GroupRule.op).
const (
	OpContains    = "contains"
	OpNotContains = "notContains"
	OpEquals      = "equals"
	OpNotEquals   = "notEquals"
	OpStartsWith  = "startsWith"
	OpEndsWith    = "endsWith"
	OpIsTrue      = "isTrue"
	OpIsFalse     = "isFalse"
)

// Ops lists the operators.
var Ops = []string{OpContains, OpNotContains, OpEquals, OpNotEquals, OpStartsWith, OpEndsWith, OpIsTrue, OpIsFalse}

// Fields a rule can test, besides attr1 … attr30. Every one is a column of
// the endpoint record that the store keeps current, so membership can be
// decided when the record changes. ipAddresses and macAddresses hold
// several values; reboot is a boolean.
var Fields = []string{
	"hostname", "name", "os", "osVersion", "osBuild", "platform", "domain", "adOu", "type", "arch", "distro",
	"antivirus", "reboot", "agentVersion", "user", "manufacturer", "model", "serialNumber", "cpu",
	"ipAddresses", "macAddresses", "timeZone", "comment",
}

// MaxAttribute is the highest custom attribute (attr1 … attr30).
const MaxAttribute = 30

// Limits of a group body.
const (
	MaxRules = 100
	MaxValue = 1024
)

var fieldByLower = func() map[string]string {
	m := map[string]string{"pendingreboot": "reboot", "ipaddress": "ipAddresses", "macaddress": "macAddresses", "loggeduser": "user"}
	for _, f := range Fields {
		m[strings.ToLower(f)] = f
	}
	return m
}()

var fieldShape = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.]{0,63}$`)

// CanonicalField answers the canonical spelling of a rule field (field names
// are matched case-insensitively), or a description of what is wrong.
func CanonicalField(field string) (string, error) {
	f := strings.TrimSpace(field)
	if f == "" {
		return "", fmt.Errorf("is required")
	}
	if !fieldShape.MatchString(f) {
		return "", fmt.Errorf("must be a field name such as hostname, os or attr1 (letters, digits, '_' and '.')")
	}
	lower := strings.ToLower(f)
	if rest, ok := strings.CutPrefix(lower, "attr"); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > MaxAttribute || rest[0] == '0' {
			return "", fmt.Errorf("custom attributes are attr1 … attr%d", MaxAttribute)
		}
		return "attr" + rest, nil
	}
	if c, ok := fieldByLower[lower]; ok {
		return c, nil
	}
	return "", fmt.Errorf("unknown field %q; known fields: %s, attr1 … attr%d", f, strings.Join(Fields, ", "), MaxAttribute)
}

// Rule is a checked rule: canonical field, known operator.
type Rule struct {
	Field string `json:"field"`
	Op    string `json:"op"`
	Value string `json:"value"`
}

// Problem is one thing wrong with a rule, for the field named by Path
// relative to the rule ("field", "op", "value").
type Problem struct {
	Path, Message string
}

// CheckRule checks a rule and answers it with its field in canonical
// spelling, and every problem found.
func CheckRule(field, op, value string) (Rule, []Problem) {
	var probs []Problem
	r := Rule{Op: op, Value: value}
	f, err := CanonicalField(field)
	if err != nil {
		probs = append(probs, Problem{"field", err.Error()})
	}
	r.Field = f
	known := false
	for _, o := range Ops {
		if o == op {
			known = true
		}
	}
	switch {
	case op == "":
		probs = append(probs, Problem{"op", "is required"})
	case !known:
		probs = append(probs, Problem{"op", "must be one of " + strings.Join(Ops, ", ")})
	}
	if len(value) > MaxValue {
		probs = append(probs, Problem{"value", fmt.Sprintf("must have at most %d bytes", MaxValue)})
	}
	if (op == OpContains || op == OpNotContains || op == OpStartsWith || op == OpEndsWith) && value == "" {
		probs = append(probs, Problem{"value", "is required for " + op})
	}
	return r, probs
}

// Facts are the values of an endpoint that rules test, by canonical field
// name. A field with no value is absent or empty.
type Facts map[string][]string

// Set records a single value (nil for unknown).
func (f Facts) Set(field string, v *string) {
	if v == nil {
		return
	}
	f[field] = []string{*v}
}

// Truthy tells whether a value reads as true: true, yes, 1 or on.
func Truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "1", "on", "y":
		return true
	}
	return false
}

// Match tells whether one rule holds for the facts. Positive operators hold
// when any value of the field matches; notContains and notEquals hold when
// no value does. An absent field reads as the empty string. isTrue holds
// for a true/yes/1/on value; isFalse is its negation.
func (r Rule) Match(f Facts) bool {
	values := f[r.Field]
	if len(values) == 0 {
		values = []string{""}
	}
	want := strings.ToLower(r.Value)
	anyValue := func(test func(v string) bool) bool {
		for _, v := range values {
			if test(strings.ToLower(v)) {
				return true
			}
		}
		return false
	}
	switch r.Op {
	case OpContains:
		return anyValue(func(v string) bool { return strings.Contains(v, want) })
	case OpNotContains:
		return !anyValue(func(v string) bool { return strings.Contains(v, want) })
	case OpEquals:
		return anyValue(func(v string) bool { return v == want })
	case OpNotEquals:
		return !anyValue(func(v string) bool { return v == want })
	case OpStartsWith:
		return anyValue(func(v string) bool { return strings.HasPrefix(v, want) })
	case OpEndsWith:
		return anyValue(func(v string) bool { return strings.HasSuffix(v, want) })
	case OpIsTrue:
		return anyValue(Truthy)
	case OpIsFalse:
		return !anyValue(Truthy)
	}
	return false
}

// Criteria are the rules of a dynamic group.
type Criteria struct {
	MatchAll bool
	Rules    []Rule
	Exclude  []Rule
}

// Member tells whether an endpoint with these facts belongs to the group:
// its include rules hold (every one with MatchAll, else at least one; no
// include rules include every endpoint) and none of its exclude rules
// holds.
func (c Criteria) Member(f Facts) bool {
	for _, r := range c.Exclude {
		if r.Match(f) {
			return false
		}
	}
	if len(c.Rules) == 0 {
		return true
	}
	for _, r := range c.Rules {
		m := r.Match(f)
		if c.MatchAll && !m {
			return false
		}
		if !c.MatchAll && m {
			return true
		}
	}
	return c.MatchAll
}
