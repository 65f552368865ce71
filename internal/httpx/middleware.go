package httpx

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HandlerFunc is a handler that returns its error; Handle writes it.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handle adapts a HandlerFunc to http.Handler, writing a returned error in
// the Error shape.
func Handle(h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			WriteError(w, r, err)
		}
	})
}

type ctxKey int

const requestKey ctxKey = 0

// request is what Middleware keeps of a request in its context: one
// value, so that a handler that learns who the caller is (SetCaller) does
// not copy the request to say so.
type request struct {
	id     string
	caller any
}

// RequestID is the id of the request being served ("" outside one).
func RequestID(ctx context.Context) string {
	if req, ok := ctx.Value(requestKey).(*request); ok {
		return req.id
	}
	return ""
}

// SetCaller records the authenticated caller of the request being served
// (Caller answers it), and tells whether it could: false outside
// Middleware, where the caller must travel in a context of its own.
func SetCaller(ctx context.Context, caller any) bool {
	req, ok := ctx.Value(requestKey).(*request)
	if ok {
		req.caller = caller
	}
	return ok
}

// Caller is what SetCaller recorded for the request being served, or nil.
func Caller(ctx context.Context) any {
	if req, ok := ctx.Value(requestKey).(*request); ok {
		return req.caller
	}
	return nil
}

// Metrics counts requests by route and status and times them.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// routes keeps each route's series (*routeSeries), so that a request
	// does not hash its labels to find them again.
	routes sync.Map
}

type routeSeries struct {
	latency prometheus.Observer
	counts  sync.Map // status code -> prometheus.Counter
}

// observe counts and times one request.
func (m *Metrics) observe(route string, status int, took time.Duration) {
	v, ok := m.routes.Load(route)
	if !ok {
		v, _ = m.routes.LoadOrStore(route, &routeSeries{latency: m.latency.WithLabelValues(route)})
	}
	rs := v.(*routeSeries)
	rs.latency.Observe(took.Seconds())
	c, ok := rs.counts.Load(status)
	if !ok {
		c, _ = rs.counts.LoadOrStore(status, m.requests.WithLabelValues(route, itoa(status)))
	}
	c.(prometheus.Counter).Inc()
}

// NewMetrics registers the HTTP metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patchd_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "patchd_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

type recorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// Flush lets streamed answers (CSV) reach the client as they are written.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Middleware gives each request an id (X-Request-Id, kept from the client
// when it is sane), recovers panics as 500s, records metrics by route
// pattern and logs the request. A path or query string holding the NUL
// character is refused with 400 before any handler (CheckURL). Requests under quietPrefix (the agents'
// hot path) are logged at debug level only.
func Middleware(next http.Handler, m *Metrics, quietPrefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !saneID(id) {
			id = newRequestID()
		}
		w.Header()["X-Request-Id"] = []string{id} // the canonical key, as Set would write it
		ctx := context.WithValue(r.Context(), requestKey, &request{id: id})
		r = r.WithContext(ctx)
		rec := &recorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				slog.ErrorContext(ctx, "panic serving request", "request_id", id, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				if rec.status == 0 {
					WriteError(rec, r, Errorf(http.StatusInternalServerError, "internal_error", "the server could not complete the request; see its log for request id "+id))
				}
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			elapsed := time.Since(start)
			if m != nil {
				m.observe(route, status, elapsed)
			}
			level := slog.LevelInfo
			if quietPrefix != "" && strings.HasPrefix(r.URL.Path, quietPrefix) {
				level = slog.LevelDebug
			}
			if status == StatusClientClosedRequest {
				level = slog.LevelDebug
			}
			if status >= 500 && status != http.StatusNotImplemented {
				level = slog.LevelError
			}
			// Asked first: the agents' requests are logged at debug level,
			// off in production, and the line's fields cost allocations.
			if slog.Default().Enabled(ctx, level) {
				slog.Log(ctx, level, "request", "request_id", id, "method", r.Method, "path", r.URL.Path,
					"route", route, "status", status, "bytes", rec.bytes, "duration_ms", float64(elapsed.Microseconds())/1000)
			}
		}()
		if err := CheckURL(r); err != nil {
			WriteError(rec, r, err)
			return
		}
		next.ServeHTTP(rec, r)
	})
}

// requestIDPrefix and requestSeq make request ids: a random prefix per
// process (unique across replicas and restarts) and a counter, 16
// hexadecimal digits in all, without a random read per request.
var (
	requestIDPrefix = func() uint64 {
		var b [8]byte
		rand.Read(b[:])
		return binary.BigEndian.Uint64(b[:]) &^ (1<<32 - 1)
	}()
	requestSeq atomic.Uint64
)

func newRequestID() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], requestIDPrefix|requestSeq.Add(1)&(1<<32-1))
	return hex.EncodeToString(b[:])
}

func saneID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
