package agentdist

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Signer signs Windows programs and MSIs (Authenticode) with
// osslsigncode and the operator's certificate and key (PEM files).
type Signer struct {
	CertFile, KeyFile string
	// TimestampURL is an RFC 3161 time-stamping service ("" for none).
	TimestampURL string
}

// SignFile signs path in place.
func (s *Signer) SignFile(ctx context.Context, path string) error {
	tool, err := exec.LookPath("osslsigncode")
	if err != nil {
		return fmt.Errorf("%w: signing needs osslsigncode (apt-get install osslsigncode)", ErrNoTool)
	}
	out := path + ".signed"
	args := []string{"sign", "-certs", s.CertFile, "-key", s.KeyFile, "-n", "patchd agent", "-i", "https://github.com/patchd/patchd", "-h", "sha256"}
	if s.TimestampURL != "" {
		args = append(args, "-ts", s.TimestampURL)
	}
	args = append(args, "-in", path, "-out", out)
	if b, err := exec.CommandContext(ctx, tool, args...).CombinedOutput(); err != nil {
		os.Remove(out)
		return fmt.Errorf("sign %s: osslsigncode: %w: %s", path, err, strings.TrimSpace(string(b)))
	}
	return os.Rename(out, path)
}

// Signed tells whether path already carries an Authenticode signature.
func (s *Signer) Signed(ctx context.Context, path string) bool {
	tool, err := exec.LookPath("osslsigncode")
	if err != nil {
		return false
	}
	tmp, err := os.CreateTemp("", "patchd-sig-*")
	if err != nil {
		return false
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	os.Remove(tmp.Name()) // osslsigncode refuses to overwrite
	return exec.CommandContext(ctx, tool, "extract-signature", "-in", path, "-out", tmp.Name()).Run() == nil
}
