package agent

import (
	"github.com/patchd/patchd/agentsvc"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// lookPath finds a tool (tests replace it).
var lookPath = exec.LookPath

// detectLinux picks the service manager of the Linux system under root:
// systemd when it is running (sd_booted: /run/systemd/system exists),
// else OpenRC, else SysV init (a tool that links init scripts into the
// runlevels: update-rc.d, chkconfig). Without one of them it answers ErrNoServiceManager.
func detectLinux(root string) (Manager, error) {
	if isDir(filepath.Join(root, "run/systemd/system")) {
		return Systemd, nil
	}
	if isDir(filepath.Join(root, "run/openrc")) || hasTool(root, "openrc-run") && hasTool(root, "rc-update") {
		return OpenRC, nil
	}
	// Debian 13 without systemd may lack /etc/init.d until a script is
	// installed; the tool that links scripts into runlevels is the sign.
	if hasTool(root, "update-rc.d") || hasTool(root, "chkconfig") {
		return SysV, nil
	}
	return "", ErrNoServiceManager
}

// installedLinux is the manager the agent's service was registered with
// under root, judged by the files it wrote; detectLinux when there are none.
func installedLinux(root string) Manager {
	if _, err := os.Stat(filepath.Join(root, agentsvc.SystemdPath)); err == nil {
		return Systemd
	}
	// The packages' unit, under a running systemd (their init script is
	// there too, for systems without it).
	if _, err := os.Stat(filepath.Join(root, agentsvc.PackageUnitPath)); err == nil && isDir(filepath.Join(root, "run/systemd/system")) {
		return Systemd
	}
	if b, err := os.ReadFile(filepath.Join(root, agentsvc.InitScript)); err == nil {
		if strings.HasPrefix(string(b), "#!/sbin/openrc-run") {
			return OpenRC
		}
		return SysV
	}
	m, err := detectLinux(root)
	if err != nil {
		return Systemd
	}
	return m
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func hasTool(root, name string) bool {
	for _, dir := range []string{"usr/sbin", "sbin", "usr/bin", "bin"} {
		if fi, err := os.Stat(filepath.Join(root, dir, name)); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}
