package execute

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// fakeRunner records commands and answers from a script of results.
type fakeRunner struct {
	calls   []Cmd
	answers map[string]Result // by Path, or by the whole argv first
}

func (f *fakeRunner) Run(ctx context.Context, c Cmd) (Result, error) {
	f.calls = append(f.calls, c)
	if r, ok := f.answers[c.String()]; ok {
		return r, nil
	}
	return f.answers[c.Path], nil
}

func (f *fakeRunner) argv() []string {
	var out []string
	for _, c := range f.calls {
		if c.RawCmdLine != "" {
			out = append(out, "RAW "+c.RawCmdLine)
			continue
		}
		if i := indexOf(c.Args, "-EncodedCommand"); i >= 0 {
			out = append(out, c.Path+" -EncodedCommand … "+strings.Join(c.Env, " "))
			continue
		}
		out = append(out, strings.Join(append([]string{c.Path}, c.Args...), " "))
	}
	return out
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func command(t *testing.T, typ string, payload any) agentproto.Command {
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return agentproto.Command{ID: "cmd-1", Type: typ, Payload: raw}
}

func sp(s string) *string { return &s }

func TestDeployUpdatesArgv(t *testing.T) {
	ups := agentproto.DeployUpdatesPayload{Updates: []agentproto.DeployUpdate{
		{Key: "k1", Title: "bash 5.2.15-2+b13", PackageName: sp("bash"), LatestVersion: sp("5.2.15-2+b13")},
		{Key: "k2", Title: "openssl 3.0.15-1~deb12u1", PackageName: sp("openssl")},
		{Key: "k3", Title: "2024-11 Cumulative Update (KB5046633)", KB: sp("KB5046633"), ProductKey: sp("0b1a2c3d-4e5f")},
		{Key: "k4", Title: "Mozilla Firefox 132.0.2", WingetID: sp("Mozilla.Firefox")},
		{Key: "k5", Title: "macOS Sonoma 14.7.1", ProductKey: sp("macOS Sonoma 14.7.1-23H222")},
		{Key: "k6", Title: "Safari 18.1"},
	}}
	wuAnswer := `{"found":1,"resultCode":2,"rebootRequired":true,"updates":[{"title":"2024-11 Cumulative Update (KB5046633)","resultCode":2,"hresult":0}]}`
	macList := "Software Update found the following new or updated software:\n* Label: Safari18.1SonomaAuto-18.1\n\tTitle: Safari, Version: 18.1, Size: 157184KiB, Recommended: YES, \n"
	for _, tc := range []struct {
		goos, pm string
		answers  map[string]Result
		want     []string
		status   string
		reboot   bool
	}{
		{goos: "linux", pm: "apt", status: agentproto.StatusSuccess, want: []string{
			"apt-get update -q",
			"apt-get install -y -q --only-upgrade -o Patchd::Deployment=true -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold bash openssl",
		}},
		{goos: "linux", pm: "dnf", status: agentproto.StatusSuccess, want: []string{"dnf clean expire-cache", "dnf upgrade -y bash openssl"}},
		{goos: "windows", status: agentproto.StatusSuccess, reboot: true,
			answers: map[string]Result{`C:\ps.exe`: {Output: "WARNING: something\n" + wuAnswer}},
			want: []string{
				`C:\ps.exe -EncodedCommand … PATCHD_KBS=KB5046633 PATCHD_UPDATE_IDS=0b1a2c3d-4e5f,macOS Sonoma 14.7.1-23H222`,
				`C:\winget.exe upgrade --id Mozilla.Firefox --exact --silent --accept-package-agreements --accept-source-agreements --disable-interactivity`,
			}},
		{goos: "darwin", status: agentproto.StatusSuccess, reboot: true,
			answers: map[string]Result{"softwareupdate": {Output: macList + "Installing…\nPlease restart immediately.\n"}},
			want: []string{
				"softwareupdate --list",
				"softwareupdate --install --agree-to-license 0b1a2c3d-4e5f macOS Sonoma 14.7.1-23H222 Safari18.1SonomaAuto-18.1",
			}},
	} {
		r := &fakeRunner{answers: tc.answers}
		e := &Executor{OS: tc.goos, Runner: r, PackageManager: tc.pm, PowerShellPath: `C:\ps.exe`, WingetPath: `C:\winget.exe`}
		o := e.Execute(context.Background(), command(t, agentproto.TypeDeployUpdates, ups))
		if got := r.argv(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s/%s argv:\n got  %q\n want %q", tc.goos, tc.pm, got, tc.want)
		}
		if o.Status != tc.status || o.RebootPending != tc.reboot || !o.InventoryChanged {
			t.Errorf("%s/%s outcome %+v", tc.goos, tc.pm, o)
		}
	}
}

func TestDeployUpdatesFailures(t *testing.T) {
	r := &fakeRunner{answers: map[string]Result{"apt-get": {ExitCode: 100, Output: "E: Unable to locate package nosuch"}}}
	e := &Executor{OS: "linux", Runner: r, PackageManager: "apt"}
	o := e.DeployUpdates(context.Background(), agentproto.DeployUpdatesPayload{Updates: []agentproto.DeployUpdate{{Title: "x", PackageName: sp("nosuch")}}})
	if o.Status != agentproto.StatusFailed || *o.ExitCode != 100 || !strings.Contains(o.Result, "Unable to locate") || !strings.Contains(o.Result, "could not be refreshed") {
		t.Errorf("%+v", o)
	}
	o = e.DeployUpdates(context.Background(), agentproto.DeployUpdatesPayload{Updates: []agentproto.DeployUpdate{{Title: "KB only", KB: sp("KB1")}}})
	if o.Status != agentproto.StatusFailed || !strings.Contains(o.Result, "Nothing to install") {
		t.Errorf("%+v", o)
	}
	wr := &fakeRunner{answers: map[string]Result{"powershell.exe": {Output: `{"found":1,"resultCode":4,"rebootRequired":false,"updates":[{"title":"KB9","resultCode":4,"hresult":-2145124329}]}`}}}
	we := &Executor{OS: "windows", Runner: wr}
	o = we.DeployUpdates(context.Background(), agentproto.DeployUpdatesPayload{Updates: []agentproto.DeployUpdate{{Title: "KB9", KB: sp("KB9")}}})
	if o.Status != agentproto.StatusFailed || !strings.Contains(o.Result, "KB9: failed (0x80240017)") {
		t.Errorf("%+v", o)
	}
}

// TestInstallRefreshesPackageLists: DEPLOY_SOFTWARE by package name (and
// by a .deb or .rpm the package manager installs) refreshes the package
// lists first, as DEPLOY_UPDATES does, with the same step: a fresh
// container has no apt lists ("no installation candidate"). A failed
// refresh is reported and the installation still tried.
func TestInstallRefreshesPackageLists(t *testing.T) {
	updates := agentproto.DeployUpdatesPayload{Updates: []agentproto.DeployUpdate{{Title: "htop 3.2.2-2", PackageName: sp("htop")}}}
	for _, tc := range []struct {
		name, pm string
		cmd      agentproto.Command
		fail     string // argv that fails
		want     []string
		status   string
	}{
		{"software apt", "apt", command(t, agentproto.TypeDeploySoftware, agentproto.DeploySoftwarePayload{PackageName: "htop"}), "", []string{
			"apt-get update -q", "apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold htop"}, agentproto.StatusSuccess},
		{"software dnf", "dnf", command(t, agentproto.TypeDeploySoftware, agentproto.DeploySoftwarePayload{PackageName: "htop"}), "", []string{
			"dnf clean expire-cache", "dnf install -y htop"}, agentproto.StatusSuccess},
		{"software yum", "yum", command(t, agentproto.TypeDeploySoftware, agentproto.DeploySoftwarePayload{PackageName: "htop"}), "", []string{
			"yum clean expire-cache", "yum install -y htop"}, agentproto.StatusSuccess},
		{"updates yum", "yum", command(t, agentproto.TypeDeployUpdates, updates), "", []string{
			"yum clean expire-cache", "yum upgrade -y htop"}, agentproto.StatusSuccess},
		{"software apt, refresh fails", "apt", command(t, agentproto.TypeDeploySoftware, agentproto.DeploySoftwarePayload{PackageName: "htop"}), "apt-get update -q", []string{
			"apt-get update -q", "apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold htop"}, agentproto.StatusSuccess},
	} {
		r := &fakeRunner{answers: map[string]Result{tc.fail: {ExitCode: 100, Output: "E: Temporary failure resolving 'deb.debian.org'"}}}
		e := &Executor{OS: "linux", Runner: r, PackageManager: tc.pm}
		o := e.Execute(context.Background(), tc.cmd)
		if got := r.argv(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: argv\n got  %q\n want %q", tc.name, got, tc.want)
		}
		if o.Status != tc.status || !o.InventoryChanged {
			t.Errorf("%s: outcome %+v", tc.name, o)
		}
		if tc.fail != "" && !strings.Contains(o.Result, "could not be refreshed") {
			t.Errorf("%s: a failed refresh is not reported: %q", tc.name, o.Result)
		}
	}
}

func TestRebootArgv(t *testing.T) {
	for _, tc := range []struct {
		goos    string
		timeout int
		want    string
	}{
		{"linux", 0, "shutdown -r +1 Maintenance"},
		{"linux", 300, "shutdown -r +5 Maintenance"},
		{"linux", 301, "shutdown -r +6 Maintenance"},
		{"darwin", 120, "shutdown -r +2 Maintenance"},
		{"windows", 0, "shutdown.exe /r /t 15 /c Maintenance /d p:0:0"},
		{"windows", 600, "shutdown.exe /r /t 600 /c Maintenance /d p:0:0"},
	} {
		r := &fakeRunner{}
		e := &Executor{OS: tc.goos, Runner: r}
		o := e.Execute(context.Background(), command(t, agentproto.TypeReboot, agentproto.RebootPayload{Message: "Maintenance", TimeoutSeconds: tc.timeout}))
		if got := r.argv(); len(got) != 1 || got[0] != tc.want || o.Status != agentproto.StatusSuccess {
			t.Errorf("%s %d: %q %+v", tc.goos, tc.timeout, got, o)
		}
	}
}

func TestDeploySoftwareArgv(t *testing.T) {
	installer := []byte("MSI bytes")
	sum := sha256.Sum256(installer)
	plainHits := 0
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits++
		w.Write([]byte("#!/bin/sh\necho pwned\n"))
	}))
	defer plain.Close()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/to-plain" {
			http.Redirect(w, r, plain.URL+"/x.sh", http.StatusFound)
			return
		}
		if r.URL.Path == "/missing.msi" {
			http.NotFound(w, r)
			return
		}
		w.Write(installer)
	}))
	defer srv.Close()
	defer func() {
		if plainHits != 0 {
			t.Errorf("the plain-HTTP server was asked %d times", plainHits)
		}
	}()
	for _, tc := range []struct {
		name, goos string
		p          agentproto.DeploySoftwarePayload
		want       string // argv of the calls, joined by " | "; "" when nothing runs
		status     string
		result     string
	}{
		{"winget", "windows", agentproto.DeploySoftwarePayload{WingetID: "7zip.7zip"},
			`C:\winget.exe install --id 7zip.7zip --exact --silent --accept-package-agreements --accept-source-agreements --disable-interactivity`, agentproto.StatusSuccess, ""},
		{"winget on linux", "linux", agentproto.DeploySoftwarePayload{WingetID: "7zip.7zip"}, "", agentproto.StatusFailed, "only be installed on Windows"},
		{"apt", "linux", agentproto.DeploySoftwarePayload{PackageName: "htop"},
			"apt-get update -q | apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold htop", agentproto.StatusSuccess, ""},
		{"msi", "windows", agentproto.DeploySoftwarePayload{URL: srv.URL + "/dl/Agent%20Setup.msi", Args: `INSTALLDIR="C:\Program Files\X" /l*v log.txt`, SHA256: hex.EncodeToString(sum[:])},
			"msiexec.exe /i {DIR}Agent_Setup.msi /qn /norestart INSTALLDIR=C:\\Program Files\\X /l*v log.txt", agentproto.StatusSuccess, ""},
		{"deb", "linux", agentproto.DeploySoftwarePayload{URL: srv.URL + "/tool_1.0_amd64.deb"},
			"apt-get update -q | apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold {DIR}tool_1.0_amd64.deb", agentproto.StatusSuccess, ""},
		{"pkg", "darwin", agentproto.DeploySoftwarePayload{URL: srv.URL + "/Tool.pkg"}, "installer -pkg {DIR}Tool.pkg -target /", agentproto.StatusSuccess, ""},
		{"bad sum", "windows", agentproto.DeploySoftwarePayload{URL: srv.URL + "/a.msi", SHA256: strings.Repeat("0", 64)}, "", agentproto.StatusFailed,
			"SHA-256 mismatch: the file has " + hex.EncodeToString(sum[:]) + ", the command expects " + strings.Repeat("0", 64) + "; the installer was not run"},
		{"bad sum sh", "linux", agentproto.DeploySoftwarePayload{URL: srv.URL + "/setup.sh", SHA256: strings.Repeat("a", 64)}, "", agentproto.StatusFailed, "SHA-256 mismatch"},
		{"plain http", "linux", agentproto.DeploySoftwarePayload{URL: plain.URL + "/setup.sh"}, "", agentproto.StatusFailed, "https only"},
		{"redirect to http", "linux", agentproto.DeploySoftwarePayload{URL: srv.URL + "/to-plain"}, "", agentproto.StatusFailed, "https only"},
		{"404", "windows", agentproto.DeploySoftwarePayload{URL: srv.URL + "/missing.msi"}, "", agentproto.StatusFailed, "404"},
		{"dmg", "darwin", agentproto.DeploySoftwarePayload{URL: srv.URL + "/a.dmg"}, "", agentproto.StatusFailed, "not supported"},
		{"nothing", "linux", agentproto.DeploySoftwarePayload{}, "", agentproto.StatusFailed, "names nothing"},
	} {
		r := &fakeRunner{}
		dir := t.TempDir()
		e := &Executor{OS: tc.goos, Runner: r, PackageManager: "apt", WingetPath: `C:\winget.exe`, TempDir: dir, HTTP: srv.Client()}
		o := e.Execute(context.Background(), command(t, agentproto.TypeDeploySoftware, tc.p))
		got := r.argv()
		if normalizeDir(strings.Join(got, " | "), dir) != tc.want {
			t.Errorf("%s: argv %q, want %q", tc.name, got, tc.want)
		}
		if o.Status != tc.status || !strings.Contains(o.Result, tc.result) {
			t.Errorf("%s: %+v", tc.name, o)
		}
	}
}

// normalizeDir replaces the random download folder by {DIR}.
func normalizeDir(s, tmp string) string {
	i := strings.Index(s, tmp)
	if i < 0 {
		return s
	}
	j := strings.Index(s[i:], string(filepath.Separator)+"download-")
	k := strings.IndexByte(s[i+j+1:], filepath.Separator)
	return s[:i] + "{DIR}" + s[i+j+1+k+1:]
}

func TestUninstallArgv(t *testing.T) {
	r := &fakeRunner{}
	e := &Executor{OS: "linux", Runner: r, PackageManager: "dnf"}
	e.Execute(context.Background(), command(t, agentproto.TypeUninstallSoftware, agentproto.UninstallSoftwarePayload{Name: "htop"}))
	if got := r.argv(); !reflect.DeepEqual(got, []string{"dnf remove -y htop"}) {
		t.Errorf("dnf: %q", got)
	}

	lookup := `[{"name":"Google Chrome","keyName":"{6B6C1D3A-2C5B-3C86-9A8E-7F4D2B1A0C9E}","windowsInstaller":true,"uninstallString":"MsiExec.exe /X{6B6C1D3A-2C5B-3C86-9A8E-7F4D2B1A0C9E}","quietUninstallString":""},` +
		`{"name":"Google Chrome","keyName":"{6B6C1D3A-2C5B-3C86-9A8E-7F4D2B1A0C9E}","windowsInstaller":true,"uninstallString":"","quietUninstallString":""}]`
	wr := &fakeRunner{answers: map[string]Result{"powershell.exe": {Output: lookup}, "msiexec.exe": {ExitCode: 3010}}}
	we := &Executor{OS: "windows", Runner: wr, WingetPath: "winget.exe"}
	o := we.Execute(context.Background(), command(t, agentproto.TypeUninstallSoftware, agentproto.UninstallSoftwarePayload{Name: "Google Chrome"}))
	want := []string{"powershell.exe -EncodedCommand … PATCHD_NAME=Google Chrome", "msiexec.exe /x {6B6C1D3A-2C5B-3C86-9A8E-7F4D2B1A0C9E} /qn /norestart"}
	if got := wr.argv(); !reflect.DeepEqual(got, want) || o.Status != agentproto.StatusSuccess || !o.RebootPending {
		t.Errorf("msi: %q %+v", got, o)
	}

	for _, tc := range []struct {
		entry uninstallEntry
		want  string
	}{
		{uninstallEntry{Name: "VC", KeyName: "{a98dc6ff-d360-4878-9f0a-915eba86eaf3}", QuietUninstallString: `"C:\Cache\VC_redist.x86.exe" /uninstall /quiet`},
			`RAW cmd.exe /d /s /c ""C:\Cache\VC_redist.x86.exe" /uninstall /quiet"`},
		{uninstallEntry{Name: "7-Zip 24.08 (x64)", KeyName: "7-Zip", UninstallString: `"C:\Program Files\7-Zip\Uninstall.exe"`},
			"winget.exe uninstall --name 7-Zip 24.08 (x64) --exact --silent --accept-source-agreements --disable-interactivity"},
	} {
		c, _ := WindowsUninstallCmd(tc.entry, "winget.exe")
		f := &fakeRunner{}
		f.Run(context.Background(), c)
		if got := f.argv()[0]; got != tc.want {
			t.Errorf("got %q\nwant %q", got, tc.want)
		}
	}

	none := &fakeRunner{answers: map[string]Result{"powershell.exe": {Output: "[]"}}}
	o = (&Executor{OS: "windows", Runner: none}).UninstallSoftware(context.Background(), agentproto.UninstallSoftwarePayload{Name: "Nope"})
	if o.Status != agentproto.StatusFailed || !strings.Contains(o.Result, "not installed") {
		t.Errorf("missing: %+v", o)
	}

	apps := t.TempDir()
	if err := os.Mkdir(filepath.Join(apps, "Slack.app"), 0o755); err != nil {
		t.Fatal(err)
	}
	mr := &fakeRunner{}
	o = (&Executor{OS: "darwin", Runner: mr, AppDirs: []string{apps}}).UninstallSoftware(context.Background(), agentproto.UninstallSoftwarePayload{Name: "Slack"})
	if got := mr.argv(); len(got) != 1 || got[0] != "/bin/rm -rf -- "+filepath.Join(apps, "Slack.app") || o.Status != agentproto.StatusSuccess {
		t.Errorf("mac: %q %+v", got, o)
	}
	o = (&Executor{OS: "darwin", Runner: mr, AppDirs: []string{apps}}).UninstallSoftware(context.Background(), agentproto.UninstallSoftwarePayload{Name: "../etc"})
	if o.Status != agentproto.StatusFailed {
		t.Errorf("path escape: %+v", o)
	}
}

func TestExecuteRefusals(t *testing.T) {
	e := &Executor{OS: "linux", Runner: &fakeRunner{}, Now: func() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) }}
	end := time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)
	c := command(t, agentproto.TypeReboot, agentproto.RebootPayload{})
	c.NotAfter = &end
	if o := e.Execute(context.Background(), c); o.Status != agentproto.StatusFailed || !strings.Contains(o.Result, "maintenance window ended") {
		t.Errorf("late: %+v", o)
	}
	if o := e.Execute(context.Background(), agentproto.Command{Type: "FORMAT_DISK", Payload: json.RawMessage(`{}`)}); o.Status != agentproto.StatusFailed {
		t.Errorf("unknown: %+v", o)
	}
	if o := e.Execute(context.Background(), agentproto.Command{Type: agentproto.TypeRunScript, Payload: json.RawMessage(`{"script":5}`)}); o.Status != agentproto.StatusFailed || !strings.Contains(o.Result, "not valid") {
		t.Errorf("bad payload: %+v", o)
	}
	if o := e.Execute(context.Background(), agentproto.Command{Type: agentproto.TypeRunScript}); o.Status != agentproto.StatusFailed {
		t.Errorf("no payload: %+v", o)
	}
}

func TestSplitArgs(t *testing.T) {
	for in, want := range map[string][]string{
		``:                                nil,
		`/S`:                              {"/S"},
		`  /quiet   /norestart `:          {"/quiet", "/norestart"},
		`INSTALLDIR="C:\Program Files\X"`: {`INSTALLDIR=C:\Program Files\X`},
		`'a b' "c \"d\"" e\ f`:            {"a b", `c "d"`, "e f"},
	} {
		got, err := SplitArgs(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	if _, err := SplitArgs(`"open`); err == nil {
		t.Error("unterminated quote accepted")
	}
}
