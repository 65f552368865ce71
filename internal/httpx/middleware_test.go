package httpx

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
)

// TestRequestIDs: every request gets an id of its own (16 hexadecimal
// digits) in X-Request-Id and in its context; a sane id the client sent is
// kept.
func TestRequestIDs(t *testing.T) {
	var inCtx string
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { inCtx = RequestID(r.Context()) }), nil, "")
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for range 1000 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/x", nil))
		id := w.Header().Get("X-Request-Id")
		if !hex16.MatchString(id) || seen[id] || inCtx != id {
			t.Fatalf("request id %q (context %q), seen before: %v", id, inCtx, seen[id])
		}
		seen[id] = true
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	r.Header.Set("X-Request-Id", "client-7.a_b")
	h.ServeHTTP(w, r)
	if got := w.Header().Get("X-Request-Id"); got != "client-7.a_b" || inCtx != got {
		t.Errorf("the client's id became %q (context %q)", got, inCtx)
	}
}

// TestCaller: within Middleware a handler records the caller once and
// every later reader of the request's context sees it; each request starts
// without one; outside Middleware nothing can be recorded.
func TestCaller(t *testing.T) {
	type who struct{ name string }
	var seen []any
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, Caller(r.Context()))
		if !SetCaller(r.Context(), &who{r.URL.Query().Get("u")}) {
			t.Error("SetCaller refused within Middleware")
		}
		seen = append(seen, Caller(r.Context()))
	}), nil, "")
	for _, u := range []string{"ann", "bob"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x?u="+u, nil))
	}
	if len(seen) != 4 || seen[0] != nil || seen[1].(*who).name != "ann" || seen[2] != nil || seen[3].(*who).name != "bob" {
		t.Fatalf("callers seen: %v", seen)
	}
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	if SetCaller(r.Context(), &who{"eve"}) || Caller(r.Context()) != nil || RequestID(r.Context()) != "" {
		t.Fatal("a caller recorded outside Middleware")
	}
}
