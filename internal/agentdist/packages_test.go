package agentdist_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/agentdist"
)

func need(t *testing.T, tools ...string) {
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (.ci/run installs it)", tool)
		}
	}
}

// publishFake publishes content as the agent for p, released as version.
func publishFake(t *testing.T, h *agentdist.Host, p agentdist.Platform, content []byte, version string) {
	f := filepath.Join(t.TempDir(), p.FileName())
	os.WriteFile(f, content, 0o755)
	publishRelease(t, h, p, f, version)
}

// TestRPM reads the .rpm with rpm -qlp: its files and scriptlets.
func TestRPM(t *testing.T) {
	need(t, "rpm")
	_, h := newEnv(t)
	publishFake(t, h, agentdist.Platform{OS: "linux", Arch: "arm64"}, fakeELF, "1.4.0")
	pkg, err := h.Packages.Build(context.Background(), agentdist.PackageRequest{Type: "rpm", Arch: "arm64"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("rpm", "-qlp", pkg.Path).CombinedOutput()
	if err != nil {
		t.Fatalf("rpm -qlp: %v %s", err, out)
	}
	for _, want := range []string{"/usr/bin/patchd-agent", "/usr/lib/systemd/system/patchd-agent.service", "/etc/init.d/patchd-agent",
		"/usr/share/man/man8/patchd-agent.8.gz", "/usr/share/licenses/patchd-agent/copyright", "/usr/share/doc/patchd-agent/README"} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("rpm lacks %s:\n%s", want, out)
		}
	}
	out, _ = exec.Command("rpm", "-qp", "--scripts", "--queryformat", "%{ARCH}\n", pkg.Path).CombinedOutput()
	for _, want := range []string{"aarch64", "postinstall scriptlet", "preuninstall scriptlet", "postuninstall scriptlet", "PATCHD_TOKEN", "systemctl enable patchd-agent.service", "chkconfig --add patchd-agent"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rpm scripts lack %q:\n%s", want, out)
		}
	}
}

// TestMSI reads the .msi with msiinfo and msiextract: the binary, the
// service, the SERVER and TOKEN properties and the enrolling custom
// action; then signs it with a self-made certificate and verifies it.
func TestMSI(t *testing.T) {
	need(t, "wixl", "msiinfo", "msiextract", "msibuild")
	if !agentdist.CanBuildMSI() {
		t.Error("wixl and msibuild are here, CanBuildMSI says the MSI cannot be built (the Enrollment page would not offer it)")
	}
	_, h := newEnv(t)
	exe := append([]byte("MZ"), []byte(strings.Repeat("windows agent ", 500))...)
	publishFake(t, h, agentdist.Platform{OS: "windows", Arch: "amd64"}, exe, "1.4.0")
	pkg, err := h.Packages.Build(context.Background(), agentdist.PackageRequest{Type: "msi", Arch: "amd64", Server: "https://patchd.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	msiinfo := func(args ...string) string {
		out, err := exec.Command("msiinfo", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("msiinfo %v: %v %s", args, err, out)
		}
		return string(out)
	}
	if out := msiinfo("export", pkg.Path, "Property"); !strings.Contains(out, "SERVER\thttps://patchd.example.com") {
		t.Errorf("properties:\n%s", out)
	}
	if out := msiinfo("export", pkg.Path, "ServiceInstall"); !strings.Contains(out, "patchd-agent\tpatchd agent\t16\t2") || !strings.Contains(out, `run --state "[CommonAppDataFolder]patchd-agent"`) {
		t.Errorf("service:\n%s", out)
	}
	if out := msiinfo("export", pkg.Path, "CustomAction"); !strings.Contains(out, "Enroll\t3090\tAgentExe\tenroll --server \"[SERVER]\" --token \"[TOKEN]\"") {
		t.Errorf("custom action:\n%s", out)
	}
	if out := msiinfo("export", pkg.Path, "InstallExecuteSequence"); !strings.Contains(out, "Enroll\tTOKEN AND NOT REMOVE") {
		t.Errorf("sequence:\n%s", out)
	}
	// Recovery (wixl cannot write it; msibuild adds it): restart after 5 s,
	// 30 s, then every minute, the count reset after a day, also when the
	// agent stops with a failing exit code, applied by MsiConfigureServices
	// between InstallServices and StartServices.
	if out := msiinfo("export", pkg.Path, "MsiServiceConfigFailureActions"); !strings.Contains(out, "\nAgentRecovery\tpatchd-agent\t5\t86400\t\t\t1[~]1[~]1\t5000[~]30000[~]60000\tAgent") {
		t.Errorf("failure actions:\n%s", out)
	}
	if out := msiinfo("export", pkg.Path, "MsiServiceConfig"); !strings.Contains(out, "\nAgentRecoveryOnErrorExit\tpatchd-agent\t5\t4\t1\tAgent") {
		t.Errorf("failure actions flag:\n%s", out)
	}
	seq := map[string]int{}
	for _, line := range strings.Split(msiinfo("export", pkg.Path, "InstallExecuteSequence"), "\n") {
		if f := strings.Split(strings.TrimRight(line, "\r"), "\t"); len(f) == 3 {
			n, _ := strconv.Atoi(f[2])
			seq[f[0]] = n
			if f[0] == "MsiConfigureServices" && f[1] != `VersionMsi >= "5.00"` {
				t.Errorf("MsiConfigureServices condition %q", f[1])
			}
		}
	}
	if !(seq["InstallServices"] > 0 && seq["InstallServices"] < seq["MsiConfigureServices"] && seq["MsiConfigureServices"] < seq["StartServices"]) {
		t.Errorf("MsiConfigureServices not between InstallServices and StartServices: %v", seq)
	}
	dir := t.TempDir()
	if out, err := exec.Command("msiextract", "-C", dir, pkg.Path).CombinedOutput(); err != nil || !strings.Contains(string(out), "patchd-agent.exe") {
		t.Fatalf("msiextract: %v %s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "patchd", "patchd-agent.exe"))
	if len(files) != 1 {
		t.Fatalf("extracted %v", files)
	}
	if b, _ := os.ReadFile(files[0]); string(b) != string(exe) {
		t.Error("the MSI's binary is not the published one")
	}
}

// TestSignedMSI: with --sign-cert/--sign-key the published Windows agent,
// the MSI and the binary in it carry an Authenticode signature
// osslsigncode verifies.
func TestSignedMSI(t *testing.T) {
	need(t, "wixl", "osslsigncode", "openssl", "msiextract")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if out, err := exec.Command("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=patchd test signing",
		"-addext", "extendedKeyUsage=codeSigning", "-keyout", key, "-out", cert).CombinedOutput(); err != nil {
		t.Fatalf("openssl: %v %s", err, out)
	}
	_, h := newEnv(t)
	h.Packages.Sign = &agentdist.Signer{CertFile: cert, KeyFile: key}
	// A real Windows program: Authenticode signs PE files only.
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n\ngo 1.21\n"), 0o644)
	build := exec.Command("go", "build", "-o", "x.exe", ".")
	build.Dir, build.Env = dir, append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v %s", err, out)
	}
	pe, _ := os.ReadFile(filepath.Join(dir, "x.exe"))
	if _, err := h.Store.PublishSigned(context.Background(), filepath.Join(dir, "x.exe"), agentdist.Platform{OS: "windows", Arch: "amd64"}, h.Packages.Sign); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.SetRelease(agentdist.Platform{OS: "windows", Arch: "amd64"}, "1.4.0", "test-signature", nil); err != nil {
		t.Fatal(err)
	}
	served, err := h.Store.Lookup(agentdist.Platform{OS: "windows", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("osslsigncode", "verify", "-CAfile", cert, "-in", served.Path).CombinedOutput(); err != nil || !strings.Contains(string(out), "Signature verification: ok") {
		t.Errorf("the published Windows agent is not signed: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x.exe")); string(b) != string(pe) {
		t.Error("publishing signed the operator's file in place")
	}
	pkg, err := h.Packages.Build(context.Background(), agentdist.PackageRequest{Type: "msi", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("osslsigncode", "verify", "-CAfile", cert, "-in", pkg.Path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Signature verification: ok") {
		t.Errorf("osslsigncode verify: %v\n%s", err, out)
	}
	other := filepath.Join(dir, "other.pem")
	exec.Command("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=other", "-keyout", filepath.Join(dir, "k2"), "-out", other).Run()
	xdir := t.TempDir()
	exec.Command("msiextract", "-C", xdir, pkg.Path).Run()
	inner, _ := filepath.Glob(filepath.Join(xdir, "patchd", "patchd-agent.exe"))
	if len(inner) != 1 {
		t.Fatalf("extracted %v", inner)
	}
	if out, err := exec.Command("osslsigncode", "verify", "-CAfile", cert, "-in", inner[0]).CombinedOutput(); err != nil || !strings.Contains(string(out), "Signature verification: ok") {
		t.Errorf("the binary in the MSI is not signed: %v\n%s", err, out)
	}
	if out, err := exec.Command("osslsigncode", "verify", "-CAfile", other, "-in", pkg.Path).CombinedOutput(); err == nil && strings.Contains(string(out), "Signature verification: ok") {
		t.Errorf("verified against another CA:\n%s", out)
	}
}
