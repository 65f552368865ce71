package cli

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logWriter gathers log lines and writes them flushEvery after the first
// of them, or at once when logBufferSize bytes are waiting: a busy server
// logs a line per request, and a write system call per line cost a cheap
// API call much of its CPU. Warnings and errors are written at once
// (flushingHandler), and Close writes what is left, so only the last
// flushEvery of routine lines can be lost, and only if the process is
// killed. The timer runs only while lines wait: a ticker woke an idle
// server ten times a second for nothing.
type logWriter struct {
	mu     sync.Mutex
	w      io.Writer
	buf    []byte
	timer  *time.Timer
	closed bool
}

const (
	flushEvery    = 100 * time.Millisecond
	logBufferSize = 64 << 10
)

func newLogWriter(w io.Writer) *logWriter {
	lw := &logWriter{w: w, buf: make([]byte, 0, logBufferSize)}
	lw.timer = time.AfterFunc(flushEvery, func() { lw.Flush() })
	lw.timer.Stop()
	return lw
}

// Write keeps p (one log line, as slog handlers write them).
func (lw *logWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if len(lw.buf)+len(p) > logBufferSize {
		if err := lw.flushLocked(); err != nil {
			return 0, err
		}
	}
	if len(p) > logBufferSize || lw.closed {
		return lw.w.Write(p)
	}
	if len(lw.buf) == 0 {
		lw.timer.Reset(flushEvery)
	}
	lw.buf = append(lw.buf, p...)
	return len(p), nil
}

// Flush writes the waiting lines.
func (lw *logWriter) Flush() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.flushLocked()
}

func (lw *logWriter) flushLocked() error {
	if len(lw.buf) == 0 {
		return nil
	}
	_, err := lw.w.Write(lw.buf)
	lw.buf = lw.buf[:0]
	return err
}

// Close writes what is left and stops the timer; lines written after it
// are written at once.
func (lw *logWriter) Close() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.closed = true
	lw.timer.Stop()
	return lw.flushLocked()
}

// flushingHandler writes the log at once after a warning or an error.
type flushingHandler struct {
	slog.Handler
	lw *logWriter
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.lw.Flush()
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(attrs), h.lw}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.lw}
}
