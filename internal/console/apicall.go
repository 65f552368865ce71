package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/patchd/patchd/internal/valid"
)

// apiError is a refusal of the REST API's code, in its Error shape.
type apiError struct {
	Status      int             `json:"-"`
	Code        string          `json:"error"`
	Description *string         `json:"error_description"`
	Details     []valid.Problem `json:"details"`
	// retryAfter is the answer's Retry-After (a 503: the database is
	// unavailable), passed on to the browser.
	retryAfter string
}

func (e *apiError) Error() string { return fmt.Sprintf("api %d %s", e.Status, e.Code) }

// Text is the refusal as a person reads it: each field problem on a line.
func (e *apiError) Text() string {
	if len(e.Details) > 0 {
		lines := make([]string, len(e.Details))
		for i, p := range e.Details {
			lines[i] = p.Field + ": " + p.Message
		}
		return strings.Join(lines, "\n")
	}
	if e.Description != nil {
		return *e.Description
	}
	return e.Code
}

// memResponse collects the API's answer in memory.
type memResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (m *memResponse) Header() http.Header { return m.header }
func (m *memResponse) WriteHeader(code int) {
	if m.status == 0 {
		m.status = code
	}
}
func (m *memResponse) Write(b []byte) (int, error) {
	if m.status == 0 {
		m.status = http.StatusOK
	}
	return m.body.Write(b)
}

// callAPI runs one REST API operation as the session's user, in the
// process: the same validation, permission check, store code and Audit
// Trail as a call with a bearer token. out receives a 2xx answer; any other
// answer is an *apiError.
func (c *Console) callAPI(r *http.Request, s *session, method, path string, body, out any) error {
	var rd bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&rd).Encode(body); err != nil {
			return fmt.Errorf("console: encode %s %s: %w", method, path, err)
		}
	}
	req, err := http.NewRequestWithContext(r.Context(), method, path, &rd)
	if err != nil {
		return fmt.Errorf("console: %s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = r.RemoteAddr
	resp := &memResponse{header: http.Header{}}
	c.cfg.API.ServeAs(resp, req, s.principal())
	if resp.status >= 200 && resp.status < 300 {
		if out != nil {
			if err := json.Unmarshal(resp.body.Bytes(), out); err != nil {
				return fmt.Errorf("console: decode %s %s: %w", method, path, err)
			}
		}
		return nil
	}
	ae := &apiError{Status: resp.status}
	if err := json.Unmarshal(resp.body.Bytes(), ae); err != nil || ae.Code == "" {
		return fmt.Errorf("console: %s %s answered %d", method, path, resp.status)
	}
	if resp.status == http.StatusServiceUnavailable {
		ae.retryAfter = resp.header.Get("Retry-After")
		return ae
	}
	if resp.status >= 500 {
		return fmt.Errorf("console: %s %s answered %d %s", method, path, resp.status, ae.Code)
	}
	return ae
}
