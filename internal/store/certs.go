package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/patchd/patchd/internal/dberr"
	"strings"
	"time"
)

// ServerCA is the certificate authority patchd made for itself, shared by
// every replica on the database.
type ServerCA struct {
	CertPEM   string
	KeyPEM    string
	SHA256    string // hex SHA-256 of the certificate's DER: the agents' pin
	CreatedAt time.Time
}

// EnsureServerCA stores ca as the server's CA unless one exists, and
// answers the one stored: when several replicas start at once, the first
// insert wins and every replica answers the same CA. The key is sealed.
func (s *Store) EnsureServerCA(ctx context.Context, ca ServerCA) (ServerCA, error) {
	key, err := s.seal(secretCAKey, "1", ca.KeyPEM)
	if err != nil {
		return ServerCA{}, fmt.Errorf("store: insert server CA: %w", err)
	}
	_, err = s.exec(ctx, `INSERT INTO server_ca (id, cert_pem, key_pem, sha256, created_at) VALUES (1, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`, ca.CertPEM, key, ca.SHA256, millis(ca.CreatedAt))
	if err != nil {
		return ServerCA{}, fmt.Errorf("store: insert server CA: %w", err)
	}
	got, err := s.ServerCA(ctx)
	if err != nil {
		return ServerCA{}, err
	}
	return got, nil
}

// ServerCA answers the stored CA, or dberr.ErrNotFound before the first start.
func (s *Store) ServerCA(ctx context.Context) (ServerCA, error) {
	var ca ServerCA
	var created int64
	// The writer: a replica that just inserted reads its own row at once.
	err := s.write.QueryRowContext(ctx, s.q(`SELECT cert_pem, key_pem, sha256, created_at FROM server_ca WHERE id = 1`)).
		Scan(&ca.CertPEM, &ca.KeyPEM, &ca.SHA256, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return ServerCA{}, fmt.Errorf("store: server CA: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return ServerCA{}, fmt.Errorf("store: server CA: %w", err)
	}
	if ca.KeyPEM, err = s.open(secretCAKey, "1", ca.KeyPEM); err != nil {
		return ServerCA{}, err
	}
	ca.CreatedAt = fromMillis(created)
	return ca, nil
}

// Names in server_tls.
const (
	// TLSPinName holds the pin of the serving replica: the hex SHA-256
	// enrollment tokens carry, empty when agents use their system store.
	TLSPinName = "pin"
	// ACMEPrefix prefixes the autocert cache's keys.
	ACMEPrefix = "acme/"
)

// TLSData answers the value stored under name, or dberr.ErrNotFound. The ACME
// cache's values (account and certificate keys) are sealed.
func (s *Store) TLSData(ctx context.Context, name string) ([]byte, error) {
	var data []byte
	err := s.write.QueryRowContext(ctx, s.q(`SELECT data FROM server_tls WHERE name = ?`), name).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: tls %s: %w", name, dberr.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: tls %s: %w", name, err)
	}
	if strings.HasPrefix(name, ACMEPrefix) {
		plain, err := s.open(secretTLSData, name, string(data))
		return []byte(plain), err
	}
	return data, nil
}

// PutTLSData stores data under name, replacing what was there.
func (s *Store) PutTLSData(ctx context.Context, name string, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	if strings.HasPrefix(name, ACMEPrefix) {
		sealed, err := s.seal(secretTLSData, name, string(data))
		if err != nil {
			return fmt.Errorf("store: put tls %s: %w", name, err)
		}
		data = []byte(sealed)
	}
	_, err := s.exec(ctx, `INSERT INTO server_tls (name, data, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`, name, data, millis(time.Now()))
	if err != nil {
		return fmt.Errorf("store: put tls %s: %w", name, err)
	}
	return nil
}

// DeleteTLSData removes name; a missing name is no error.
func (s *Store) DeleteTLSData(ctx context.Context, name string) error {
	if _, err := s.exec(ctx, `DELETE FROM server_tls WHERE name = ?`, name); err != nil {
		return fmt.Errorf("store: delete tls %s: %w", name, err)
	}
	return nil
}

// EnrollPin answers the pin enrollment tokens carry now ("" when agents
// use their system store, or before the server first started).
func (s *Store) EnrollPin(ctx context.Context) (string, error) {
	b, err := s.TLSData(ctx, TLSPinName)
	if errors.Is(err, dberr.ErrNotFound) {
		return "", nil
	}
	return string(b), err
}
