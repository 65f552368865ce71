// Package httpx is the HTTP plumbing shared by the REST API and the agent
// protocol: the Error shape and its mapping, JSON bodies, paging, and the
// middleware (request ids, logs, metrics, panics).
package httpx

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/valid"
)

// Error is an answer in the spec's Error shape. Handlers return it (or an
// error wrapping dberr.ErrNotFound or a *valid.Error); WriteError maps a
// database that is unavailable (dberr.IsUnavailable) to 503 with
// Retry-After and anything else to a generic 500, and logs the detail,
// never echoing it.
type Error struct {
	Status      int             `json:"-"`
	Code        string          `json:"error"`
	Description *string         `json:"error_description"`
	Details     []valid.Problem `json:"details,omitempty"`
	header      http.Header
}

// WithHeader adds a response header to the error answer.
func (e *Error) WithHeader(key, value string) *Error {
	if e.header == nil {
		e.header = http.Header{}
	}
	e.header.Add(key, value)
	return e
}

func (e *Error) Error() string {
	if e.Description != nil {
		return e.Code + ": " + *e.Description
	}
	return e.Code
}

// Errorf makes an Error with a description.
func Errorf(status int, code, description string) *Error {
	return &Error{Status: status, Code: code, Description: &description}
}

// Errors used across handlers; codes as docs/design/api-contract.md lists them.
func NotFound(what string) *Error {
	return Errorf(http.StatusNotFound, "not_found", what+" not found")
}

func InvalidRequest(description string) *Error {
	return Errorf(http.StatusBadRequest, "invalid_request", description)
}

func Validation(field, message string) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Code: "validation_failed",
		Description: Ptr(field + ": " + message), Details: []valid.Problem{{Field: field, Message: message}}}
}

// RetryAfterUnavailable is the Retry-After (seconds) of an answer refused
// because the database is unavailable.
const RetryAfterUnavailable = 5

// Unavailable is the answer to a request the database could not serve for
// now (unreachable, busy, full; see dberr.IsUnavailable): 503 with
// Retry-After, which clients retry, where a 4xx is final.
func Unavailable() *Error {
	return Errorf(http.StatusServiceUnavailable, "service_unavailable",
		"the database is unavailable for now; send the request again after Retry-After seconds").
		WithHeader("Retry-After", itoa(RetryAfterUnavailable))
}

func Ptr[T any](v T) *T { return &v }

// StatusClientClosedRequest is the status logged (and metered) for a
// request whose client left before the answer (nginx's 499): not a server
// error, so it is never logged as one.
const StatusClientClosedRequest = 499

// ClientGone tells whether err is what became of a request whose client
// went away: its context is done (cancelled when the client closed the
// connection, or the server is shutting down), and whatever failed after
// that — context.Canceled, or a database driver's own "interrupted" —
// failed because of it.
func ClientGone(r *http.Request, err error) bool {
	return err != nil && r.Context().Err() != nil
}

// WriteError writes err in the Error shape.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	var apiErr *Error
	var vErr *valid.Error
	switch {
	case errors.As(err, &apiErr):
	case errors.As(err, &vErr):
		desc := vErr.Error()
		apiErr = &Error{Status: http.StatusUnprocessableEntity, Code: "validation_failed", Description: &desc, Details: vErr.Problems}
	case errors.Is(err, dberr.ErrNotFound):
		apiErr = NotFound("resource")
	case ClientGone(r, err):
		// The client went away; nobody reads the answer.
		slog.DebugContext(r.Context(), "client gone", "method", r.Method, "path", r.URL.Path,
			"request_id", RequestID(r.Context()), "err", err)
		apiErr = Errorf(StatusClientClosedRequest, "client_closed_request", "the request was cancelled")
	case dberr.IsUnavailable(err):
		slog.WarnContext(r.Context(), "request failed: database unavailable", "method", r.Method, "path", r.URL.Path,
			"request_id", RequestID(r.Context()), "err", err)
		apiErr = Unavailable()
	default:
		slog.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path,
			"request_id", RequestID(r.Context()), "err", err)
		apiErr = Errorf(http.StatusInternalServerError, "internal_error", "the server could not complete the request; see its log for request id "+RequestID(r.Context()))
	}
	for k, vs := range apiErr.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	WriteJSON(w, apiErr.Status, apiErr)
}

// WriteJSON writes v as the JSON body of the answer.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		slog.Error("encode answer", "err", err)
		status = http.StatusInternalServerError
		body = []byte(`{"error":"internal_error","error_description":"the answer could not be encoded"}`)
	}
	WriteEncoded(w, status, body)
}

// WriteEncoded writes a JSON answer already encoded (as WriteJSON encodes it).
func WriteEncoded(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(body)
	w.Write([]byte{'\n'})
}
