package httpx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/dberr"
)

func TestWriteErrorStatuses(t *testing.T) {
	for _, c := range []struct {
		name       string
		err        error
		status     int
		code       string
		retryAfter bool
	}{
		{"not found", fmt.Errorf("store: x: %w", dberr.ErrNotFound), http.StatusNotFound, "not_found", false},
		{"database unavailable", fmt.Errorf("store: x: %w", dberr.ErrUnavailable), http.StatusServiceUnavailable, "service_unavailable", true},
		{"pool deadline", fmt.Errorf("store: x: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, "service_unavailable", true},
		{"a bug", errors.New("store: scan: boom"), http.StatusInternalServerError, "internal_error", false},
	} {
		w := httptest.NewRecorder()
		WriteError(w, httptest.NewRequest("GET", "/api/v1/x", nil), c.err)
		if w.Code != c.status || !strings.Contains(w.Body.String(), `"error":"`+c.code+`"`) || (w.Header().Get("Retry-After") != "") != c.retryAfter {
			t.Errorf("%s: %d %q Retry-After %q", c.name, w.Code, w.Body.String(), w.Header().Get("Retry-After"))
		}
		if strings.Contains(w.Body.String(), "store:") {
			t.Errorf("%s: the answer leaks the error: %s", c.name, w.Body.String())
		}
	}
}

// captureLogs sends slog's default logger, at debug level, to a buffer for
// the test.
func captureLogs(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

// A request whose client left (a live preview replaced by the next one)
// is not a server error: 499 in the metrics and the log, at debug level,
// whatever error the cancellation became on its way up (context.Canceled
// wrapped, or a database driver's own "interrupted").
func TestClientGoneIsNotAServerError(t *testing.T) {
	for _, cause := range []error{
		fmt.Errorf("store: list endpoints: %w", context.Canceled),
		fmt.Errorf("store: list endpoints: %w", errors.New("interrupted (9)")),
	} {
		logs := captureLogs(t)
		ctx, cancel := context.WithCancel(context.Background())
		h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cancel() // the client leaves while the handler works
			WriteError(w, r, cause)
		}), nil, "")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/endpoints", nil).WithContext(ctx))
		if w.Code != StatusClientClosedRequest {
			t.Errorf("%v: status %d, want 499", cause, w.Code)
		}
		if strings.Contains(logs.String(), "level=ERROR") || strings.Contains(logs.String(), "status=500") ||
			!strings.Contains(logs.String(), "level=DEBUG msg=request") {
			t.Errorf("%v: logged as\n%s", cause, logs)
		}
	}
	// The same error while the client still waits is the server's failure.
	logs := captureLogs(t)
	w := httptest.NewRecorder()
	WriteError(w, httptest.NewRequest(http.MethodGet, "/api/v1/endpoints", nil), errors.New("disk full"))
	if w.Code != http.StatusInternalServerError || !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a server failure: %d, logged %s", w.Code, logs)
	}
}
