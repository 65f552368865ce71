package bootedtest_test

import (
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/bootedtest"
)

// TestBoot boots the three roots: PID 1 is the init asked for (OpenRC's
// root: sysvinit, with OpenRC's default runlevel started), and the
// machine runs commands.
func TestBoot(t *testing.T) {
	for _, k := range []bootedtest.Kind{bootedtest.Systemd, bootedtest.SysV, bootedtest.OpenRC} {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			m := bootedtest.Boot(t, k)
			out, err := m.Run("cat /proc/1/comm; readlink /proc/1/exe; hostname")
			want := map[bootedtest.Kind]string{bootedtest.Systemd: "systemd", bootedtest.SysV: "init", bootedtest.OpenRC: "init"}[k]
			if err != nil || !strings.HasPrefix(out, want+"\n") || !strings.Contains(out, "patchd-booted-"+string(k)) {
				t.Errorf("PID 1 of the %s machine: %v\n%s", k, err, out)
			}
			rc, err := m.Run("rc-status --runlevel 2>&1; ls /etc/rc2.d 2>&1 | head -3")
			if k == bootedtest.OpenRC && (err != nil || !strings.HasPrefix(rc, "default\n")) || k == bootedtest.SysV && strings.Contains(rc, "default\n") {
				t.Errorf("the %s machine's rc: %v\n%s", k, err, rc)
			}
		})
	}
}
