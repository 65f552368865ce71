package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/updates"
)

// ConsoleUser is a console user with its role.
type ConsoleUser struct {
	User
	RoleName    string
	Permissions perm.Set
}

// consoleUserColumns read a person as a member of one organization (m):
// OrgID and RoleID are the membership's, so that every check made of a
// ConsoleUser is of that organization.
const consoleUserColumns = `u.id, m.org_id, u.email, m.role_id, u.disabled, u.instance_operator, u.created_at, u.password_hash, r.name, r.permissions,
	u.totp_secret <> '', u.must_change_password, (SELECT COUNT(*) FROM user_passkeys pk WHERE pk.user_id = u.id),
	COALESCE((SELECT i.expires_at FROM user_invitations i WHERE i.user_id = u.id), 0), u.operator_sso, u.create_orgs`

// consoleUserFrom joins a person to its memberships and their roles.
const consoleUserFrom = ` users u JOIN memberships m ON m.user_id = u.id JOIN roles r ON r.id = m.role_id AND r.org_id = m.org_id `

func scanConsoleUser(row interface{ Scan(...any) error }) (ConsoleUser, error) {
	var u ConsoleUser
	var created int64
	var permText string
	var invitationExpires int64
	if err := row.Scan(&u.ID, &u.OrgID, &u.Email, &u.RoleID, &u.Disabled, &u.InstanceOperator, &created, &u.PasswordHash, &u.RoleName, &permText,
		&u.TOTP, &u.MustChangePassword, &u.Passkeys, &invitationExpires, &u.OperatorSSO, &u.CreateOrgs); err != nil {
		return u, err
	}
	if invitationExpires != 0 {
		u.InvitationExpiresAt = fromMillis(invitationExpires)
	}
	u.SecondFactor = u.TOTP || u.Passkeys > 0
	u.CreatedAt = fromMillis(created)
	p, err := perm.Parse(permText)
	if err != nil {
		return u, err
	}
	u.Permissions = p
	return u, nil
}

func (s *Store) listConsoleUsers(ctx context.Context, what, where string, args ...any) ([]ConsoleUser, error) {
	rows, err := s.query(ctx, `SELECT `+consoleUserColumns+` FROM`+consoleUserFrom+`WHERE `+where+
		` ORDER BY u.created_at, u.id, m.created_at, m.org_id`, args...)
	var out []ConsoleUser
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		u, err := scanConsoleUser(r)
		out = append(out, u)
		return err
	}); err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return out, nil
}

// UsersByEmail finds the people with an e-mail address (lower case), oldest
// first, each as a member of the organization a sign-in opens (the one it
// switched to last while it belongs to it, else its oldest membership):
// sign-in does not name an organization.
func (s *Store) UsersByEmail(ctx context.Context, email string) ([]ConsoleUser, error) {
	return s.listConsoleUsers(ctx, "users by e-mail", `u.email = ? AND m.org_id = `+entryOrg, email)
}

// MembersByEmail finds every membership of the people with an e-mail
// address (lower case): one ConsoleUser per organization a person belongs
// to.
func (s *Store) MembersByEmail(ctx context.Context, email string) ([]ConsoleUser, error) {
	return s.listConsoleUsers(ctx, "members by e-mail", `u.email = ?`, email)
}

// entryOrg is the organization a sign-in of person u opens.
const entryOrg = `(SELECT em.org_id FROM memberships em WHERE em.user_id = u.id
	ORDER BY CASE WHEN em.org_id = u.last_org_id THEN 0 ELSE 1 END, em.created_at, em.org_id LIMIT 1)`

// ListUsers lists the organization's members, oldest first.
func (s *Store) ListUsers(ctx context.Context, orgID string) ([]ConsoleUser, error) {
	return s.listConsoleUsers(ctx, "list users", `m.org_id = ?`, orgID)
}

// CountUsers counts the organization's members.
func (s *Store) CountUsers(ctx context.Context, orgID string) (int, error) {
	var n int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM memberships WHERE org_id = ?`, orgID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count users: %w", err)
	}
	return n, nil
}

// CreateFirstUser creates the organization's first console user; when the
// organization has a user already it answers dberr.ErrConflict, so that two
// first-run forms sent at once make one administrator.
//
// The user becomes an instance operator, and ie records it in the
// instance's Audit Trail, when both hold in the transaction that creates
// it: the instance has no operator (no user of any organization holds the
// attribute, enabled or disabled), and the proof is the credential the
// first start made (proofCredentialID names one created by
// FirstStartActor). Users, invitations and operators-to-be of other
// organizations change nothing; an Administrator credential made later
// for any organization never makes an operator: whoever holds one must not
// gain power over the other organizations.
func (s *Store) CreateFirstUser(ctx context.Context, e *AuditEntry, ie *InstanceEvent, u User, proofCredentialID string) (User, error) {
	u.ID = NewID()
	u.CreatedAt = time.Now().UTC()
	e.TargetID = u.ID
	err := s.Audited(ctx, e, func(tx *Tx) error {
		if tx.s.engine == Postgres {
			// Two first-run forms of two organizations at once, or a
			// grant on the command line meanwhile: the operator
			// check below sees the other's user.
			if _, err := tx.exec(ctx, `LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE`); err != nil {
				return fmt.Errorf("store: lock users: %w", err)
			}
		}
		var inOrg, operators int
		if err := tx.queryRow(ctx, `SELECT (SELECT COUNT(*) FROM memberships WHERE org_id = ?), COUNT(CASE WHEN instance_operator = TRUE THEN 1 END) FROM users`,
			u.OrgID).Scan(&inOrg, &operators); err != nil {
			return fmt.Errorf("store: count users: %w", err)
		}
		if inOrg > 0 {
			return fmt.Errorf("store: the organization has console users already: %w", dberr.ErrConflict)
		}
		var firstStart int
		if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM credentials WHERE id = ? AND org_id = ? AND created_by = ?`,
			proofCredentialID, u.OrgID, FirstStartActor).Scan(&firstStart); err != nil {
			return fmt.Errorf("store: read the proof's credential: %w", err)
		}
		u.InstanceOperator = operators == 0 && firstStart == 1
		return tx.insertPerson(ctx, ie, u)
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// SetUserDisabled disables or enables a console user; disabling ends the
// user's sessions in the same transaction. Disabling the last enabled
// instance operator answers ErrLastOperator.
func (s *Store) SetUserDisabled(ctx context.Context, e *AuditEntry, orgID, id string, disabled bool) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		if err := tx.onlyMember(ctx, e, orgID, id); err != nil {
			return err
		}
		if disabled {
			if err := tx.keepAnOperator(ctx, "", id); err != nil {
				return err
			}
		}
		res, err := tx.exec(ctx, `UPDATE users SET disabled = ? WHERE id = ?`+memberOf, disabled, id, orgID)
		if err != nil {
			return fmt.Errorf("store: disable user: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		if disabled {
			if _, err := tx.exec(ctx, `DELETE FROM console_sessions WHERE user_id = ?`, id); err != nil {
				return fmt.Errorf("store: end user sessions: %w", err)
			}
		}
		return nil
	})
}

// DeleteUser deletes a console user and its sessions. A person who
// belongs to other organizations too only leaves this one (its membership
// and its sessions in the organization go; e's summary says
// membershipOnly). Deleting the last enabled instance operator answers
// ErrLastOperator.
func (s *Store) DeleteUser(ctx context.Context, e *AuditEntry, orgID, id string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		others, err := tx.otherOrgs(ctx, orgID, id)
		if err != nil {
			return err
		}
		if others > 0 {
			if e.Summary == nil {
				e.Summary = map[string]any{}
			}
			e.Summary["membershipOnly"] = true
			return tx.removeMembership(ctx, orgID, id)
		}
		if err := tx.keepAnOperator(ctx, "", id); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM console_sessions WHERE user_id = ? AND org_id = ?`, id, orgID); err != nil {
			return fmt.Errorf("store: end user sessions: %w", err)
		}
		res, err := tx.exec(ctx, `DELETE FROM users WHERE id = ?`+memberOf, id, orgID)
		if err != nil {
			return fmt.Errorf("store: delete user: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		return nil
	})
}

// ListRoles lists the organization's roles, built-in ones first.
func (s *Store) ListRoles(ctx context.Context, orgID string) ([]Role, error) {
	rows, err := s.query(ctx, `SELECT id, org_id, name, permissions, builtin, created_at FROM roles WHERE org_id = ?
		ORDER BY builtin DESC, name, id`, orgID)
	var out []Role
	var badRole error
	err = eachRow(rows, err, func(row *sql.Rows) error {
		var r Role
		var permText string
		var created int64
		if err := row.Scan(&r.ID, &r.OrgID, &r.Name, &permText, &r.Builtin, &created); err != nil {
			return err
		}
		var err error
		if r.Permissions, err = perm.Parse(permText); err != nil {
			badRole = fmt.Errorf("store: role %s: %w", r.Name, err)
			return errStopRows
		}
		r.CreatedAt = fromMillis(created)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list roles: %w", err)
	}
	if badRole != nil {
		return nil, badRole
	}
	return out, nil
}

// Session stages: a session that is not yet signed in opens only the page
// of its stage.
const (
	StageSignedIn = ""
	// StageMFA waits for the second factor (a TOTP or recovery code).
	StageMFA = "mfa"
	// StageEnroll must set up a second factor (the organization requires
	// one) before anything else.
	StageEnroll = "enroll"
	// StagePassword must choose a new password (an administrator reset it).
	StagePassword = "password"
)

// ConsoleSession is a console user's session.
type ConsoleSession struct {
	CSRFToken  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	IP         string
	UserAgent  string
	Stage      string
	// PendingTOTP is a TOTP secret being enrolled, until confirmed.
	PendingTOTP string
	User        ConsoleUser
}

// CreateConsoleSession stores a session under the hash of its id.
func (s *Store) CreateConsoleSession(ctx context.Context, idHash, csrf string, u ConsoleUser, ip, userAgent, stage string, now time.Time) error {
	_, err := s.exec(ctx, `INSERT INTO console_sessions (id_hash, user_id, org_id, csrf_token, created_at, last_seen_at, ip, user_agent, stage)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, idHash, u.ID, u.OrgID, csrf, millis(now), millis(now), ip, userAgent, stage)
	if err != nil {
		return fmt.Errorf("store: create console session: %w", err)
	}
	return nil
}

// GetConsoleSession resolves a session id hash; the session of a disabled
// or deleted user is not found.
func (s *Store) GetConsoleSession(ctx context.Context, idHash string) (ConsoleSession, error) {
	var cs ConsoleSession
	var created, seen int64
	row := s.queryRow(ctx, `SELECT cs.csrf_token, cs.created_at, cs.last_seen_at, cs.ip, cs.user_agent, cs.stage, cs.pending_totp, `+consoleUserColumns+`
		FROM console_sessions cs JOIN users u ON u.id = cs.user_id
		JOIN memberships m ON m.user_id = u.id AND m.org_id = cs.org_id JOIN roles r ON r.id = m.role_id AND r.org_id = m.org_id
		WHERE cs.id_hash = ? AND u.disabled = FALSE`, idHash)
	u, err := scanConsoleUser(prefixScanner{row, []any{&cs.CSRFToken, &created, &seen, &cs.IP, &cs.UserAgent, &cs.Stage, &cs.PendingTOTP}})
	if errors.Is(err, sql.ErrNoRows) {
		return cs, fmt.Errorf("store: console session: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return cs, fmt.Errorf("store: console session: %w", err)
	}
	if cs.PendingTOTP, err = s.open(secretPendingTOTP, idHash, cs.PendingTOTP); err != nil {
		return cs, err
	}
	cs.User = u
	cs.CreatedAt, cs.LastSeenAt = fromMillis(created), fromMillis(seen)
	return cs, nil
}

// prefixScanner scans leading columns into its own destinations, then the
// rest into the caller's.
type prefixScanner struct {
	row    interface{ Scan(...any) error }
	prefix []any
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.row.Scan(append(append([]any(nil), p.prefix...), dest...)...)
}

// TouchConsoleSession records the session's last use.
func (s *Store) TouchConsoleSession(ctx context.Context, idHash string, now time.Time) error {
	if _, err := s.exec(ctx, `UPDATE console_sessions SET last_seen_at = ? WHERE id_hash = ?`, millis(now), idHash); err != nil {
		return fmt.Errorf("store: touch console session: %w", err)
	}
	return nil
}

// DeleteConsoleSession ends a session (sign-out, expiry).
func (s *Store) DeleteConsoleSession(ctx context.Context, idHash string) error {
	if _, err := s.exec(ctx, `DELETE FROM console_sessions WHERE id_hash = ?`, idHash); err != nil {
		return fmt.Errorf("store: delete console session: %w", err)
	}
	return nil
}

// PruneConsoleSessions deletes sessions idle since before idle or created
// before created.
func (s *Store) PruneConsoleSessions(ctx context.Context, idle, created time.Time) error {
	if _, err := s.exec(ctx, `DELETE FROM console_sessions WHERE last_seen_at < ? OR created_at < ?`, millis(idle), millis(created)); err != nil {
		return fmt.Errorf("store: prune console sessions: %w", err)
	}
	return nil
}

// FleetSummary is what the console's dashboard shows of a fleet.
type FleetSummary struct {
	Endpoints     int
	Connected     int
	PendingReboot int
	// MissingBySeverity counts missing updates (endpoint × update rows) by
	// the key's severity; EndpointsBySeverity counts endpoints missing at
	// least one update of the severity.
	MissingBySeverity   map[string]int
	EndpointsBySeverity map[string]int
	// UpdatesBySeverity counts the updates (keys) missing somewhere, by
	// severity: the rows of the updates list filtered by that severity.
	UpdatesBySeverity map[string]int
	// Platforms counts endpoints per platform.
	Platforms map[string]int
}

// FleetSummary counts the organization's endpoints and missing updates.
func (s *Store) FleetSummary(ctx context.Context, orgID string, connectedSince time.Time) (FleetSummary, error) {
	f := FleetSummary{MissingBySeverity: map[string]int{}, EndpointsBySeverity: map[string]int{}, UpdatesBySeverity: map[string]int{}, Platforms: map[string]int{}}
	err := s.InReadTx(ctx, func(r *ReadTx) error {
		// One pass over the endpoints, missing updates included: the
		// counters the inventory writer keeps per endpoint (migration 030).
		var c, e [5]int
		if err := r.queryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN `+seenConnected+` THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN pending_reboot THEN 1 ELSE 0 END), 0), `+missingSums+` FROM `+endpointsSeen+` WHERE e.org_id = ?`,
			millis(connectedSince), orgID).Scan(&f.Endpoints, &f.Connected, &f.PendingReboot,
			&c[0], &e[0], &c[1], &e[1], &c[2], &e[2], &c[3], &e[3], &c[4], &e[4]); err != nil {
			return err
		}
		for i, sev := range updates.Severities {
			f.MissingBySeverity[sev], f.EndpointsBySeverity[sev] = c[i], e[i]
		}
		// As ListUpdateKeys counts them.
		rows, err := r.query(ctx, `SELECT severity, COUNT(*) FROM update_keys WHERE org_id = ? AND endpoints > 0 GROUP BY severity`, orgID)
		if err := eachRow(rows, err, func(row *sql.Rows) error {
			var sev string
			var n int
			err := row.Scan(&sev, &n)
			f.UpdatesBySeverity[sev] = n
			return err
		}); err != nil {
			return err
		}
		rows, err = r.query(ctx, `SELECT platform, COUNT(*) FROM endpoints WHERE org_id = ? GROUP BY platform`, orgID)
		return eachRow(rows, err, func(row *sql.Rows) error {
			var p string
			var n int
			err := row.Scan(&p, &n)
			f.Platforms[p] = n
			return err
		})
	})
	if err != nil {
		return f, fmt.Errorf("store: fleet summary: %w", err)
	}
	return f, nil
}

// missingSums are, per severity in the order of updates.Severities, the
// missing updates and the endpoints missing one, from the endpoints'
// counters.
var missingSums = func() string {
	var b strings.Builder
	for i, col := range missingColumns {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "COALESCE(SUM(%s), 0), COALESCE(SUM(CASE WHEN %s > 0 THEN 1 ELSE 0 END), 0)", col, col)
	}
	return b.String()
}()

// missingColumns are the endpoints' counters of missing updates, in the
// order of updates.Severities; missingTotal is their sum.
var missingColumns = []string{"missing_critical", "missing_important", "missing_moderate", "missing_low", "missing_unspecified"}

const missingTotal = `(e.missing_critical + e.missing_important + e.missing_moderate + e.missing_low + e.missing_unspecified)`

// UpdateKeyRow is one update across the fleet: a key of the catalog with
// the number of endpoints missing it and its approval.
type UpdateKeyRow struct {
	Key, Title, KB, Severity, Source string
	RebootRequired                   bool
	Endpoints                        int
	Approval                         string
	ReleaseDate                      *time.Time
	FirstSeenAt                      time.Time
	// Risk is what the update fixes and the severity and risk it gives.
	Risk apiv1.UpdateRisk
}

// UpdateKeyQuery filters ListUpdateKeys.
type UpdateKeyQuery struct {
	OrgID    string
	Q        string // substring of the title, KB or key
	Severity string
	Sources  []string
	Approval string // NEW, APPROVED or DECLINED; empty: any
	Key      string // exactly this key
	// Sort is one of UpdateKeySorts (default "endpoints", most first);
	// Desc reverses the ascending order.
	Sort   string
	Desc   bool
	Limit  int
	Offset int
}

// EndpointsMissing lists the organization's endpoints that miss at least
// one of keys.
func (s *Store) EndpointsMissing(ctx context.Context, orgID string, keys []string) ([]string, error) {
	var out []string
	for start := 0; start < len(keys); start += 500 { // within every engine's parameter limit
		part := keys[start:min(start+500, len(keys))]
		args := []any{orgID}
		for _, k := range part {
			args = append(args, k)
		}
		rows, err := s.query(ctx, `SELECT DISTINCT endpoint_id FROM endpoint_updates WHERE org_id = ? AND key IN (`+placeholders(len(part))+`)`, args...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var id string
			out = append(out, id)
			return r.Scan(&out[len(out)-1])
		}); err != nil {
			return nil, fmt.Errorf("store: endpoints missing updates: %w", err)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// UpdateKeySorts are the orders of the updates list.
var UpdateKeySorts = []string{"endpoints", "severity", "risk", "released", "title"}

// updateKeyOrder is the ORDER BY of a sort, ascending or not; ties by key.
func updateKeyOrder(sort string, desc bool) string {
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	switch sort {
	case "severity":
		return ` ORDER BY CASE k.severity WHEN 'Critical' THEN 0 WHEN 'Important' THEN 1 WHEN 'Moderate' THEN 2 WHEN 'Low' THEN 3 ELSE 4 END` + dir + `, k.endpoints DESC, k.key`
	case "risk":
		// Highest first by default.
		dir = " DESC"
		if desc {
			dir = " ASC"
		}
		return ` ORDER BY k.risk` + dir + `, k.endpoints DESC, k.key`
	case "released":
		return ` ORDER BY CASE WHEN k.release_date IS NULL THEN 1 ELSE 0 END, k.release_date` + dir + `, k.key`
	case "title":
		return ` ORDER BY lower(k.title)` + dir + `, k.key`
	}
	if sort == "" {
		dir = " DESC" // the default: most widespread first
	}
	return ` ORDER BY k.endpoints` + dir + `, k.key`
}

// ListUpdateKeys pages the updates missing somewhere in the fleet, one row
// per key, most widespread first (or as q.Sort says).
func (s *Store) ListUpdateKeys(ctx context.Context, q UpdateKeyQuery) ([]UpdateKeyRow, int, error) {
	where := `k.org_id = ? AND k.endpoints > 0`
	args := []any{q.OrgID}
	if q.Q != "" {
		p := likePattern(q.Q)
		where += ` AND (lower(k.title) LIKE ? ESCAPE '\' OR lower(COALESCE(k.kb, '')) LIKE ? ESCAPE '\' OR lower(k.key) LIKE ? ESCAPE '\')`
		args = append(args, p, p, p)
	}
	if q.Severity != "" {
		where += ` AND k.severity = ?`
		args = append(args, q.Severity)
	}
	if len(q.Sources) > 0 {
		where += ` AND k.source IN (?` + repeatPlaceholders(len(q.Sources)-1) + `)`
		for _, src := range q.Sources {
			args = append(args, src)
		}
	}
	if q.Approval != "" {
		where += ` AND COALESCE(a.status, 'NEW') = ?`
		args = append(args, q.Approval)
	}
	if q.Key != "" {
		where += ` AND k.key = ?`
		args = append(args, q.Key)
	}
	from := ` FROM update_keys k LEFT JOIN update_approvals a ON a.org_id = k.org_id AND a.key = k.key WHERE ` + where
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*)`+from, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count update keys: %w", err)
	}
	rows, err := s.query(ctx, `SELECT k.key, k.title, COALESCE(k.kb, ''), k.severity, k.source, k.reboot_required, k.endpoints,
		COALESCE(a.status, 'NEW'), k.release_date, k.first_seen_at`+from+updateKeyOrder(q.Sort, q.Desc)+` LIMIT ? OFFSET ?`,
		append(args, q.Limit, q.Offset)...)
	var out []UpdateKeyRow
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var k UpdateKeyRow
		var release sql.NullInt64
		var first int64
		if err := r.Scan(&k.Key, &k.Title, &k.KB, &k.Severity, &k.Source, &k.RebootRequired, &k.Endpoints, &k.Approval, &release, &first); err != nil {
			return err
		}
		k.ReleaseDate, k.FirstSeenAt = nullTime(release), fromMillis(first)
		out = append(out, k)
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("store: list update keys: %w", err)
	}
	keys := make([]string, len(out))
	for i, k := range out {
		keys[i] = k.Key
	}
	risks, err := s.UpdateRisks(ctx, q.OrgID, keys)
	if err != nil {
		return nil, 0, err
	}
	for i := range out {
		out[i].Risk = risks[out[i].Key]
	}
	return out, total, nil
}

func repeatPlaceholders(n int) string {
	b := make([]byte, 0, 3*n)
	for range n {
		b = append(b, ", ?"...)
	}
	return string(b)
}

// EndpointName is an endpoint's id and display name.
type EndpointName struct {
	ID, Name, Platform string
}

// PreviewGroup evaluates dynamic criteria on the organization's endpoints
// without storing anything: the console's live member preview. It answers
// the number of members and the first sample of them by name.
func (s *Store) PreviewGroup(ctx context.Context, orgID string, c groups.Criteria, sample int) (int, []EndpointName, error) {
	rows, err := s.query(ctx, `SELECT e.id, `+factColumns+` FROM endpoints e WHERE e.org_id = ? ORDER BY e.sort_name, e.id`, orgID)
	var ids []string
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id string
		f, err := scanFacts(r, &id)
		if err == nil && c.Member(f) {
			ids = append(ids, id)
		}
		return err
	}); err != nil {
		return 0, nil, fmt.Errorf("store: preview group: %w", err)
	}
	names, err := s.EndpointNames(ctx, orgID, ids[:min(sample, len(ids))])
	return len(ids), names, err
}

// EndpointNames answers the names of endpoints of the organization, in the
// order of ids; ids of other organizations are left out.
func (s *Store) EndpointNames(ctx context.Context, orgID string, ids []string) ([]EndpointName, error) {
	out := make([]EndpointName, 0, len(ids))
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		args := []any{orgID}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := s.query(ctx, `SELECT id, COALESCE(display_name, hostname), platform FROM endpoints WHERE org_id = ? AND id IN (?`+
			repeatPlaceholders(len(chunk)-1)+`)`, args...)
		byID := map[string]EndpointName{}
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var n EndpointName
			if err := r.Scan(&n.ID, &n.Name, &n.Platform); err != nil {
				return err
			}
			byID[n.ID] = n
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store: endpoint names: %w", err)
		}
		for _, id := range chunk {
			if n, ok := byID[id]; ok {
				out = append(out, n)
			}
		}
	}
	return out, nil
}
