package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestSoftwareByTitle: the console's Software page lists the applications
// by title with the endpoints of each and of its versions, filters by name
// and publisher, orders by endpoints or name, refuses another order with a
// 400, and shows nothing of another organization's software.
func TestSoftwareByTitle(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	v1, v2, pub := "1.0", "2.0", "Acme Software"
	for i, h := range []string{"pc-1", "pc-2", "pc-3"} {
		doc := apitest.Sample(h, "windows")
		ver := &v1
		if i == 2 {
			ver = &v2
		}
		doc.Software = append(doc.Software, agentproto.Software{Name: "Acme Widget", Version: ver, Publisher: &pub})
		e.Enroll("uid-"+h, h, "windows").MustInventory(doc)
	}
	other := e.NewOrg("Globex")
	tok, err := admin.CreateEnrollToken(ctx, e.Store, "test", other.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	acmeToken := e.EnrollToken
	e.EnrollToken = tok.Token
	doc := apitest.Sample("globex-pc", "windows")
	doc.Software = append(doc.Software, agentproto.Software{Name: "Globex Secret Tool", Version: &v1})
	e.Enroll("globex-1", "globex-pc", "windows").MustInventory(doc)
	e.EnrollToken = acmeToken

	b := newBrowser(t, e.URL)
	b.signIn("reader@example.com")
	code, body := b.get("/console/software")
	if code != http.StatusOK {
		t.Fatalf("software page: %d", code)
	}
	// Most endpoints first: the sample's three applications and the
	// widget, on three endpoints each; the widget's versions counted.
	for _, want := range []string{`href="/console/software" aria-current="page"`, "4 application(s)", "Acme Widget", `&amp;version=1.0">1.0</a> (2)`,
		`&amp;version=2.0">2.0</a> (1)`, `href="/console/software/title?name=Acme%20Widget"`, "Acme Software", "Google Chrome"} {
		if !strings.Contains(body, want) {
			t.Errorf("software page lacks %q", want)
		}
	}
	if strings.Contains(body, "Globex Secret Tool") {
		t.Error("the software page shows another organization's title")
	}
	_, body = b.get("/console/software?q=widget&sort=name")
	if !strings.Contains(body, "1 application(s)") || !strings.Contains(body, "Acme Widget") || strings.Contains(body, "Google Chrome") {
		t.Errorf("q=widget:\n%s", body)
	}
	_, body = b.get("/console/software?publisher=acme+soft")
	if !strings.Contains(body, "1 application(s)") || !strings.Contains(body, "Acme Widget") {
		t.Errorf("publisher filter:\n%s", body)
	}
	_, body = b.get("/console/software?q=globex")
	if !strings.Contains(body, "0 application(s)") {
		t.Errorf("q=globex shows something:\n%s", body)
	}
	if code, _ := b.get("/console/software?sort=installs"); code != http.StatusBadRequest {
		t.Errorf("sort=installs: %d", code)
	}
}
