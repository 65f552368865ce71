package console_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// rowOf is the table row of body holding want.
func rowOf(t *testing.T, body, want string) string {
	t.Helper()
	for _, row := range regexp.MustCompile(`(?s)<tr[ >].*?</tr>`).FindAllString(body, -1) {
		if strings.Contains(row, want) {
			return row
		}
	}
	t.Fatalf("no row holds %q", want)
	return ""
}

// TestKBOncePerRow: a Windows update's KB number shows once in its row of
// the updates list and of the endpoint page, even when its title and its
// key carry it too.
func TestKBOncePerRow(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	ag := e.Enroll("m1", "win-a", "windows")
	ag.MustInventory(apitest.Sample("win-a", "windows"))
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	for _, path := range []string{"/console/updates", "/console/endpoints/" + ag.ID} {
		code, body := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", path, code)
		}
		row := rowOf(t, body, "Cumulative Update")
		text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(row, " ")
		if n := strings.Count(text, "KB5048685"); n != 1 {
			t.Errorf("%s: the KB shows %d times in its row: %s", path, n, strings.Join(strings.Fields(text), " "))
		}
	}
}
