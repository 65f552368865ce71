package console_test

import (
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
)

// TestEnrollmentInstallers: a new token is shown with the one-line
// installers for this server, the download links of the published agents
// and the packages, and a warning when the address is loopback.
func TestEnrollmentInstallers(t *testing.T) {
	dir := t.TempDir()
	e := apitest.New(t, func(c *config.Config) { c.AgentDir = dir })
	f := filepath.Join(t.TempDir(), "a")
	os.WriteFile(f, append([]byte{0x7f, 'E', 'L', 'F'}, make([]byte, 64)...), 0o755)
	if _, err := e.Server.AgentDist().Store.Publish(f, agentdist.Platform{OS: "linux", Arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	b := adminBrowser(t, e)
	code, page := b.get("/console/enrollment")
	if code != 200 || !strings.Contains(page, `href="`+e.URL+`/agent/v1/download/linux/amd64"`) || !strings.Contains(page, "/agent/v1/package/deb/amd64") ||
		!strings.Contains(page, `id="loopback-warning"`) || strings.Contains(page, "/agent/v1/download/windows/amd64\"") {
		t.Fatalf("enrollment page: %d\n%s", code, page)
	}
	code, _, page = b.post("/console/enrollment", url.Values{"expires": {"7d"}})
	if code != http.StatusOK {
		t.Fatalf("create token: %d", code)
	}
	page = html.UnescapeString(page)
	i := strings.Index(page, `<code id="enroll-token">`)
	if i < 0 {
		t.Fatalf("no token shown:\n%s", page)
	}
	tok := page[i+len(`<code id="enroll-token">`):]
	tok = tok[:strings.Index(tok, "<")]
	if !strings.Contains(page, agentdist.InstallersFor(e.URL, tok, "").Linux) ||
		strings.Contains(page, "patchd-agent run --state") {
		t.Errorf("installers missing:\n%s", page)
	}
	// Only the published platforms' lines: no Windows agent, no Windows
	// line, and a note saying so.
	if strings.Contains(page, `id="install-windows"`) || strings.Contains(page, `id="install-msi"`) || !strings.Contains(page, "<dt>Linux</dt>") ||
		!strings.Contains(page, "No macOS or Windows agent is published on this server, so there is no install line for them") {
		t.Errorf("a server with only a Linux agent offers other lines, or does not say why not:\n%s", between(page, `id="new-token"`, "</div>"))
	}
	w := filepath.Join(t.TempDir(), "w")
	os.WriteFile(w, append([]byte{'M', 'Z'}, make([]byte, 64)...), 0o755)
	if _, err := e.Server.AgentDist().Store.Publish(w, agentdist.Platform{OS: "windows", Arch: "amd64"}); err != nil {
		t.Fatal(err)
	}
	_, _, page = b.post("/console/enrollment", url.Values{"expires": {"7d"}})
	page = html.UnescapeString(page)
	i = strings.Index(page, `<code id="enroll-token">`)
	tok = page[i+len(`<code id="enroll-token">`):]
	tok = tok[:strings.Index(tok, "<")]
	if !strings.Contains(page, "Invoke-RestMethod '"+e.URL+"/install.ps1'))) -Token '"+tok+"'") ||
		!strings.Contains(page, "No macOS agent is published on this server, so there is no install line for it") {
		t.Errorf("with a Windows agent published, its line is not offered:\n%s", between(page, `id="new-token"`, "</div>"))
	}
	if agentdist.CanBuildMSI() != strings.Contains(page, `id="install-msi"`) || agentdist.CanBuildMSI() == strings.Contains(page, `id="install-no-msi"`) {
		t.Errorf("the MSI line is offered %v, wixl and msibuild here %v", strings.Contains(page, `id="install-msi"`), agentdist.CanBuildMSI())
	}
}
