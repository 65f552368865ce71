// Package auth issues and checks the credentials of API clients: client
// secrets, OAuth bearer tokens (cached in memory, revoked across replicas
// through the store), the failed-secret limiter, and console passwords.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Prefixes of the secrets patchd makes; they let secret scanners find leaks.
const (
	PrefixClientID     = "pdc_"
	PrefixClientSecret = "pds_"
	PrefixAccessToken  = "pdt_"
	PrefixEnrollToken  = "pde_"
	PrefixAgentSecret  = "pda_"
)

// NewSecret returns prefix followed by 256 random bits in base64url.
func NewSecret(prefix string) string {
	var b [32]byte
	rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// NewClientID returns a client id: shorter than a secret, still unguessable.
func NewClientID() string {
	var b [16]byte
	rand.Read(b[:])
	return PrefixClientID + hex.EncodeToString(b[:])
}

// HashSecret is the stored form of a random secret. The secrets carry 256
// bits of entropy, so one SHA-256 is as strong as a slow hash and keeps the
// hot path cheap; passwords, which people choose, use HashPassword.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretMatches compares a secret with its stored hash in constant time.
func SecretMatches(secret, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(HashSecret(secret)), []byte(hash)) == 1
}

// argon2id parameters (RFC 9106's second recommended option, with 64 MiB).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024
	argonThreads = 2
	argonKeyLen  = 32
)

// HashPassword hashes a console password with argon2id, in the PHC string format.
func HashPassword(password string) string {
	var salt [16]byte
	rand.Read(salt[:])
	key := argon2.IDKey([]byte(password), salt[:], argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt[:]), base64.RawStdEncoding.EncodeToString(key))
}

// CheckPassword tells whether password matches a hash made by HashPassword.
func CheckPassword(password, encoded string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errors.New("auth: not an argon2id hash")
	}
	var version int
	var mem uint32
	var iters uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil {
		return false, fmt.Errorf("auth: argon2id version: %w", err)
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iters, &threads); err != nil {
		return false, fmt.Errorf("auth: argon2id parameters: %w", err)
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false, fmt.Errorf("auth: argon2id salt: %w", err)
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil {
		return false, fmt.Errorf("auth: argon2id key: %w", err)
	}
	got := argon2.IDKey([]byte(password), salt, iters, mem, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
