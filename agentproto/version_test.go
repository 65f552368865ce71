package agentproto

import "testing"

func TestSemanticVersions(t *testing.T) {
	for _, v := range []string{"1.0.0", "0.0.0", "10.20.30", "1.4.0-rc.1", "1.0.0-alpha-a.b-c", "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85"} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"", "linux/amd64", "v1.0.0", "1.0", "1.0.0.0", "01.0.0", "1.0.0-", "1.0.0-01", "1.0.0+", "1.0.0-a..b", "1.0.0 ", "1.a.0", "99999999999999999999.0.0"} {
		if err := CheckVersion(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
	// The order of semver.org's section 11.
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
		"1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0", "10.0.0"}
	for i := range order {
		for j := range order {
			c, err := CompareVersions(order[i], order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if err != nil || c != want {
				t.Errorf("compare %s %s: %d %v, want %d", order[i], order[j], c, err, want)
			}
		}
	}
	if c, err := CompareVersions("1.0.0+a", "1.0.0+b"); err != nil || c != 0 {
		t.Errorf("build metadata counted: %d %v", c, err)
	}
	if _, err := CompareVersions("dev", "1.0.0"); err == nil {
		t.Error("dev compared")
	}
}
