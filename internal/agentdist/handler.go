package agentdist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/patchd/patchd/internal/httpx"
)

// Host serves the agent's downloads, packages and installers.
type Host struct {
	Store    *Store
	Packages *Packager
	// BaseURL is the server's public address, baked into the installers.
	BaseURL string
	// ReleaseChanged is told, once per changed file and replica, that a
	// published binary changed on disk after its release was signed (the
	// server raises an alert); an error makes the next request tell it
	// again.
	ReleaseChanged func(ctx context.Context, e *ReleaseChangedError) error
	reported       sync.Map // platform + SHA-256 of the changed file: reported

	// CAPin answers the lowercase hex SHA-256 of the server's CA
	// certificate (DER) that enrollment tokens carry, or "" when agents
	// trust the server through the system's CAs (nil: no pin).
	CAPin func(ctx context.Context) (string, error)
}

// Installers are the one-line installers for token on this server, at
// base (BaseURL when empty).
func (h *Host) Installers(ctx context.Context, base, token string) (Installers, error) {
	if base == "" {
		base = h.BaseURL
	}
	pin := ""
	if h.CAPin != nil {
		var err error
		if pin, err = h.CAPin(ctx); err != nil {
			return Installers{}, fmt.Errorf("installers: the server's CA: %w", err)
		}
	}
	return InstallersFor(base, token, pin), nil
}

// Published lists the published agents (nil on error: the console shows
// what it can).
func (h *Host) Published() []Binary {
	list, _ := h.Store.List()
	return list
}

// Register adds the routes to mux; they need no credentials: nothing
// served holds a secret (the token is given on the computer).
func (h *Host) Register(mux *http.ServeMux) {
	mux.Handle("GET /agent/v1/download", httpx.Handle(h.index))
	mux.Handle("GET /agent/v1/download/{os}/{file}", httpx.Handle(h.download))
	mux.Handle("GET /agent/v1/package/{type}/{arch}", httpx.Handle(h.pkg))
	mux.Handle("GET /agent/v1/release/{os}/{arch}", httpx.Handle(h.release))
	mux.Handle("GET /install.sh", httpx.Handle(h.script(InstallScript, "text/x-shellscript; charset=utf-8")))
	mux.Handle("GET /install.ps1", httpx.Handle(h.script(InstallPowerShell, "text/plain; charset=utf-8")))
}

type indexItem struct {
	Binary
	URL       string `json:"url"`
	SHA256URL string `json:"sha256Url"`
}

func (h *Host) index(w http.ResponseWriter, r *http.Request) error {
	list, err := h.Store.List()
	if err != nil {
		return err
	}
	items := make([]indexItem, 0, len(list))
	for _, b := range list {
		u := h.base(r) + "/agent/v1/download/" + b.String()
		items = append(items, indexItem{Binary: b, URL: u, SHA256URL: u + ".sha256"})
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"items": items, "total": len(items), "platforms": Platforms})
	return nil
}

func (h *Host) lookup(ctx context.Context, goos, arch string) (Binary, error) {
	p, err := ParsePlatform(goos, arch)
	if err != nil {
		return Binary{}, httpx.Errorf(http.StatusNotFound, "not_found", err.Error())
	}
	b, err := h.Store.Served(p)
	if errors.Is(err, ErrNotPublished) {
		return Binary{}, httpx.Errorf(http.StatusNotFound, "not_found",
			fmt.Sprintf("no agent for %s has been published on this server yet (patchd admin agent publish)", p))
	}
	if err != nil {
		return Binary{}, h.changed(ctx, err)
	}
	return b, nil
}

// changed answers err, and when it is a *ReleaseChangedError, logs it at
// ERROR, has the server raise its alert (once per changed file and
// replica) and answers 503 with what to do: nothing is served for the
// platform until the agent is published again.
func (h *Host) changed(ctx context.Context, err error) error {
	var ch *ReleaseChangedError
	if !errors.As(err, &ch) {
		return err
	}
	h.ReportChanged(ctx, ch)
	return httpx.Errorf(http.StatusServiceUnavailable, "unavailable", ch.Error())
}

// ReportChanged logs a published binary changed on disk at ERROR and
// tells ReleaseChanged, once per changed file on this replica.
func (h *Host) ReportChanged(ctx context.Context, ch *ReleaseChangedError) {
	key := ch.Platform.String() + " " + ch.SHA256
	if _, done := h.reported.LoadOrStore(key, true); done {
		return
	}
	slog.ErrorContext(ctx, "agent release withdrawn: the published binary changed on disk after its release was signed",
		"platform", ch.Platform.String(), "version", ch.Release.Version, "release_sha256", ch.Release.SHA256, "file_sha256", ch.SHA256)
	if h.ReleaseChanged == nil {
		return
	}
	if err := h.ReleaseChanged(context.WithoutCancel(ctx), ch); err != nil {
		slog.ErrorContext(ctx, "agent release withdrawn: the alert was not raised; the next request tries again", "platform", ch.Platform.String(), "err", err)
		h.reported.Delete(key)
	}
}

// download serves /agent/v1/download/{os}/{arch} (the binary) and
// /agent/v1/download/{os}/{arch}.sha256 (its hash, as sha256sum prints).
func (h *Host) download(w http.ResponseWriter, r *http.Request) error {
	arch, sumOnly := strings.CutSuffix(r.PathValue("file"), ".sha256")
	b, err := h.lookup(r.Context(), r.PathValue("os"), arch)
	if err != nil {
		return err
	}
	w.Header().Set("X-Checksum-Sha256", b.SHA256)
	if sumOnly {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		fmt.Fprintf(w, "%s  %s\n", b.SHA256, b.FileName())
		return nil
	}
	return serveFile(w, r, b.Path, b.FileName(), `"`+b.SHA256+`"`)
}

// serveFile streams path with Content-Length, ETag and range support.
func serveFile(w http.ResponseWriter, r *http.Request, path, name, etag string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("serve %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("serve %s: %w", name, err)
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, fi.ModTime(), f)
	return nil
}

func (h *Host) pkg(w http.ResponseWriter, r *http.Request) error {
	typ, arch := r.PathValue("type"), r.PathValue("arch")
	if h.Packages == nil {
		return httpx.Errorf(http.StatusNotFound, "not_found", "this server builds no packages")
	}
	out, err := h.Packages.Build(r.Context(), PackageRequest{Type: typ, Arch: arch, Server: h.base(r)})
	var bad *PackageError
	switch {
	case errors.Is(err, ErrReleaseChanged):
		return h.changed(r.Context(), err)
	case errors.As(err, &bad):
		return httpx.Errorf(http.StatusNotFound, "not_found", bad.Error())
	case errors.Is(err, ErrNotPublished):
		return httpx.Errorf(http.StatusNotFound, "not_found", err.Error()+" (patchd admin agent publish)")
	case errors.Is(err, ErrNoTool):
		slog.WarnContext(r.Context(), "package build", "type", typ, "err", err)
		return httpx.Errorf(http.StatusServiceUnavailable, "unavailable", err.Error())
	case err != nil:
		return err
	}
	return serveFile(w, r, out.Path, out.Name, `"`+out.SHA256+`"`)
}

// base is the server's address: BaseURL, else the one the request came to.
func (h *Host) base(r *http.Request) string {
	if h.BaseURL != "" {
		return h.BaseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (h *Host) script(render func(string) string, contentType string) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		base := h.base(r)
		if err := CheckServerURL(base); err != nil {
			return httpx.Errorf(http.StatusBadRequest, "invalid_request", err.Error())
		}
		body := render(base)
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		_, err := w.Write([]byte(body))
		return err
	}
}
