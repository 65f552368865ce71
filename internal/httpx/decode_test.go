package httpx

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestUnmarshalBodyRefusesNUL(t *testing.T) {
	type doc struct {
		Name string            `json:"name"`
		Tags []string          `json:"tags"`
		Any  map[string]any    `json:"any"`
		Map  map[string]string `json:"map"`
	}
	for _, tc := range []struct {
		body   string
		status int // 0: accepted
	}{
		{`{"name":"a\u0000b"}`, 400},
		{`{"name":"\u0000"}`, 400},
		{`{"tags":["x","\u0000"]}`, 400},
		{`{"any":{"k":[{"deep":"\u0000"}]}}`, 400},
		{`{"map":{"\u0000":"key"}}`, 400},
		{`{"unknownField":"\u0000"}`, 400},
		{`{"name":"\\\u0000"}`, 400},      // an escaped backslash, then a NUL
		{`{"name":"\\u0000"}`, 0},         // an escaped backslash, then the text u0000
		{`{"name":"\\\\u0000"}`, 0},       // two escaped backslashes, then text
		{`{"name":"a\u0001b \u00e9"}`, 0}, // other escapes are text
		{"{\"name\":\"a\x00b\"}", 400},    // a raw NUL is not JSON at all
		{`{"name":"ok"}`, 0},
	} {
		var v doc
		err := UnmarshalBody([]byte(tc.body), &v)
		if tc.status == 0 {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.body, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Status != tc.status || e.Code != "invalid_json" {
			t.Errorf("%s: got %v, want %d invalid_json", tc.body, err, tc.status)
		}
	}
}

// TestUnmarshalBodyOneValue: a body is one JSON value, whatever follows it
// but blanks is refused (a closing bracket too, which a json.Decoder's
// More would have let through), and the messages say what is wrong.
func TestUnmarshalBodyOneValue(t *testing.T) {
	type doc struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	for _, tc := range []struct {
		body, message string // message "": accepted
	}{
		{"{\"name\":\"a\"} \n\t", ""},
		{`{"name":"a"} {"name":"b"}`, "malformed JSON: data after the top-level value"},
		{`{"name":"a"}]`, "malformed JSON: data after the top-level value"},
		{`{"name":"a"}x`, "malformed JSON: data after the top-level value"},
		{`{"name":"a"`, "malformed JSON: unexpected end of JSON input"},
		{`[1]`, "the body must be JSON: an object"},
		{`   `, "the request body is empty; a JSON object is expected"},
	} {
		var v doc
		err := UnmarshalBody([]byte(tc.body), &v)
		if tc.message == "" {
			if err != nil {
				t.Errorf("%q: refused: %v", tc.body, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Description == nil || *e.Description != tc.message {
			t.Errorf("%q: got %v, want 400 %q", tc.body, err, tc.message)
		}
	}
}

func TestCheckURLRefusesNUL(t *testing.T) {
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}), nil, "")
	for _, tc := range []struct {
		target string
		status int
	}{
		{"/api/v1/endpoints/abc%00def", 400},
		{"/api/v1/endpoints?q=a%00", 400},
		{"/api/v1/endpoints?a%00=1", 400},
		{"/api/v1/runs?status=RUNNING&automationId=%00", 400},
		{"/api/v1/endpoints/abc?q=a%2500", 204}, // the text "%00", not a NUL
		{"/api/v1/endpoints?q=web", 204},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tc.target, nil))
		if rec.Code != tc.status {
			t.Errorf("%s: %d, want %d", tc.target, rec.Code, tc.status)
			continue
		}
		if tc.status == 400 {
			var e struct {
				Error       string  `json:"error"`
				Description *string `json:"error_description"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error != "invalid_request" || e.Description == nil {
				t.Errorf("%s: body %s is not the Error shape with invalid_request", tc.target, rec.Body)
			}
		}
	}
}

// FuzzUnmarshalBody holds the decoder to its promise: whatever the body,
// it either refuses it with a 400/413/422 Error or decodes text free of NUL
// and valid UTF-8, never panics.
func FuzzUnmarshalBody(f *testing.F) {
	for _, s := range []string{`{"name":"x"}`, `{"name":"\u0000"}`, `{"name":"\\u0000"}`, `{"tags":["\\\u0000"]}`,
		`{"any":{"\u0000":1}}`, `[]`, `{"name":"\ud800"}`, "{\"name\":\"\xff\"}", `{"name":"a"} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v struct {
			Name string         `json:"name"`
			Tags []string       `json:"tags"`
			Any  map[string]any `json:"any"`
		}
		err := UnmarshalBody(body, &v)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Status != 400 && e.Status != 422) {
				t.Fatalf("error outside the Error shape: %v", err)
			}
			return
		}
		var texts []string
		texts = append(texts, v.Name)
		texts = append(texts, v.Tags...)
		var walk func(any)
		walk = func(x any) {
			switch x := x.(type) {
			case string:
				texts = append(texts, x)
			case []any:
				for _, y := range x {
					walk(y)
				}
			case map[string]any:
				for k, y := range x {
					texts = append(texts, k)
					walk(y)
				}
			}
		}
		walk(v.Any)
		for _, s := range texts {
			if strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("decoded a NUL from %q", body)
			}
			if !utf8.ValidString(s) {
				t.Fatalf("decoded invalid UTF-8 from %q", body)
			}
		}
	})
}

// QueryValue must answer what r.URL.Query().Get answers, whatever the
// query: it only skips building the map.
func TestQueryValueAgreesWithQuery(t *testing.T) {
	many := strings.Repeat("x=1&", 70) + "wait=2"
	queries := []string{"", "wait=55", "wait=5&wait=6", "a=1&wait=", "wait", "wait=5;x=1", "x=1;y&wait=4", "wait=%35",
		"wa%69t=7", "x=1+2&wait=3", "wait=3+4", "&&wait=9&", "=5&wait=1", "wait=a=b", "wait=%zz&wait=8", many, "WAIT=1&wait=2"}
	for _, q := range queries {
		checkQueryValue(t, q, "wait", "x", "a", "")
	}
}

func FuzzQueryValue(f *testing.F) {
	for _, s := range []string{"wait=55", "a=1&wait=%35", "wait=1;2", "x+y=1&x y=2"} {
		f.Add(s, "wait")
	}
	f.Fuzz(func(t *testing.T, query, name string) {
		checkQueryValue(t, query, name)
	})
}

func checkQueryValue(t *testing.T, query string, names ...string) {
	t.Helper()
	r := &http.Request{URL: &url.URL{Path: "/", RawQuery: query}}
	for _, name := range names {
		if got, want := QueryValue(r, name), r.URL.Query().Get(name); got != want {
			t.Errorf("query %q, %q: %q, want %q", query, name, got, want)
		}
	}
}
