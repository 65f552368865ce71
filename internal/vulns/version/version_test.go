package version

import "testing"

type cmpCase struct {
	a, b string
	want int
}

func checkTable(t *testing.T, s Scheme, cases []cmpCase) {
	t.Helper()
	for _, c := range cases {
		if got := Compare(s, c.a, c.b); got != c.want {
			t.Errorf("Compare(%s, %q, %q) = %d, want %d", s, c.a, c.b, got, c.want)
		}
		if got := Compare(s, c.b, c.a); got != -c.want {
			t.Errorf("Compare(%s, %q, %q) = %d, want %d (reversed)", s, c.b, c.a, got, -c.want)
		}
		if got := Parse(s, c.a).Compare(Parse(s, c.b)); got != c.want {
			t.Errorf("Parse(%s, %q).Compare(%q) = %d, want %d", s, c.a, c.b, got, c.want)
		}
	}
}

func TestGeneric(t *testing.T) {
	checkTable(t, Generic, []cmpCase{
		{"1.2.3", "1.2.10", -1},
		{"1.2.3", "1.2.3", 0},
		{"1.2", "1.2.0", 0},
		{"1.2.3", "1.2.3.0", 0},
		{"1.0.0-beta", "1.0.0", -1},
		{"1.0.0-alpha", "1.0.0-beta", -1},
		{"1.0.0-beta", "1.0.0-rc1", -1},
		{"1.0.0-rc1", "1.0.0-rc2", -1},
		{"1.0.0-rc2", "1.0.0-rc10", -1},
		{"1.0.0-RC1", "1.0.0-rc1", 0},
		{"1.0.0-beta.2", "1.0.0-beta.11", -1},
		{"1.0.0-beta", "1.0.0-beta.2", -1},
		{"1.0-rc1", "1.0.1", -1},
		{"v1.2.3", "1.2.3", 0},
		{"17.0.8+7", "17.0.8", 0},
		// Windows four-part versions.
		{"10.0.19045.3930", "10.0.19045.4046", -1},
		{"10.0.22621.2861", "10.0.19045.4046", 1},
		{"116.0.5845.96", "116.0.5845.187", -1},
		{"116.0.5845.187", "116.0.5845.187", 0},
		{"116.0.5845.188", "116.0.5845.187", 1},
		{"117.0.5938.62", "116.0.5845.187", 1},
		{"23.8.0.1", "23.8", 1},
		// OpenSSL and OpenSSH letter releases.
		{"1.1.1k", "1.1.1w", -1},
		{"1.1.1", "1.1.1a", -1},
		{"1.1.1w", "3.0.0", -1},
		{"1.0.2zi", "1.0.2u", 1},
		{"8.9p1", "8.9", 1},
		{"8.9p1", "9.0p1", -1},
		{"9.3p2", "9.3p10", -1},
		// Python pre-releases.
		{"3.12.0a1", "3.12.0b2", -1},
		{"3.12.0b2", "3.12.0rc1", -1},
		{"3.12.0rc1", "3.12.0", -1},
		{"3.11.9", "3.12.0a1", -1},
		// log4j's 2.0-beta9 and 2.0-rc1.
		{"2.0-beta9", "2.0", -1},
		{"2.0-beta9", "2.0-rc1", -1},
		{"2.0-rc2", "2.0.1", -1},
		{"2.14.1", "2.15.0", -1},
		{"2.12.2", "2.12.1", 1},
		// 7-Zip, PuTTY, WinRAR, MOVEit, VLC, Notepad++.
		{"23.01", "24.07", -1},
		{"24.07", "24.7", 0},
		{"24.08", "24.07", 1},
		{"0.80", "0.81", -1},
		{"0.68", "0.7", 1},
		{"6.22", "6.23", -1},
		{"6.23.0", "6.23", 0},
		{"2023.0.1", "2023.0.0", 1},
		{"2022.1.5", "2023.0.0", -1},
		{"3.0.18", "3.0.20", -1},
		{"8.5.6", "8.5.7", -1},
		{"8.5.6", "8.5.6", 0},
		// Oddities that must still order sensibly.
		{"", "0", 0},
		{"", "1", -1},
		{"1.0a", "1.0.1", -1},
		{"99999999999999999999999", "99999999999999999999998", 1},
		{"0010", "10", 0},
	})
}

func TestDeb(t *testing.T) {
	checkTable(t, Deb, []cmpCase{
		{"1.0~rc1", "1.0", -1},
		{"1.0~rc1", "1.0~rc2", -1},
		{"1.0~~", "1.0~", -1},
		{"1.0~~a", "1.0~", -1},
		{"1.0~~", "1.0~~a", -1},
		{"1.0", "1.0a", -1},
		{"1.0a", "1.0+", -1},
		{"1.0", "1.0.0", -1},
		{"1.0", "1.0-0", 0},
		{"1.0-1", "1.0-01", 0},
		{"0:1.0-1", "1.0-1", 0},
		{"1:2.3-4+deb12u1", "2.4-1", 1},
		{"2:1.0", "1:9.9", 1},
		{"10:1.0", "9:1.0", 1},
		{"2.36-9+deb12u4", "2.36-9+deb12u7", -1},
		{"2.36-9+deb12u3", "2.36-9", 1},
		{"2.36-9+deb12u10", "2.36-9+deb12u9", 1},
		{"3.0.11-1~deb12u1", "3.0.11-1~deb12u2", -1},
		{"3.0.11-1~deb12u2", "3.0.11-1", -1},
		{"3.0.11-1~deb12u2", "3.0.9-1", 1},
		{"3.0.13-1~deb12u1", "3.0.11-1~deb12u2", 1},
		{"1.2.4-0.2+deb12u1", "1.2.4-0.2", 1},
		{"5.6.1+really5.4.5-1", "5.6.1-1", 1},
		{"5.4.1-0.2", "5.6.0-0.2", -1},
		{"1.2.3+dfsg-1", "1.2.3-1", 1},
		{"1.2.3+dfsg-1", "1.2.3.1-1", -1}, // dpkg: '+' sorts before '.'
		{"7.88.1-10+deb12u5", "7.88.1-10+deb12u8", -1},
		{"1:9.18.24-1", "1:9.18.19-1~deb12u1", 1},
		{"2.35-0ubuntu3.4", "2.35-0ubuntu3.6", -1},
		{"3.0.2-0ubuntu1.10", "3.0.2-0ubuntu1.12", -1},
		{"3.0.2-0ubuntu1.10", "3.0.2-0ubuntu1.9", 1},
		{"1.2.4-0.2+deb12u1", "1.2.4-0.2+deb12u1", 0},
		{"1.0-1+b1", "1.0-1", 1},
		{"115.3.1esr-1~deb12u1", "115.2.1esr-1~deb12u1", 1},
		{"a:1.0", "1.0", 1}, // not an epoch: ordered as upstream "a:1.0"
	})
}

func TestRPM(t *testing.T) {
	checkTable(t, RPM, []cmpCase{
		{"1.0", "1.0", 0},
		{"1.0", "2.0", -1},
		{"1.0", "1.0.1", -1},
		{"1.0.1", "1.0a", 1},
		{"1.0a", "1.0b", -1},
		{"1.0010", "1.10", 0},
		{"1.05", "1.5", 0},
		{"fc4", "fc.4", 0},
		{"FC5", "fc4", -1}, // upper case sorts first in strcmp
		{"2a", "2.0", -1},
		{"5.5p1", "5.5p2", -1},
		{"5.5p2", "5.5p10", -1},
		{"1.0~rc1", "1.0", -1},
		{"1.0~rc1", "1.0~rc2", -1},
		{"1.0~rc1~git123", "1.0~rc1", -1},
		{"1.0^", "1.0", 1},
		{"1.0^git1", "1.0", 1},
		{"1.0^git1", "1.0.1", -1},
		{"1.0^git1", "1.0^git2", -1},
		{"1.0^20160101", "1.0.1", -1},
		{"1.0~rc1^git1", "1.0~rc1", 1},
		{"1.0^git1~pre", "1.0^git1", -1},
		{"1.0", "1.0-1", 0}, // no release: matches any release
		{"3.0.7-24.el9", "3.0.7-27.el9", -1},
		{"1:3.0.7-27.el9", "3.0.7-27.el9", 1},
		{"1:3.0.7-24.el9", "1:3.0.7-27.el9", -1},
		{"2.34-60.el9_2.7", "2.34-60.el9", 1},
		{"2.34-60.el9_2.7", "2.34-83.el9.7", -1},
		{"1.2.0-7.el9_2", "1.2.0-6.el9_1", 1},
		{"1.2.0-7.el9_2", "1.2.0-7.el9_2", 0},
		{"5.2.5-8.el9_0", "5.2.5-8.el9", 1},
	})
}

func TestSchemeFor(t *testing.T) {
	for eco, want := range map[string]Scheme{
		"Debian:12": Deb, "debian:12": Deb, "Ubuntu:22.04:LTS": Deb, "ubuntu": Deb,
		"AlmaLinux:9": RPM, "almalinux:9": RPM, "Rocky Linux:9": RPM, "rocky:9": RPM, "Red Hat": RPM, "rhel:9": RPM,
		"PyPI": Generic, "npm": Generic, "": Generic, "windows": Generic,
	} {
		if got := SchemeFor(eco); got != want {
			t.Errorf("SchemeFor(%q) = %s, want %s", eco, got, want)
		}
	}
}

func TestInRange(t *testing.T) {
	cases := []struct {
		s    Scheme
		v    string
		r    Range
		want bool
	}{
		{Generic, "116.0.5845.186", Range{EndExcl: "116.0.5845.187"}, true},
		{Generic, "116.0.5845.187", Range{EndExcl: "116.0.5845.187"}, false},
		{Generic, "8.5.6", Range{EndIncl: "8.5.6"}, true},
		{Generic, "8.5.7", Range{EndIncl: "8.5.6"}, false},
		{Generic, "0.67", Range{StartIncl: "0.68", EndExcl: "0.81"}, false},
		{Generic, "0.68", Range{StartIncl: "0.68", EndExcl: "0.81"}, true},
		{Generic, "0.80", Range{StartIncl: "0.68", EndExcl: "0.81"}, true},
		{Generic, "2.0", Range{StartExcl: "2.0", EndExcl: "3"}, false},
		{Generic, "2.0.1", Range{StartExcl: "2.0", EndExcl: "3"}, true},
		{Generic, "5.6.1", Range{Exact: "5.6.1"}, true},
		{Generic, "5.6.2", Range{Exact: "5.6.1", EndExcl: "9"}, false},
		{Generic, "anything", Range{Exact: "*"}, true},
		{Generic, "1", Range{}, true},
		{Deb, "3.0.11-1~deb12u2", Range{StartIncl: "0", EndExcl: "3.0.11-1~deb12u1"}, false},
		{Deb, "3.0.9-1", Range{StartIncl: "0", EndExcl: "3.0.11-1~deb12u1"}, true},
		{RPM, "2.34-60.el9_2.6", Range{EndExcl: "2.34-60.el9_2.7"}, true},
	}
	for _, c := range cases {
		if got := InRange(c.s, c.v, c.r); got != c.want {
			t.Errorf("InRange(%s, %q, %+v) = %v, want %v", c.s, c.v, c.r, got, c.want)
		}
	}
}

func TestCanonical(t *testing.T) {
	same := [][2]string{{"1.2", "1.2.0.0"}, {"v1.2.3", "1.2.3"}, {"1.0.0-RC1", "1.0.0-rc.1"}, {"0010.1", "10.1"}}
	for _, p := range same {
		if Canonical(Generic, p[0]) != Canonical(Generic, p[1]) {
			t.Errorf("Canonical(%q) = %q, Canonical(%q) = %q, want equal", p[0], Canonical(Generic, p[0]), p[1], Canonical(Generic, p[1]))
		}
	}
	if Canonical(Generic, "1.1.1k") == Canonical(Generic, "1.1.1") {
		t.Error("1.1.1k and 1.1.1 must differ")
	}
	if Canonical(Deb, "0:1.0-1") != Canonical(Deb, "1.0-1") {
		t.Error("epoch 0 must vanish")
	}
}

// FuzzCompare checks that no input panics and that the orders are
// antisymmetric, and that Canonical agrees with Compare for Generic.
func FuzzCompare(f *testing.F) {
	for _, p := range [][2]string{
		{"1.2.3", "1.2.10"}, {"1.0.0-rc1", "1.0.0"}, {"1.1.1k", "1.1.1w"}, {"1:2.3-4+deb12u1", "2.3-4"},
		{"1.0~rc1", "1.0"}, {"1.0^git1", "1.0"}, {"3.0.7-27.el9", "1:3.0.7-24.el9"}, {"", "~"},
		{"10.0.19045.3930", "10.0.19045.4046"}, {"3.12.0a1", "3.12.0"}, {"-:--", "::"}, {"0.0.0-0", "0"},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, s := range []Scheme{Generic, Deb, RPM} {
			ab, ba := Compare(s, a, b), Compare(s, b, a)
			if ab != -ba {
				t.Fatalf("%s: Compare(%q,%q)=%d but Compare(%q,%q)=%d", s, a, b, ab, b, a, ba)
			}
			if Compare(s, a, a) != 0 {
				t.Fatalf("%s: Compare(%q,%q) != 0", s, a, a)
			}
			InRange(s, a, Range{StartIncl: b, EndExcl: a})
		}
		if (Compare(Generic, a, b) == 0) != (Canonical(Generic, a) == Canonical(Generic, b)) {
			t.Fatalf("Compare(%q,%q)=%d but canonical forms %q, %q", a, b, Compare(Generic, a, b), Canonical(Generic, a), Canonical(Generic, b))
		}
	})
}
