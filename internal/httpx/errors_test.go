package httpx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/store"
)

func TestWriteErrorStatuses(t *testing.T) {
	for _, c := range []struct {
		name       string
		err        error
		status     int
		code       string
		retryAfter bool
	}{
		{"not found", fmt.Errorf("store: x: %w", store.ErrNotFound), http.StatusNotFound, "not_found", false},
		{"database unavailable", fmt.Errorf("store: x: %w", store.ErrUnavailable), http.StatusServiceUnavailable, "service_unavailable", true},
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
