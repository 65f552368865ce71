package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestEnrollmentPinAndChannel: with the server's own CA, the Enrollment
// page's new token carries the CA pin and says so; an endpoint whose agent
// was enrolled with --insecure-http shows its plain-HTTP channel.
func TestEnrollmentPinAndChannel(t *testing.T) {
	e := apitest.New(t, apitest.WithOwnCA())
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	b := newBrowser(t, e.URL)
	b.c.Transport = e.HTTPClient.Transport // trusts the server's CA
	b.signIn("alice@example.com")
	b.get("/console/enrollment")
	code, _, body := b.post("/console/enrollment", url.Values{"expires": {"7d"}})
	pin := e.TLS.Pin
	if code != http.StatusOK || !strings.Contains(body, `id="ca-sha256">`+pin+`<`) || !strings.Contains(body, "."+pin+"</code>") {
		t.Fatalf("enrollment page: %d\n%.3000s", code, body)
	}

	enroll := func(uid string, insecure bool) string {
		req, _ := json.Marshal(agentproto.EnrollRequest{EnrollToken: e.EnrollToken, MachineUID: uid, Hostname: uid, Platform: "linux", InsecureChannel: insecure})
		resp, err := e.HTTPClient.Post(e.URL+agentproto.PathEnroll, "application/json", strings.NewReader(string(req)))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("enroll: %v %v", resp, err)
		}
		defer resp.Body.Close()
		var out agentproto.EnrollResponse
		json.NewDecoder(resp.Body).Decode(&out)
		return out.EndpointID
	}
	plain, secure := enroll("plain-01", true), enroll("secure-01", false)
	if _, body := b.get("/console/endpoints/" + plain); !strings.Contains(body, `<dd id="channel"><span class="badge disconnected">plain HTTP</span>`) {
		t.Fatalf("insecure endpoint page:\n%.4000s", body)
	}
	if _, body := b.get("/console/endpoints/" + secure); strings.Contains(body, "plain HTTP</span>") || !strings.Contains(body, `id="channel">HTTPS`) {
		t.Fatalf("secure endpoint page:\n%.4000s", body)
	}
}
