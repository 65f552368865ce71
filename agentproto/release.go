package agentproto

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ParseReleaseKey reads a release public key: base64 (standard) of the
// 32 bytes of an Ed25519 public key.
func ParseReleaseKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("a release key is the base64 of a 32-byte Ed25519 public key")
	}
	return ed25519.PublicKey(b), nil
}

// SignRelease signs the release of a binary with a release private key and
// answers the signature in base64.
func SignRelease(key ed25519.PrivateKey, goos, arch, version, sha256hex string) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(key, ReleaseMessage(goos, arch, version, sha256hex)))
}

// ErrBadSignature: no trusted release key signed this release.
var ErrBadSignature = errors.New("the release's signature does not verify with a trusted release key")

// VerifyRelease checks that one of keys signed r (platform, version and
// SHA-256 as r states them). The caller still checks that the binary it
// got has r.SHA256.
func VerifyRelease(keys []ed25519.PublicKey, r Release) error {
	sig, err := base64.StdEncoding.DecodeString(r.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: the signature is not base64 of 64 bytes", ErrBadSignature)
	}
	msg := ReleaseMessage(r.OS, r.Arch, r.Version, r.SHA256)
	for _, k := range keys {
		if len(k) == ed25519.PublicKeySize && ed25519.Verify(k, msg, sig) {
			return nil
		}
	}
	return ErrBadSignature
}

// ErrTampered: a downloaded binary is not the one the release was signed for.
var ErrTampered = errors.New("the download does not match the signed release")

// VerifyDownload checks that sum, the SHA-256 of a downloaded binary, is
// the release's (VerifyRelease checked the release's signature).
func VerifyDownload(r Release, sum []byte) error {
	if got := hex.EncodeToString(sum); got != strings.ToLower(r.SHA256) {
		return fmt.Errorf("%w: SHA-256 %s, the release says %s", ErrTampered, got, r.SHA256)
	}
	return nil
}
