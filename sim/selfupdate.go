package sim

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// maxSimAgentBytes bounds a downloaded agent, as the real agent does.
const maxSimAgentBytes = 512 << 20

// goOS is the release platform of a simulated endpoint.
func (p *profile) goOS() string {
	if p.platform == "macos" {
		return "darwin"
	}
	return p.platform
}

// agentVersion is the version the agent reports.
func (a *agent) agentVersion() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.version
}

// selfUpdate follows the check-in's agentTarget as the real agent does
// (agent/update.go): with a trusted release key (Config.ReleaseKey) it
// reads the release published for its platform and, when that is the
// target and another version than its own and not refused before,
// verifies the release's signature, downloads the binary from the server
// and checks its SHA-256 (agentproto.VerifyRelease and VerifyDownload, the
// agent's own checks). Then, in place of restarting into it, it runs the
// new version, or, for the endpoints Config.UpdateFailureRate picks, fails
// as a new agent that does not start: the release is refused and the
// failure goes with the next check-in. It reports whether it updated.
func (a *agent) selfUpdate(ctx context.Context, target string) bool {
	keys := a.f.releaseKeys
	if target == "" || len(keys) == 0 {
		return false
	}
	a.mu.Lock()
	same := target == a.releaseTarget && time.Since(a.releaseAt) < a.f.cfg.ReleaseCheckEvery
	if !same {
		a.releaseTarget, a.releaseAt = target, time.Now()
	}
	version := a.version
	a.mu.Unlock()
	if same {
		return false
	}
	p := a.prof
	var rel agentproto.Release
	err := a.f.client.call(ctx, http.MethodGet, fmt.Sprintf(agentproto.PathRelease, p.goOS(), p.arch()), "", nil, false, &rel)
	var se *statusError
	if errors.As(err, &se) && se.code == http.StatusNotFound {
		return false // nothing published for this platform
	}
	if err != nil {
		if ctx.Err() == nil {
			a.f.stats.fail("release", err)
		}
		return false
	}
	a.mu.Lock()
	refused := slices.Contains(a.refused, rel.SHA256)
	a.mu.Unlock()
	if rel.Version == version || target != "latest" && rel.Version != target || refused {
		return false
	}
	if rel.OS != p.goOS() || rel.Arch != p.arch() {
		a.refuse(rel, "the release is for another platform")
		return false
	}
	if err := agentproto.VerifyRelease(keys, rel); err != nil {
		a.refuse(rel, "bad signature")
		return false
	}
	// Under "latest" only a newer version is taken, as the real agent does.
	if cmp, err := agentproto.CompareVersions(rel.Version, version); target == "latest" && (err != nil || cmp < 0) {
		a.mu.Lock()
		seen := slices.Contains(a.downgrades, rel.SHA256)
		if !seen {
			a.downgrades = append(a.downgrades, rel.SHA256)
			a.updateFailure = &agentproto.UpdateFailure{Version: rel.Version, Reason: "older than this agent (" + version + "): under the policy latest an agent never goes back; pin the version to roll back", At: time.Now().UTC()}
		}
		a.mu.Unlock()
		if !seen {
			a.f.stats.agentUpdateFailures.Add(1)
		}
		return false
	}
	if err := a.download(ctx, rel); err != nil {
		if errors.Is(err, agentproto.ErrTampered) {
			a.refuse(rel, "the download does not match the signed release")
		} else if ctx.Err() == nil {
			a.f.stats.fail("download", err)
		}
		return false
	}
	if newRand(a.f.cfg.Seed, a.index, "update "+rel.Version).Float64() < a.f.cfg.UpdateFailureRate {
		a.refuse(rel, "the new agent does not start")
		return false
	}
	a.mu.Lock()
	a.version = rel.Version
	a.mu.Unlock()
	a.f.stats.agentUpdates.Add(1)
	return true
}

// refuse notes a release as refused (not tried again) and keeps the
// failure for the next check-in, as the real agent does.
func (a *agent) refuse(rel agentproto.Release, why string) {
	a.mu.Lock()
	a.refused = append(a.refused, rel.SHA256)
	a.updateFailure = &agentproto.UpdateFailure{Version: rel.Version, Reason: why, At: time.Now().UTC()}
	a.mu.Unlock()
	a.f.stats.agentUpdateFailures.Add(1)
}

// download reads the platform's binary from the server and checks its
// SHA-256 against the signed release; the bytes are not kept.
func (a *agent) download(ctx context.Context, rel agentproto.Release) error {
	select {
	case a.f.downloads <- struct{}{}:
		defer func() { <-a.f.downloads }()
	case <-ctx.Done():
		return ctx.Err()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.f.cfg.Server+fmt.Sprintf(agentproto.PathDownload, rel.OS, rel.Arch), nil)
	if err != nil {
		return err
	}
	resp, err := a.f.client.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("download: %s", resp.Status)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(resp.Body, maxSimAgentBytes+1))
	if err != nil {
		return err
	}
	if n > maxSimAgentBytes {
		return fmt.Errorf("download: larger than %d bytes", maxSimAgentBytes)
	}
	return agentproto.VerifyDownload(rel, h.Sum(nil))
}

// parseReleaseKeys reads Config.ReleaseKey.
func parseReleaseKeys(s string) ([]ed25519.PublicKey, error) {
	if s == "" {
		return nil, nil
	}
	k, err := agentproto.ParseReleaseKey(s)
	if err != nil {
		return nil, err
	}
	return []ed25519.PublicKey{k}, nil
}
