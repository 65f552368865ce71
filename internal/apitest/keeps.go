package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/server"
	"github.com/patchd/patchd/internal/store"

	"net/http/httptest"
)

// KeptPaths are the API answers an upgrade or a restore must keep: the
// organization's computers, their updates and software, its scripts,
// enrollment tokens, credentials, roles and groups.
var KeptPaths = []string{
	"/api/v1/endpoints", "/api/v1/updates", "/api/v1/software", "/api/v1/scripts",
	"/api/v1/enrollment-tokens", "/api/v1/credentials", "/api/v1/roles", "/api/v1/groups",
}

// Answers GETs each path with c and answers the decoded JSON by path.
func Answers(t testing.TB, c *client.Client, paths ...string) map[string]any {
	t.Helper()
	out := make(map[string]any, len(paths))
	for _, p := range paths {
		var v any
		if err := c.Do(context.Background(), "GET", p, url.Values{}, nil, &v); err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		out[p] = v
	}
	return out
}

// volatile are the fields that say how things are now rather than what
// the database holds: a computer is online while it holds a connection to
// the process that answers.
var volatile = map[string]bool{"online": true}

// Keeps fails t unless every value in before is in after at the same place
// (after may hold more: fields a newer server adds), volatile fields aside.
// It answers how many values it compared, so a test can tell it compared
// something.
func Keeps(t testing.TB, before, after map[string]any) int {
	t.Helper()
	n := 0
	var walk func(path string, b, a any)
	walk = func(path string, b, a any) {
		switch bv := b.(type) {
		case map[string]any:
			av, ok := a.(map[string]any)
			if !ok {
				t.Errorf("%s: was an object, now %v", path, a)
				return
			}
			keys := make([]string, 0, len(bv))
			for k := range bv {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if volatile[k] {
					continue
				}
				v, ok := av[k]
				if !ok {
					t.Errorf("%s.%s: gone (was %v)", path, k, bv[k])
					continue
				}
				walk(path+"."+k, bv[k], v)
			}
		case []any:
			av, ok := a.([]any)
			if !ok || len(av) != len(bv) {
				t.Errorf("%s: was %d items, now %v", path, len(bv), a)
				return
			}
			for i := range bv {
				walk(fmt.Sprintf("%s[%d]", path, i), bv[i], av[i])
			}
		default:
			n++
			if !reflect.DeepEqual(b, a) {
				bj, _ := json.Marshal(b)
				aj, _ := json.Marshal(a)
				t.Errorf("%s: was %s, now %s", path, bj, aj)
			}
		}
	}
	for p, b := range before {
		walk(p, b, after[p])
	}
	return n
}

// Serve serves the API on s (no workers) until stop, which t's end also
// calls, and answers its URL.
func Serve(t testing.TB, s *store.Store) (base string, stop func()) {
	t.Helper()
	quietLogs()
	srv := server.New(config.Config{CheckinInterval: 60 * time.Second}, s)
	ts := httptest.NewServer(srv.Handler())
	done := false
	stop = func() {
		if !done {
			done = true
			ts.Close()
			srv.Close()
		}
	}
	t.Cleanup(stop)
	return ts.URL, stop
}
