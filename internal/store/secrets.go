package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/secretbox"
)

// Secrets at rest. Every secret the database holds is sealed with the key
// ring given to Open (internal/secretbox): the store seals on write and
// opens on read, in the one method of each secret. The associated data of a
// sealed value is its table, column and row id, so a value copied into
// another row does not open. Password hashes, token hashes and passkeys'
// public keys are no secrets and stay as they are.

// SecretKey says where the key ring that seals the database's secrets
// comes from.
type SecretKey struct {
	// Text is the key ring itself (PATCHD_SECRET_KEY); it wins over File.
	Text string
	// File is the key ring file (--secret-key-file). When it does not exist
	// and the database holds no sealed secret yet, Open writes a new key to
	// it (0600).
	File string
}

func (k SecretKey) String() string {
	if k.Text != "" {
		return "PATCHD_SECRET_KEY"
	}
	return "the key file " + k.File
}

// ErrSecretKey: the key ring given does not open the database's secrets.
var ErrSecretKey = errors.New("the secret key does not open this database's secrets")

// secretColumn is a column that holds a secret.
type secretColumn struct {
	table, column, id string
	// where narrows the rows that hold a secret ('' is every row).
	where string
	// blob: the column is BLOB/BYTEA; intID: the id column is an integer.
	blob, intID bool
}

// ad is the associated data a value of the row id is sealed with.
func (c secretColumn) ad(id string) string { return c.table + "." + c.column + "/" + id }

func (c secretColumn) name() string { return c.table + "." + c.column }

var (
	secretCAKey       = secretColumn{table: "server_ca", column: "key_pem", id: "id", intID: true}
	secretTLSData     = secretColumn{table: "server_tls", column: "data", id: "name", where: "name LIKE 'acme/%'", blob: true}
	secretTOTP        = secretColumn{table: "users", column: "totp_secret", id: "id"}
	secretPendingTOTP = secretColumn{table: "console_sessions", column: "pending_totp", id: "id_hash"}
	secretSSOClient   = secretColumn{table: "sso_configs", column: "client_secret", id: "org_id"}
	secretPKCE        = secretColumn{table: "sso_logins", column: "pkce_verifier", id: "state_hash"}
	secretWebhook     = secretColumn{table: "alert_rules", column: "webhook_secret", id: "id"}
)

// secretColumns are every column that holds a secret.
var secretColumns = []secretColumn{secretCAKey, secretTLSData, secretTOTP, secretPendingTOTP, secretSSOClient, secretPKCE, secretWebhook}

// The value secret_check seals, and where.
const (
	checkPlain = "patchd secret check"
	checkAD    = "secret_check.sealed/1"
)

// errNoKey answers a store opened without a key ring (a backup's) that is
// asked for a secret.
var errNoKey = errors.New("store: no secret key given")

// seal seals a secret for the row id of c; "" stays "" (no secret).
func (s *Store) seal(c secretColumn, id, plain string) (string, error) {
	if plain == "" {
		return "", nil
	}
	ring := s.keys.Load()
	if ring == nil {
		return "", errNoKey
	}
	return ring.Seal([]byte(plain), c.ad(id)), nil
}

// open opens a secret of the row id of c. A value stored in clear (written
// by an older version during a rolling upgrade) is answered as it is; the
// next start seals it.
func (s *Store) open(c secretColumn, id, stored string) (string, error) {
	if stored == "" || !secretbox.IsSealed(stored) {
		return stored, nil
	}
	ring := s.keys.Load()
	if ring == nil {
		return "", errNoKey
	}
	plain, err := ring.Open(stored, c.ad(id))
	if err != nil {
		return "", fmt.Errorf("store: %s of %s: %w", c.name(), id, err)
	}
	return string(plain), nil
}

// loadSecretKey reads the key ring k names; nil without error when k's
// file does not exist.
func loadSecretKey(k SecretKey) (*secretbox.Keyring, error) {
	if k.Text != "" {
		ring, err := secretbox.Parse(k.Text)
		if err != nil {
			return nil, fmt.Errorf("store: PATCHD_SECRET_KEY: %w", err)
		}
		return ring, nil
	}
	if k.File == "" {
		return nil, fmt.Errorf("%w: give --secret-key-file or PATCHD_SECRET_KEY", errNoKey)
	}
	ring, err := secretbox.ReadFile(k.File)
	if secretbox.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return ring, nil
}

// openSecrets loads the key ring, checks that it opens the database's
// secrets and seals those stored in clear (a database of an older version).
// On a database that holds no sealed secret yet, a missing key file is
// created with a new key.
func (s *Store) openSecrets(ctx context.Context, k SecretKey) error {
	ring, err := loadSecretKey(k)
	if err != nil {
		return err
	}
	return s.scrubbing(ctx, func() (int, error) {
		var n int
		err := s.InTx(ctx, func(tx *Tx) error {
			if err := tx.secretLock(ctx); err != nil {
				return err
			}
			var keyID, sealed string
			err := tx.queryRow(ctx, `SELECT key_id, sealed FROM secret_check WHERE id = 1`).Scan(&keyID, &sealed)
			switch {
			case err == nil:
				if ring == nil {
					return fmt.Errorf("store: %w: this database's secrets are sealed with key %s, and %s does not exist: "+
						"give this server the secret key of the servers that use this database (docs/security.md, Secrets at rest)", ErrSecretKey, keyID, k.File)
				}
				if _, err := ring.Open(sealed, checkAD); err != nil {
					return fmt.Errorf("store: %w: this database's secrets are sealed with key %s; %s holds key %s: "+
						"give this server the secret key of the servers that use this database (docs/security.md, Secrets at rest)",
						ErrSecretKey, keyID, k, strings.Join(ring.IDs(), ", "))
				}
			case errors.Is(err, sql.ErrNoRows):
				if ring == nil {
					if ring, err = secretbox.CreateFile(k.File); err != nil {
						return fmt.Errorf("store: %w", err)
					}
				}
				if _, err := tx.exec(ctx, `INSERT INTO secret_check (id, key_id, sealed, created_at) VALUES (1, ?, ?, ?)`,
					ring.ID(), ring.Seal([]byte(checkPlain), checkAD), millis(time.Now())); err != nil {
					return fmt.Errorf("store: record the secret key: %w", err)
				}
			default:
				return fmt.Errorf("store: read secret_check: %w", err)
			}
			if n, err = tx.reseal(ctx, ring, nil, false); err != nil {
				return err
			}
			s.keys.Store(ring)
			return nil
		})
		return n, err
	})
}

// scrubbing runs fn, which seals values stored in clear (or with a retired
// key) again, with SQLite's secure_delete on, and empties the write-ahead
// log after when fn wrote any: the values replaced are overwritten in the
// database file instead of lingering in its free pages and its log, for a
// copy of the files to find.
func (s *Store) scrubbing(ctx context.Context, fn func() (int, error)) error {
	if s.engine != SQLite {
		_, err := fn()
		return err
	}
	if _, err := s.write.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
		return fmt.Errorf("store: secure_delete: %w", err)
	}
	n, err := fn()
	if _, offErr := s.write.ExecContext(ctx, `PRAGMA secure_delete = OFF`); err == nil && offErr != nil {
		err = fmt.Errorf("store: secure_delete: %w", offErr)
	}
	if err != nil || n == 0 {
		return err
	}
	if _, err := s.write.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("store: checkpoint after sealing: %w", err)
	}
	return nil
}

// secretLock keeps PostgreSQL replicas that start (or rotate) together
// from sealing the same rows twice.
func (tx *Tx) secretLock(ctx context.Context) error {
	if tx.s.engine != Postgres {
		return nil
	}
	if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(7202)`); err != nil {
		return fmt.Errorf("store: secrets lock: %w", err)
	}
	return nil
}

type secretRow struct {
	id     any // the row's id, as the UPDATE takes it
	idText string
	value  string
}

func (tx *Tx) secretRows(ctx context.Context, c secretColumn) ([]secretRow, error) {
	where := "length(" + c.column + ") > 0"
	if c.where != "" {
		where += " AND " + c.where
	}
	rows, err := tx.query(ctx, `SELECT CAST(`+c.id+` AS TEXT), `+c.column+` FROM `+c.table+` WHERE `+where)
	var out []secretRow
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var r secretRow
		var v []byte
		if err := row.Scan(&r.idText, &v); err != nil {
			return err
		}
		r.value, r.id = string(v), r.idText
		if c.intID {
			r.id = 1
			if r.idText != "1" {
				return fmt.Errorf("unexpected row %s", r.idText)
			}
		}
		out = append(out, r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: read %s: %w", c.name(), err)
	}
	return out, nil
}

// reseal seals with next's first key the secrets stored in clear and, with
// all, every sealed one too (opened with next or old; old may be nil). A
// value sealed with a key neither holds fails it. It answers how many
// values it wrote.
func (tx *Tx) reseal(ctx context.Context, next, old *secretbox.Keyring, all bool) (int, error) {
	unknown := map[string]int{}
	written := 0
	for _, c := range secretColumns {
		rows, err := tx.secretRows(ctx, c)
		if err != nil {
			return 0, err
		}
		for _, r := range rows {
			plain := []byte(r.value)
			if id, sealed := secretbox.SealedKeyID(r.value); sealed {
				var ring *secretbox.Keyring
				switch {
				case next.Has(id):
					ring = next
				case old != nil && old.Has(id):
					ring = old
				default:
					unknown[id]++
					continue
				}
				if !all && ring == next {
					continue
				}
				if plain, err = ring.Open(r.value, c.ad(r.idText)); err != nil {
					return 0, fmt.Errorf("store: %s of %s: %w", c.name(), r.idText, err)
				}
			}
			sealed := next.Seal(plain, c.ad(r.idText))
			var value, was any = sealed, r.value
			if c.blob {
				value, was = []byte(sealed), []byte(r.value)
			}
			// Only if unchanged meanwhile (a replica may write it).
			if _, err := tx.exec(ctx, `UPDATE `+c.table+` SET `+c.column+` = ? WHERE `+c.id+` = ? AND `+c.column+` = ?`, value, r.id, was); err != nil {
				return 0, fmt.Errorf("store: seal %s of %s: %w", c.name(), r.idText, err)
			}
			written++
		}
	}
	if len(unknown) > 0 {
		var ids []string
		for id, n := range unknown {
			ids = append(ids, fmt.Sprintf("%s (%d)", id, n))
		}
		sort.Strings(ids)
		return 0, fmt.Errorf("store: %w: this database holds secrets sealed with key %s, which the key ring given (key %s) does not hold: "+
			"give this server the secret key of the servers that use this database (docs/security.md, Secrets at rest)",
			ErrSecretKey, strings.Join(ids, ", "), strings.Join(next.IDs(), ", "))
	}
	return written, nil
}

// RotateSecretKey seals every secret again with next's first key, in one
// transaction: those sealed with a key of next or of the store's key ring,
// and those in clear. Once it returned, next's first key opens them all;
// the store uses next from then on. A nil next is the store's own key ring
// (the last step of a rolling rotation, once its first key is the new
// one). It answers how many secrets it sealed.
func (s *Store) RotateSecretKey(ctx context.Context, next *secretbox.Keyring) (int, error) {
	old := s.keys.Load()
	if old == nil {
		return 0, errNoKey
	}
	if next == nil {
		next = old
	}
	var n int
	err := s.scrubbing(ctx, func() (int, error) {
		err := s.InTx(ctx, func(tx *Tx) error {
			if err := tx.secretLock(ctx); err != nil {
				return err
			}
			var err error
			if n, err = tx.reseal(ctx, next, old, true); err != nil {
				return err
			}
			_, err = tx.exec(ctx, `UPDATE secret_check SET key_id = ?, sealed = ?, created_at = ? WHERE id = 1`,
				next.ID(), next.Seal([]byte(checkPlain), checkAD), millis(time.Now()))
			if err != nil {
				return fmt.Errorf("store: record the secret key: %w", err)
			}
			return nil
		})
		return n, err
	})
	if err != nil {
		return 0, err
	}
	s.keys.Store(next)
	return n, nil
}

// SecretStatus counts the secrets the database holds by the key that
// sealed them.
type SecretStatus struct {
	// KeyID is the key the store seals with (the first of its ring).
	KeyID string `json:"keyId"`
	// Keys are the ids of every key of the store's ring.
	Keys []string `json:"keys"`
	// CheckKeyID is the key that sealed secret_check (the last first
	// start or rotation).
	CheckKeyID string `json:"checkKeyId"`
	// Sealed counts the sealed secrets by key id; Clear those in clear.
	Sealed map[string]int `json:"sealed"`
	Clear  int            `json:"clear"`
	// Columns counts the secrets by table.column.
	Columns map[string]int `json:"columns"`
}

// SecretStatus reads where the database's secrets stand.
func (s *Store) SecretStatus(ctx context.Context) (SecretStatus, error) {
	st := SecretStatus{Sealed: map[string]int{}, Columns: map[string]int{}}
	if ring := s.keys.Load(); ring != nil {
		st.KeyID, st.Keys = ring.ID(), ring.IDs()
	}
	err := s.InTx(ctx, func(tx *Tx) error {
		err := tx.queryRow(ctx, `SELECT key_id FROM secret_check WHERE id = 1`).Scan(&st.CheckKeyID)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: read secret_check: %w", err)
		}
		for _, c := range secretColumns {
			rows, err := tx.secretRows(ctx, c)
			if err != nil {
				return err
			}
			for _, r := range rows {
				st.Columns[c.name()]++
				if id, ok := secretbox.SealedKeyID(r.value); ok {
					st.Sealed[id]++
				} else {
					st.Clear++
				}
			}
		}
		return nil
	})
	return st, err
}
