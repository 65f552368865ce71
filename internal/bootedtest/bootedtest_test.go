package bootedtest_test

import (
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/bootedtest"
)

// TestBoot boots both roots: PID 1 is the init asked for, and the
// machine runs commands and sees the host's loopback.
func TestBoot(t *testing.T) {
	for _, k := range []bootedtest.Kind{bootedtest.Systemd, bootedtest.SysV} {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			m := bootedtest.Boot(t, k)
			out, err := m.Run("cat /proc/1/comm; readlink /proc/1/exe; hostname")
			want := map[bootedtest.Kind]string{bootedtest.Systemd: "systemd", bootedtest.SysV: "init"}[k]
			if err != nil || !strings.HasPrefix(out, want+"\n") || !strings.Contains(out, "patchd-booted-"+string(k)) {
				t.Errorf("PID 1 of the %s machine: %v\n%s", k, err, out)
			}
		})
	}
}
