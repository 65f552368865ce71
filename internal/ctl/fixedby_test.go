package ctl

import (
	"testing"

	"github.com/patchd/patchd/apiv1"
)

func TestFixedByColumn(t *testing.T) {
	v := "3.0.11-1~deb12u2"
	b := "10.0.22631.6345"
	got := fixedBy([]apiv1.Remediation{
		{Kind: "kb", Key: "KB5071417", Software: "Windows 11 Version 23H2 for x64-based Systems", FixedIn: &b, Endpoints: 3},
		{Kind: "package", Key: "openssl", Software: "openssl", FixedIn: &v, Endpoints: 1},
	})
	if want := "KB5071417 (3); openssl 3.0.11-1~deb12u2 (1)"; got != want {
		t.Errorf("fixedBy = %q, want %q", got, want)
	}
	if got := fixedBy(nil); got != "" {
		t.Errorf("fixedBy(nil) = %q", got)
	}
}
