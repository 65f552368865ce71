package agentdist

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/httpx"
)

// ErrNoRelease: the platform's binary has no signed release (published
// without --version and a signature, or replaced since).
var ErrNoRelease = errors.New("the published agent has no signed release")

// ErrReleaseChanged: the platform's binary is not the one its release was
// signed for, and it was not published again through patchd (publishing
// removes the release first): the file changed on disk. Neither the
// release nor the binary is served until it is published again.
var ErrReleaseChanged = errors.New("the published agent changed on disk after its release was signed")

// ReleaseChangedError tells which platform's binary changed, and how.
type ReleaseChangedError struct {
	Platform Platform
	Release  agentproto.Release
	// SHA256 is the SHA-256 of the file now on disk.
	SHA256 string
}

func (e *ReleaseChangedError) Error() string {
	return fmt.Sprintf("the agent published for %s changed on disk after its release %s was signed (SHA-256 %s, the release says %s): "+
		"it is not served until it is published again (patchd admin agent publish --version …)", e.Platform, e.Release.Version, e.SHA256, e.Release.SHA256)
}

func (e *ReleaseChangedError) Unwrap() error { return ErrReleaseChanged }

// releaseFile sits next to the binary: its version and signature, and the
// SHA-256 they were given for.
const releaseFile = "release.json"

func (s *Store) releasePath(p Platform) string {
	return filepath.Join(s.Dir, p.OS+"-"+p.Arch, releaseFile)
}

// SetRelease records the version and the release signature of the binary
// published for p. The signature must verify with one of keys over the
// binary as it is now: a wrong version, platform, key or file is refused
// here rather than by every agent.
func (s *Store) SetRelease(p Platform, version, signature string, keys []ed25519.PublicKey) (agentproto.Release, error) {
	b, err := s.Lookup(p)
	if err != nil {
		return agentproto.Release{}, err
	}
	version = strings.TrimSpace(version)
	if err := agentproto.CheckVersion(version); err != nil {
		return agentproto.Release{}, fmt.Errorf("release of %s: %w", p, err)
	}
	r := agentproto.Release{OS: p.OS, Arch: p.Arch, Version: version, SHA256: b.SHA256, Size: b.Size, Signature: strings.TrimSpace(signature)}
	if len(keys) > 0 {
		if err := agentproto.VerifyRelease(keys, r); err != nil {
			return agentproto.Release{}, fmt.Errorf("release of %s %s: %w", p, version, err)
		}
	}
	err = writeAtomic(s.releasePath(p), 0o644, func(w io.Writer) error { return json.NewEncoder(w).Encode(r) })
	if err != nil {
		return agentproto.Release{}, fmt.Errorf("release of %s: %w", p, err)
	}
	return r, nil
}

// Release is the signed release of the binary published for p;
// ErrNoRelease when there is none, a *ReleaseChangedError
// (ErrReleaseChanged) when the binary on disk is not the one it was
// signed for.
func (s *Store) Release(p Platform) (agentproto.Release, error) {
	b, err := s.Lookup(p)
	if err != nil {
		return agentproto.Release{}, err
	}
	raw, err := os.ReadFile(s.releasePath(p))
	if errors.Is(err, os.ErrNotExist) {
		return agentproto.Release{}, fmt.Errorf("%w: %s", ErrNoRelease, p)
	}
	if err != nil {
		return agentproto.Release{}, fmt.Errorf("release of %s: %w", p, err)
	}
	var r agentproto.Release
	if err := json.Unmarshal(raw, &r); err != nil {
		return agentproto.Release{}, fmt.Errorf("release of %s: %w", p, err)
	}
	if !strings.EqualFold(r.SHA256, b.SHA256) {
		return agentproto.Release{}, &ReleaseChangedError{Platform: p, Release: r, SHA256: b.SHA256}
	}
	return r, nil
}

// Served is the binary published for p as the server may serve it: a
// *ReleaseChangedError when it has a release that was signed for another
// file (changed on disk).
func (s *Store) Served(p Platform) (Binary, error) {
	b, err := s.Lookup(p)
	if err != nil {
		return Binary{}, err
	}
	if _, err := s.Release(p); errors.Is(err, ErrReleaseChanged) {
		return Binary{}, err
	}
	return b, nil
}

// withdrawRelease removes the release of p: the binary is about to be
// published again, with a release or without.
func (s *Store) withdrawRelease(p Platform) error {
	if err := os.Remove(s.releasePath(p)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("withdraw the release of %s: %w", p, err)
	}
	return nil
}

// ReadReleaseKey reads a release private key file: base64 (standard) of
// the 32-byte Ed25519 seed (patchd admin agent keygen).
func ReadReleaseKey(file string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("release key: %w", err)
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("release key %s: not the base64 of a 32-byte Ed25519 seed", file)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// release serves GET /agent/v1/release/{os}/{arch}.
func (h *Host) release(w http.ResponseWriter, r *http.Request) error {
	b, err := h.lookup(r.Context(), r.PathValue("os"), r.PathValue("arch"))
	if err != nil {
		return err
	}
	rel, err := h.Store.Release(b.Platform)
	if errors.Is(err, ErrNoRelease) {
		return httpx.Errorf(http.StatusNotFound, "not_found", err.Error())
	}
	if err != nil {
		return h.changed(r.Context(), err)
	}
	w.Header().Set("Cache-Control", "no-cache")
	httpx.WriteJSON(w, http.StatusOK, rel)
	return nil
}

// Releases are the signed releases of every published platform (a
// platform without a binary or without a release is left out, and so is
// one whose binary changed on disk: changed reports it, when not nil).
func (s *Store) Releases(changed func(*ReleaseChangedError)) ([]agentproto.Release, error) {
	var out []agentproto.Release
	for _, p := range Platforms {
		r, err := s.Release(p)
		if errors.Is(err, ErrNotPublished) || errors.Is(err, ErrNoRelease) {
			continue
		}
		var ch *ReleaseChangedError
		if errors.As(err, &ch) {
			if changed != nil {
				changed(ch)
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
