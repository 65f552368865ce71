package agentdist_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
)

// fakeELF is enough of a Linux program for the store and the packages.
var fakeELF = append([]byte{0x7f, 'E', 'L', 'F'}, []byte(strings.Repeat("patchd agent ", 1000))...)

func newEnv(t *testing.T) (*apitest.Env, *agentdist.Host) {
	dir := t.TempDir()
	e := apitest.New(t, func(c *config.Config) { c.AgentDir = dir })
	// No --base-url: the installers and packages take the address the
	// request came to (e.URL).
	return e, e.Server.AgentDist()
}

func get(t *testing.T, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestDownloads(t *testing.T) {
	e, h := newEnv(t)
	f := filepath.Join(t.TempDir(), "patchd-agent")
	os.WriteFile(f, fakeELF, 0o755)
	if _, err := h.Store.Publish(f, agentdist.Platform{OS: "windows", Arch: "amd64"}); err == nil || !strings.Contains(err.Error(), "not a windows program") {
		t.Errorf("a Linux program published as the Windows agent: %v", err)
	}
	// Nothing published: 404 in the Error shape.
	resp, body := get(t, e.URL+"/agent/v1/download/linux/amd64")
	var apiErr struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &apiErr); resp.StatusCode != 404 || apiErr.Error != "not_found" || !strings.Contains(apiErr.Description, "patchd admin agent publish") {
		t.Errorf("unpublished: %d %s", resp.StatusCode, body)
	}
	b, err := h.Store.Publish(f, agentdist.Platform{OS: "linux", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(fakeELF)
	want := hex.EncodeToString(sum[:])
	if b.SHA256 != want || b.Size != int64(len(fakeELF)) {
		t.Errorf("published %+v", b)
	}
	resp, body = get(t, e.URL+"/agent/v1/download/linux/amd64")
	if resp.StatusCode != 200 || string(body) != string(fakeELF) || resp.Header.Get("ETag") != `"`+want+`"` ||
		resp.ContentLength != int64(len(fakeELF)) || resp.Header.Get("X-Checksum-Sha256") != want {
		t.Errorf("download: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := get(t, e.URL+"/agent/v1/download/linux/amd64", "If-None-Match", `"`+want+`"`); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	if resp, body := get(t, e.URL+"/agent/v1/download/linux/amd64.sha256"); resp.StatusCode != 200 || string(body) != want+"  patchd-agent\n" {
		t.Errorf("sha256: %d %q", resp.StatusCode, body)
	}
	for _, p := range []string{"/agent/v1/download/linux/arm64", "/agent/v1/download/plan9/amd64", "/agent/v1/download/windows/amd64.sha256", "/agent/v1/package/zip/amd64", "/agent/v1/package/msi/arm64"} {
		resp, body := get(t, e.URL+p)
		if json.Unmarshal(body, &apiErr); resp.StatusCode != 404 || apiErr.Error != "not_found" {
			t.Errorf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
	resp, body = get(t, e.URL+"/agent/v1/download")
	var idx struct {
		Items []struct {
			OS, Arch, SHA256, URL string
		}
		Total int
	}
	if json.Unmarshal(body, &idx); resp.StatusCode != 200 || idx.Total != 1 || idx.Items[0].SHA256 != want || idx.Items[0].URL != e.URL+"/agent/v1/download/linux/amd64" {
		t.Errorf("index: %s", body)
	}
	resp, body = get(t, e.URL+"/install.sh")
	if resp.StatusCode != 200 || !strings.Contains(string(body), "SERVER='"+e.URL+"'\n") || !strings.HasPrefix(string(body), "#!/bin/sh\n") {
		t.Errorf("install.sh: %d %.200s", resp.StatusCode, body)
	}
	if resp, body := get(t, e.URL+"/install.ps1"); resp.StatusCode != 200 || !strings.Contains(string(body), "[string]$Server = '"+e.URL+"'") {
		t.Errorf("install.ps1: %d %.200s", resp.StatusCode, body)
	}
	// A package needs the agent's release version.
	resp, body = get(t, e.URL+"/agent/v1/package/deb/amd64")
	if json.Unmarshal(body, &apiErr); resp.StatusCode != 404 || apiErr.Error != "not_found" || !strings.Contains(apiErr.Description, "--version") {
		t.Errorf("package of an agent without a release: %d %s", resp.StatusCode, body)
	}
	if _, err := h.Store.SetRelease(agentdist.Platform{OS: "linux", Arch: "amd64"}, "1.4.0", "test-signature", nil); err != nil {
		t.Fatal(err)
	}
	resp, body = get(t, e.URL+"/agent/v1/package/deb/amd64")
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "!<arch>\n") || !strings.Contains(resp.Header.Get("Content-Disposition"), "patchd-agent_") {
		t.Errorf("deb download: %d %v", resp.StatusCode, resp.Header)
	}
	// Built once, then served from the cache.
	first, _ := filepath.Glob(filepath.Join(h.Store.Dir, ".packages", "*", "*.deb"))
	get(t, e.URL+"/agent/v1/package/deb/amd64")
	if again, _ := filepath.Glob(filepath.Join(h.Store.Dir, ".packages", "*", "*.deb")); len(first) != 1 || len(again) != 1 {
		t.Errorf("package cache %v %v", first, again)
	}
	// A new agent: a new package, and the old one leaves the cache.
	os.WriteFile(f, append(fakeELF, "v2"...), 0o755)
	publishRelease(t, h, agentdist.Platform{OS: "linux", Arch: "amd64"}, f, "1.5.0")
	_, body2 := get(t, e.URL+"/agent/v1/package/deb/amd64")
	if now, _ := filepath.Glob(filepath.Join(h.Store.Dir, ".packages", "*", "*.deb")); len(now) != 1 || now[0] == first[0] || string(body2) == string(body) {
		t.Errorf("package cache after a new agent: %v (was %v)", now, first)
	}
}

func TestInstallersFor(t *testing.T) {
	in := agentdist.InstallersFor("https://patchd.example.com/", "pdet_abc", "")
	if !strings.HasPrefix(in.Linux, "sh -c 'pd_fetch() {") || !strings.HasSuffix(in.Linux, "' sh 'https://patchd.example.com' '' pdet_abc") || in.Pinned || in.Loopback != "" ||
		!strings.Contains(in.Windows, "Invoke-RestMethod 'https://patchd.example.com/install.ps1'))) -Token 'pdet_abc'") ||
		in.Downloads["windows/arm64"] != "https://patchd.example.com/agent/v1/download/windows/arm64" || in.Packages["msi/amd64"] == "" {
		t.Errorf("plain: %+v", in)
	}
	pin := strings.Repeat("ab", 32)
	in = agentdist.InstallersFor("http://127.0.0.1:8080", "pdet_abc", pin)
	if in.Token != "pdet_abc."+pin || !in.Pinned || !strings.Contains(in.Linux, "--cacert") || !strings.Contains(in.Windows, pin) || in.Loopback == "" {
		t.Errorf("pinned: %+v", in)
	}
	for _, bad := range []string{"ftp://x", "https://x/'; rm -rf /", "https://x y"} {
		if agentdist.CheckServerURL(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestPlainOneLiner runs the printed line without a pin (a server with a
// publicly trusted certificate, or plain http): as root it runs install.sh
// without sudo, as another user through sudo; when the download fails
// (the server down, an error answer, a certificate curl does not trust) it
// runs nothing, exits non-zero and says why in one line; its temporary
// folder goes in every case.
func TestPlainOneLiner(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/install.sh" {
			io.WriteString(w, "echo INSTALLER-RAN \"$@\"; exit 7\n")
			return
		}
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer ts.Close()
	tlsOnly := httptest.NewTLSServer(http.NotFoundHandler()) // a certificate curl does not trust
	defer tlsOnly.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	// Folders another user reaches (t.TempDir's parent is private): the
	// sudo stand-in, what it records, the line's TMPDIR.
	shared, err := os.MkdirTemp("", "patchd-plain-line-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	os.Chmod(shared, 0o755)
	bin, tmp := filepath.Join(shared, "bin"), filepath.Join(shared, "tmp")
	os.Mkdir(bin, 0o755)
	os.Mkdir(tmp, 0o1777)
	os.Chmod(tmp, 0o1777)
	os.Mkdir(filepath.Join(shared, "log"), 0o777)
	os.Chmod(filepath.Join(shared, "log"), 0o777)
	sudoLog := filepath.Join(shared, "log", "sudo-used")
	os.WriteFile(filepath.Join(bin, "sudo"), []byte("#!/bin/sh\necho \"$@\" >"+sudoLog+"\nexec \"$@\"\n"), 0o755)
	run := func(server string, asNobody bool) (string, int) {
		t.Helper()
		os.Remove(sudoLog)
		cmd := exec.Command("/bin/sh", "-c", agentdist.InstallersFor(server, "pdet_x", "").Linux)
		cmd.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "HOME=/", "LANG=C", "TMPDIR=" + tmp}
		if asNobody {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		out, _ := cmd.CombinedOutput()
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			t.Errorf("the line left %d entries in TMPDIR (%s)", len(ents), ents[0].Name())
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	sudoUsed := func() string { b, _ := os.ReadFile(sudoLog); return string(b) }
	out, code := run(ts.URL, false)
	if code != 7 || out != "INSTALLER-RAN --token pdet_x\n" || sudoUsed() != "" {
		t.Errorf("as root: exit %d, sudo %q: %s", code, sudoUsed(), out)
	}
	if os.Geteuid() == 0 {
		out, code = run(ts.URL, true)
		if code != 7 || out != "INSTALLER-RAN --token pdet_x\n" || !strings.HasPrefix(sudoUsed(), "sh /") {
			t.Errorf("as nobody: exit %d, sudo %q: %s", code, sudoUsed(), out)
		}
	}
	for name, server := range map[string]string{"server down": down.URL, "untrusted certificate": tlsOnly.URL, "error answer": ts.URL + "/broken"} {
		out, code := run(server, false)
		if code == 0 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "patchd install: cannot fetch "+server+"/install.sh (curl or wget exit status ") || strings.Contains(out, "INSTALLER-RAN") {
			t.Errorf("%s: exit %d: %s", name, code, out)
		}
	}
}

// TestPinnedOneLiner runs the printed line for a self-made CA against a
// TLS server, with curl and, curl hidden, with wget: with the right pin it
// fetches install.sh over the verified channel and runs it; with another
// pin, or with ca.pem forged, it runs nothing and says why in one line.
func TestPinnedOneLiner(t *testing.T) {
	var ts *httptest.Server
	caPEM := func() []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}) }
	var forged atomic.Pointer[[]byte] // the ca.pem answer instead of the real one
	ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/agent/v1/ca.pem":
			if f := forged.Load(); f != nil {
				w.Write(*f)
				return
			}
			w.Write(caPEM())
		case "/install.sh":
			io.WriteString(w, "echo INSTALLER-RAN \"$@\"\n")
		default:
			http.NotFound(w, r)
		}
	}))
	ts.StartTLS()
	defer ts.Close()
	sum := sha256.Sum256(ts.Certificate().Raw)
	pin := hex.EncodeToString(sum[:])
	evil, _, _ := attackerCA(t)
	// PATH folders: the machine's tools with a sudo that runs the command
	// as is; and the same without curl.
	withCurl, withoutCurl := t.TempDir(), t.TempDir()
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if e.Name() != "curl" && e.Name() != "sudo" {
				os.Symlink(filepath.Join(d, e.Name()), filepath.Join(withoutCurl, e.Name()))
			}
		}
	}
	for _, d := range []string{withCurl, withoutCurl} {
		os.WriteFile(filepath.Join(d, "sudo"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755)
	}
	for _, fetcher := range []string{"curl", "wget"} {
		path := withCurl + ":/usr/local/bin:/usr/bin:/bin"
		if fetcher == "wget" {
			path = withoutCurl
		}
		if _, err := exec.LookPath(fetcher); err != nil {
			t.Logf("%s is not installed: the line is not run with it", fetcher)
			continue
		}
		run := func(pin string) (string, error) {
			cmd := exec.Command("/bin/sh", "-c", agentdist.InstallersFor(ts.URL, "pdet_x", pin).Linux)
			cmd.Env = []string{"PATH=" + path, "HOME=" + t.TempDir(), "LANG=C"}
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		forged.Store(nil)
		out, err := run(pin)
		if err != nil || out != "INSTALLER-RAN --token pdet_x."+pin+"\n" {
			t.Errorf("%s, right pin: %v %s", fetcher, err, out)
		}
		out, err = run(strings.Repeat("0", 64))
		if err == nil || !strings.HasPrefix(out, "patchd install: the CA the server sent does not match the pin in the token (its SHA-256 is "+pin+")") || strings.Count(out, "\n") != 1 {
			t.Errorf("%s, wrong pin: %v %s", fetcher, err, out)
		}
		f := forgedCAFiles(caPEM(), evil)["forged"]
		forged.Store(&f)
		out, err = run(pin)
		if err == nil || out != "patchd install: the ca.pem the server sent is not exactly one certificate: someone may be intercepting; nothing was run or installed\n" {
			t.Errorf("%s, forged ca.pem: %v %s", fetcher, err, out)
		}
	}
	// Without the line's CA check curl refuses the self-made certificate.
	if out, err := exec.Command("sh", "-c", "curl -fsSL "+ts.URL+"/install.sh | sh").CombinedOutput(); err == nil && strings.Contains(string(out), "INSTALLER-RAN") {
		t.Errorf("plain curl trusted the self-made CA: %s", out)
	}
}
