// Package secretbox seals the secrets patchd keeps in its database (the own
// CA's private key, TOTP seeds, OpenID client secrets, webhook secrets…)
// with a key kept outside it, so that a copy of the database without that
// key yields none of them.
//
// A Keyring holds one or more 256-bit keys: the first seals, every one
// opens (a rolling rotation keeps the old key beside the new one until
// nothing is sealed with it any more). Sealing is AES-256-GCM with a random
// 96-bit nonce; the sealed text is
//
//	pdsec1:<key id>:<base64url(nonce ‖ ciphertext ‖ tag)>
//
// and the associated data binds it to where it is stored (table, column and
// row), so that one row's sealed text does not open in another row. The key
// id is derived from the key (a hash prefix, which tells nothing of the key)
// and says which key of the ring opens a sealed text.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

// prefix starts every sealed text; a value without it is not sealed.
const prefix = "pdsec1:"

// Errors Open answers; test them with errors.Is.
var (
	// ErrUnknownKey: the text was sealed with a key the ring does not hold.
	ErrUnknownKey = errors.New("secretbox: sealed with a key this key ring does not hold")
	// ErrOpen: the text does not open (altered, cut, or moved from another
	// row) or is not a sealed text.
	ErrOpen = errors.New("secretbox: the sealed text does not open")
)

type key struct {
	id   string
	aead cipher.AEAD
}

// Keyring is a list of keys; the first seals.
type Keyring struct {
	keys []key
}

// New makes a key ring of raw keys, KeySize bytes each; the first seals.
func New(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("secretbox: no key")
	}
	r := &Keyring{}
	seen := map[string]bool{}
	for i, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("secretbox: key %d has %d bytes, want %d", i+1, len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("secretbox: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secretbox: %w", err)
		}
		id := KeyID(k)
		if seen[id] {
			continue
		}
		seen[id] = true
		r.keys = append(r.keys, key{id: id, aead: aead})
	}
	return r, nil
}

// KeyID is the id of a raw key: the first 8 bytes of a SHA-256 over a
// label and the key, in hex.
func KeyID(k []byte) string {
	sum := sha256.Sum256(append([]byte("patchd secretbox key id\x00"), k...))
	return hex.EncodeToString(sum[:8])
}

// NewKey makes a random key.
func NewKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k) // never fails (crypto/rand)
	return k
}

// EncodeKey writes a key as Parse reads it: standard base64.
func EncodeKey(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// Parse reads a key ring from text: keys in standard base64 (44
// characters), separated by new lines, spaces or commas; lines starting
// with '#' are comments. The first key seals.
func Parse(text string) (*Keyring, error) {
	var keys [][]byte
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			k, err := base64.StdEncoding.DecodeString(f)
			if err != nil || len(k) != KeySize {
				return nil, fmt.Errorf("secretbox: key %d is not %d bytes in base64 (make one with: head -c %d /dev/urandom | base64)",
					len(keys)+1, KeySize, KeySize)
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("secretbox: no key given")
	}
	return New(keys...)
}

// ReadFile reads a key ring file (Parse's format). A missing file answers
// an error that errors.Is(err, fs.ErrNotExist).
func ReadFile(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secretbox: read key file: %w", err)
	}
	r, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// CreateFile writes a new random key to path, which must not exist,
// readable by its owner only (0600; a missing folder is made 0700), and
// answers its key ring.
func CreateFile(path string) (*Keyring, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("secretbox: create key folder: %w", err)
	}
	k := NewKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("secretbox: create key file: %w", err)
	}
	_, err = f.WriteString("# patchd secret key: seals the secrets in the database. Keep it, and back it up apart from the database.\n" +
		EncodeKey(k) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("secretbox: write key file: %w", err)
	}
	return New(k)
}

// IsNotExist tells whether err is ReadFile's answer for a missing file.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// ID is the id of the key that seals.
func (r *Keyring) ID() string { return r.keys[0].id }

// IDs are the ids of every key, the sealing one first.
func (r *Keyring) IDs() []string {
	out := make([]string, len(r.keys))
	for i, k := range r.keys {
		out[i] = k.id
	}
	return out
}

// Has tells whether the ring holds the key with this id.
func (r *Keyring) Has(id string) bool { return r.find(id) != nil }

func (r *Keyring) find(id string) *key {
	for i := range r.keys {
		if r.keys[i].id == id {
			return &r.keys[i]
		}
	}
	return nil
}

// Seal seals plain with the first key, bound to ad (where it is stored).
func (r *Keyring) Seal(plain []byte, ad string) string {
	k := r.keys[0]
	head := prefix + k.id + ":"
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	rand.Read(nonce)
	out := k.aead.Seal(nonce, nonce, plain, []byte(head+ad))
	return head + base64.RawURLEncoding.EncodeToString(out)
}

// Open opens a sealed text bound to ad.
func (r *Keyring) Open(sealed, ad string) ([]byte, error) {
	id, body, ok := split(sealed)
	if !ok {
		return nil, ErrOpen
	}
	k := r.find(id)
	if k == nil {
		return nil, fmt.Errorf("%w (key %s)", ErrUnknownKey, id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < k.aead.NonceSize()+k.aead.Overhead() {
		return nil, ErrOpen
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, raw[:n], raw[n:], []byte(prefix+id+":"+ad))
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

// IsSealed tells whether v is a sealed text (as opposed to a value stored
// in clear).
func IsSealed(v string) bool { return strings.HasPrefix(v, prefix) }

// SealedKeyID answers the id of the key v was sealed with; ok is false
// when v is not a sealed text.
func SealedKeyID(v string) (id string, ok bool) {
	id, _, ok = split(v)
	return id, ok
}

func split(v string) (id, body string, ok bool) {
	rest, found := strings.CutPrefix(v, prefix)
	if !found {
		return "", "", false
	}
	id, body, ok = strings.Cut(rest, ":")
	return id, body, ok && len(id) == 16
}
