package groups

import "testing"

func facts() Facts {
	f := Facts{}
	str := func(s string) *string { return &s }
	f.Set("hostname", str("WS-Berlin-01"))
	f.Set("os", str("Windows 11 Pro"))
	f.Set("platform", str("windows"))
	f.Set("reboot", str("true"))
	f.Set("attr3", str("Finance"))
	f.Set("domain", nil)
	f["ipAddresses"] = []string{"10.0.0.5", "192.168.1.20"}
	return f
}

func TestRuleOps(t *testing.T) {
	f := facts()
	for _, c := range []struct {
		field, op, value string
		want             bool
	}{
		{"hostname", OpContains, "berlin", true},
		{"hostname", OpContains, "paris", false},
		{"hostname", OpNotContains, "PARIS", true},
		{"hostname", OpNotContains, "BERLIN", false},
		{"os", OpEquals, "windows 11 pro", true},
		{"os", OpEquals, "windows 11", false},
		{"os", OpNotEquals, "Windows 10", true},
		{"os", OpNotEquals, "WINDOWS 11 PRO", false},
		{"hostname", OpStartsWith, "ws-", true},
		{"hostname", OpStartsWith, "srv-", false},
		{"hostname", OpEndsWith, "-01", true},
		{"hostname", OpEndsWith, "-02", false},
		{"reboot", OpIsTrue, "", true},
		{"reboot", OpIsFalse, "", false},
		{"attr3", OpIsTrue, "", false},
		{"attr3", OpIsFalse, "", true},
		{"attr3", OpEquals, "finance", true},
		{"attr4", OpEquals, "", true},
		{"attr4", OpNotEquals, "x", true},
		{"attr4", OpContains, "x", false},
		{"domain", OpEquals, "", true},
		{"ipAddresses", OpStartsWith, "192.168.", true},
		{"ipAddresses", OpEquals, "10.0.0.5", true},
		{"ipAddresses", OpNotContains, "10.0.", false},
		{"ipAddresses", OpNotEquals, "10.0.0.6", true},
	} {
		if got := (Rule{c.field, c.op, c.value}).Match(f); got != c.want {
			t.Errorf("%s %s %q: %v, want %v", c.field, c.op, c.value, got, c.want)
		}
	}
}

func TestCriteria(t *testing.T) {
	f := facts()
	yes := Rule{"platform", OpEquals, "windows"}
	no := Rule{"platform", OpEquals, "linux"}
	for _, c := range []struct {
		name string
		c    Criteria
		want bool
	}{
		{"all of two true", Criteria{MatchAll: true, Rules: []Rule{yes, yes}}, true},
		{"all with one false", Criteria{MatchAll: true, Rules: []Rule{yes, no}}, false},
		{"any with one true", Criteria{MatchAll: false, Rules: []Rule{no, yes}}, true},
		{"any with none true", Criteria{MatchAll: false, Rules: []Rule{no, no}}, false},
		{"excluded", Criteria{MatchAll: true, Rules: []Rule{yes}, Exclude: []Rule{{"hostname", OpContains, "berlin"}}}, false},
		{"exclusion not matching", Criteria{MatchAll: true, Rules: []Rule{yes}, Exclude: []Rule{no}}, true},
		{"only exclusions", Criteria{Exclude: []Rule{no}}, true},
	} {
		if got := c.c.Member(f); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestCheckRule(t *testing.T) {
	for _, c := range []struct {
		field, op, value string
		canon            string
		paths            []string
	}{
		{"hostname", OpContains, "a", "hostname", nil},
		{"OSVersion", OpEquals, "", "osVersion", nil},
		{"attr30", OpIsTrue, "", "attr30", nil},
		{"ATTR7", OpEquals, "x", "attr7", nil},
		{"pendingReboot", OpIsTrue, "", "reboot", nil},
		{"attr31", OpEquals, "x", "", []string{"field"}},
		{"attr0", OpEquals, "x", "", []string{"field"}},
		{"attr07", OpEquals, "x", "", []string{"field"}},
		{"favouriteColour", OpEquals, "x", "", []string{"field"}},
		{"host name", OpEquals, "x", "", []string{"field"}},
		{"", OpEquals, "x", "", []string{"field"}},
		{"hostname", "matches", "x", "hostname", []string{"op"}},
		{"hostname", "", "x", "hostname", []string{"op"}},
		{"hostname", OpContains, "", "hostname", []string{"value"}},
	} {
		r, probs := CheckRule(c.field, c.op, c.value)
		var paths []string
		for _, p := range probs {
			paths = append(paths, p.Path)
		}
		if r.Field != c.canon || len(paths) != len(c.paths) || (len(paths) > 0 && paths[0] != c.paths[0]) {
			t.Errorf("%q %q %q: %+v %v", c.field, c.op, c.value, r, probs)
		}
	}
}
