package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/patchd/patchd/apiv1"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxBody bounds every JSON request body of the REST API.
const maxBody = 1 << 20

// DecodeJSON reads the request body into v. Malformed JSON answers 400
// invalid_json; a value of the wrong type for a known field answers 422 with
// that field; unknown fields are ignored (docs/design/api-contract.md).
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return DecodeJSONLimit(w, r, v, maxBody)
}

// DecodeJSONLimit is DecodeJSON with another body size limit.
func DecodeJSONLimit(w http.ResponseWriter, r *http.Request, v any, maxBody int64) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return Errorf(http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the body exceeds %d bytes", maxBody))
		}
		return InvalidRequest("the body could not be read")
	}
	return UnmarshalBody(body, v)
}

// UnmarshalBody decodes a JSON request body into v, as DecodeJSON does.
// A string that holds the NUL character (the escape \u0000) is refused
// with 400 invalid_json before anything is decoded: text is UTF-8 without
// NUL on both engines (PostgreSQL cannot store it), so the same body gets
// the same answer on SQLite and PostgreSQL (docs/design/architecture.md).
func UnmarshalBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return Errorf(http.StatusBadRequest, "invalid_json", "the request body is empty; a JSON object is expected")
	}
	if HasEscapedNUL(body) {
		return Errorf(http.StatusBadRequest, "invalid_json", "a string of the body holds the NUL character (\\u0000), which patchd does not store")
	}
	// Unmarshal, not a Decoder: the body is read already, and a Decoder
	// copies it into a buffer of its own (as large as an inventory).
	if err := json.Unmarshal(body, v); err != nil {
		var syntaxErr *json.SyntaxError
		if errors.As(err, &syntaxErr) && strings.HasSuffix(syntaxErr.Error(), "after top-level value") {
			return Errorf(http.StatusBadRequest, "invalid_json", "malformed JSON: data after the top-level value")
		}
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return Validation(typeErr.Field, "must be "+jsonTypeName(typeErr.Type.Kind().String()))
		}
		if errors.As(err, &typeErr) {
			return Errorf(http.StatusBadRequest, "invalid_json", "the body must be JSON: "+jsonTypeName(typeErr.Type.Kind().String()))
		}
		return Errorf(http.StatusBadRequest, "invalid_json", "malformed JSON: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// HasEscapedNUL tells whether a JSON document holds the escape \u0000 in a
// string. A raw NUL byte is not valid JSON anywhere, so the decoder refuses
// it; the escape is the only way a NUL reaches a decoded string. An escape
// is real when the backslash that starts it is not itself escaped: the run
// of backslashes before "u0000" has an odd length.
func HasEscapedNUL(body []byte) bool {
	const esc = `\u0000`
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(esc))
		if j < 0 {
			return false
		}
		at := i + j
		run := 1
		for k := at - 1; k >= 0 && body[k] == '\\'; k-- {
			run++
		}
		if run%2 == 1 {
			return true
		}
		i = at + len(esc)
	}
}

// CheckText refuses text holding the NUL character, naming where it was
// found; every string a request carries outside a JSON body (path ids,
// query parameters, form fields) goes through it.
func CheckText(where, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return InvalidRequest(where + " holds the NUL character (%00), which patchd does not store")
	}
	return nil
}

// CheckURL refuses a request whose path or query string holds the NUL
// character (%00): path ids and query filters reach SQL, and PostgreSQL
// cannot take NUL in text. Middleware runs it before any handler, so every
// operation of the API, the console and the agent protocol answers the
// same 400 on both engines.
func CheckURL(r *http.Request) error {
	if err := CheckText("the path", r.URL.Path); err != nil {
		return err
	}
	// A NUL reaches a parsed query only as %00: net/http refuses a
	// request line holding a control byte. A query without an escape (an
	// agent's ?wait=55) is not parsed again here: the map r.URL.Query()
	// builds would be garbage made on every check-in.
	if !strings.Contains(r.URL.RawQuery, "%") {
		return nil
	}
	// The handlers read the query as r.URL.Query() does (pairs that do not
	// parse are left out), so the same parse is checked here.
	for k, vs := range r.URL.Query() {
		if err := CheckText("the query parameter name", k); err != nil {
			return err
		}
		for _, v := range vs {
			if err := CheckText("the query parameter "+k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// QueryValue answers r.URL.Query().Get(name). A query of plain pairs
// (no escape, no '+', no ';', as agents send it) is read where it is,
// without the map r.URL.Query() builds; any other goes through it.
func QueryValue(r *http.Request, name string) string {
	raw := r.URL.RawQuery
	if raw == "" {
		return ""
	}
	if strings.ContainsAny(raw, "%+;") || strings.Count(raw, "&") >= maxPlainPairs {
		return r.URL.Query().Get(name)
	}
	for pair := range strings.SplitSeq(raw, "&") {
		if k, v, _ := strings.Cut(pair, "="); pair != "" && k == name {
			return v
		}
	}
	return ""
}

// maxPlainPairs bounds the pairs QueryValue reads itself: url.ParseQuery
// refuses a query of too many, and a query that long is no agent's.
const maxPlainPairs = 64

func jsonTypeName(kind string) string {
	switch kind {
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "ptr", "pointer", "interface":
		return "a valid value"
	}
	return "a " + kind
}

// Paging limits (spec section 8).
const (
	defaultLimit = 100
	maxLimit     = 500
)

// Page is a parsed limit/offset pair.
type Page struct {
	Limit  int
	Offset int
}

// ParsePage reads limit and offset. A limit outside 1-500 is clamped (the
// answer's limit says what was used); a non-numeric value or a negative
// offset is 400 invalid_request.
func ParsePage(r *http.Request) (Page, error) {
	p := Page{Limit: defaultLimit}
	q := r.URL.Query()
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return p, InvalidRequest("limit must be an integer from 1 to 500")
		}
		p.Limit = min(max(n, 1), maxLimit)
	}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return p, InvalidRequest("offset must be an integer of 0 or more")
		}
		p.Offset = n
	}
	return p, nil
}

// NewPage is the paginated answer { items, total, limit, offset } of the
// wire types, with an empty list rather than null.
func NewPage[T any](items []T, total int, p Page) apiv1.Page[T] {
	if items == nil {
		items = []T{}
	}
	return apiv1.Page[T]{Items: items, Total: total, Limit: p.Limit, Offset: p.Offset}
}

// NewList is the unpaginated answer { items, total }; total is given when
// it counts more than the items returned.
func NewList[T any](items []T, total int) apiv1.List[T] {
	if items == nil {
		items = []T{}
	}
	return apiv1.List[T]{Items: items, Total: total}
}

func itoa(n int) string { return strconv.Itoa(n) }
