package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/updates"
)

// Enrollment is what an agent says of itself when it enrolls.
type Enrollment struct {
	OrgID        string
	MachineUID   string
	Hostname     string
	Platform     string
	OS           string
	OSVersion    string
	Arch         string
	AgentVersion string
	SecretHash   string
	// TokenID is the enrollment token used (its uses count the enrollment;
	// "" for none, in tests that make endpoints).
	TokenID string
	// ClientAddr is the agent's address, recorded in the Audit Trail when
	// the machine was enrolled already.
	ClientAddr string
	// InsecureChannel: the agent talks over plain HTTP across the network
	// (enrolled with --insecure-http).
	InsecureChannel bool
}

// EnrollEndpoint creates the endpoint, or, when the machine is enrolled in
// the organization already, gives it the new secret and keeps its id.
func (s *Store) EnrollEndpoint(ctx context.Context, en Enrollment, now time.Time) (id string, created bool, err error) {
	// Enrollments arriving together share a transaction on SQLite (a fleet
	// enrolling: see inSharedTx); the function may run again.
	err = s.inSharedTx(ctx, func(tx *Tx) error {
		id, created = "", false
		// The group lock before any row lock (see Ingester.write).
		if err := tx.shareGroups(ctx, en.OrgID); err != nil {
			return err
		}
		if en.TokenID != "" {
			if err := tx.useEnrollToken(ctx, en, now); err != nil {
				return err
			}
		}
		if tx.s.engine == Postgres {
			// One enrollment of a machine at a time: a second one waits for
			// the first to commit, then finds its endpoint and enrolls it
			// again, instead of failing on the machine id's uniqueness.
			// (Enrollments of different machines do not wait for each other.)
			if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(7203, hashtext(?))`, en.OrgID+"/"+en.MachineUID); err != nil {
				return fmt.Errorf("store: enroll endpoint: %w", err)
			}
		}
		var oldHash, oldHostname string
		err := tx.queryRow(ctx, `SELECT id, secret_hash, hostname FROM endpoints WHERE org_id = ? AND machine_uid = ?`, en.OrgID, en.MachineUID).
			Scan(&id, &oldHash, &oldHostname)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			id, created = NewID(), true
			_, err = tx.exec(ctx, `INSERT INTO endpoints (id, org_id, machine_uid, secret_hash, hostname, sort_name, platform, os, os_version, arch,
				agent_version, enrolled_at, insecure_channel)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				id, en.OrgID, en.MachineUID, en.SecretHash, en.Hostname, strings.ToLower(en.Hostname), en.Platform,
				nullIfEmpty(en.OS), nullIfEmpty(en.OSVersion), nullIfEmpty(en.Arch), nullIfEmpty(en.AgentVersion), millis(now),
				en.InsecureChannel)
			if err == nil {
				_, err = tx.exec(ctx, `INSERT INTO endpoint_presence (endpoint_id, last_seen_at, status, status_changed_at)
					VALUES (?, ?, 'connected', ?)`, id, millis(now), millis(now))
			}
			if err != nil {
				return fmt.Errorf("store: enroll endpoint: %w", err)
			}
			tx.groupsChanged = true // the built-in groups count one endpoint more
			if err := tx.raiseNewEndpoint(ctx, en, id, now); err != nil {
				return err
			}
			return tx.afterEndpointChange(ctx, en.OrgID, id)
		case err != nil:
			return fmt.Errorf("store: enroll endpoint: %w", err)
		}
		// The enrollment may change the agent version a check-in wrote.
		tx.s.facts.forget(id)
		// The presence row first, as a check-in flush locks it before the
		// endpoint row (PostgreSQL).
		_, err = tx.exec(ctx, `UPDATE endpoint_presence SET last_seen_at = ? WHERE endpoint_id = ?`, millis(now), id)
		if err == nil {
			_, err = tx.exec(ctx, `UPDATE endpoints SET secret_hash = ?, hostname = ?, sort_name = CASE WHEN display_name IS NULL THEN ? ELSE sort_name END,
				platform = ?, os = COALESCE(?, os), os_version = COALESCE(?, os_version), arch = COALESCE(?, arch),
				agent_version = COALESCE(?, agent_version), insecure_channel = ? WHERE id = ?`,
				en.SecretHash, en.Hostname, strings.ToLower(en.Hostname), en.Platform, nullIfEmpty(en.OS), nullIfEmpty(en.OSVersion),
				nullIfEmpty(en.Arch), nullIfEmpty(en.AgentVersion), en.InsecureChannel, id)
		}
		if err != nil {
			return fmt.Errorf("store: re-enroll endpoint: %w", err)
		}
		if err := tx.recordReenrollment(ctx, en, id, oldHostname, now); err != nil {
			return err
		}
		return tx.afterEndpointChange(ctx, en.OrgID, id)
	})
	if err == nil && created {
		s.planStats.endpointCreated(s)
	}
	return id, created, err
}

// recordReenrollment writes, in the enrollment's transaction, what a
// re-enrollment must leave behind: the machine id now belongs to whoever
// holds the new secret, with the endpoint's pending commands, so the Audit
// Trail records who did it (the enrollment token) from where, and
// ENDPOINT_REENROLLED rules raise an event.
func (tx *Tx) recordReenrollment(ctx context.Context, en Enrollment, endpointID, oldHostname string, now time.Time) error {
	var pending int
	if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM commands WHERE endpoint_id = ? AND status = 'PENDING'`, endpointID).Scan(&pending); err != nil {
		return fmt.Errorf("store: re-enroll endpoint: %w", err)
	}
	summary := map[string]any{"machineUid": en.MachineUID, "hostname": en.Hostname, "previousHostname": oldHostname,
		"clientAddress": en.ClientAddr, "pendingCommands": pending}
	actor := "enroll_token"
	if en.TokenID != "" {
		actor = EnrollTokenActor(en.TokenID)
		summary["enrollTokenId"] = en.TokenID
	}
	if err := tx.insertAudit(ctx, &AuditEntry{OrgID: en.OrgID, At: now, Actor: actor, Action: "endpoint.reenroll",
		TargetType: "endpoint", TargetID: endpointID, Summary: summary}); err != nil {
		return err
	}
	return tx.raiseReenrolled(ctx, en, endpointID, oldHostname, pending, now)
}

// Agent is what an agent secret stands for.
type Agent struct {
	EndpointID    string
	OrgID         string
	Name          string
	Platform      string
	Distro        string
	InventoryHash string
	// Removed is set for a removed endpoint's tombstone; Told says whether
	// its agent was told to uninstall already.
	Removed bool
	Told    bool
}

// AgentBySecret resolves an agent secret hash.
func (s *Store) AgentBySecret(ctx context.Context, secretHash string) (Agent, error) {
	var a Agent
	var distro, hash sql.NullString
	err := s.queryRow(ctx, `SELECT id, org_id, COALESCE(display_name, hostname), platform, distro, inventory_hash FROM endpoints WHERE secret_hash = ?`, secretHash).
		Scan(&a.EndpointID, &a.OrgID, &a.Name, &a.Platform, &distro, &hash)
	if err == nil {
		a.Distro, a.InventoryHash = distro.String, hash.String
		return a, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Agent{}, fmt.Errorf("store: agent by secret: %w", err)
	}
	var told sql.NullInt64
	err = s.queryRow(ctx, `SELECT endpoint_id, org_id, told_at FROM endpoint_tombstones WHERE secret_hash = ?`, secretHash).Scan(&a.EndpointID, &a.OrgID, &told)
	if errors.Is(err, sql.ErrNoRows) {
		return Agent{}, fmt.Errorf("store: agent: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return Agent{}, fmt.Errorf("store: agent tombstone: %w", err)
	}
	a.Removed, a.Told = true, told.Valid
	return a, nil
}

// TellUninstall marks a tombstone as told, once: it answers true for the one
// caller that marked it.
func (s *Store) TellUninstall(ctx context.Context, secretHash string, now time.Time) (bool, error) {
	res, err := s.exec(ctx, `UPDATE endpoint_tombstones SET told_at = ? WHERE secret_hash = ? AND told_at IS NULL`, millis(now), secretHash)
	if err != nil {
		return false, fmt.Errorf("store: tell uninstall: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// UninstallReport is what a removed endpoint's agent reports of its
// removal (agentproto.UninstalledReport).
type UninstallReport struct {
	Complete bool
	Manager  string
	Problems []string
}

// RecordUninstalled records, once, that the agent of a removed endpoint
// (its secret's tombstone, told to uninstall already) reported its
// removal, and writes it to the organization's Audit Trail
// (endpoint.uninstalled, actor agent:<endpoint id>). It answers false when
// the secret is no told tombstone or the report came already.
func (s *Store) RecordUninstalled(ctx context.Context, secretHash string, rep UninstallReport, now time.Time) (bool, error) {
	var recorded bool
	err := s.InTx(ctx, func(tx *Tx) error {
		var orgID, endpointID string
		err := tx.queryRow(ctx, `SELECT org_id, endpoint_id FROM endpoint_tombstones WHERE secret_hash = ? AND told_at IS NOT NULL AND uninstalled_at IS NULL`,
			secretHash).Scan(&orgID, &endpointID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: record uninstalled: %w", err)
		}
		res, err := tx.exec(ctx, `UPDATE endpoint_tombstones SET uninstalled_at = ? WHERE secret_hash = ? AND uninstalled_at IS NULL`, millis(now), secretHash)
		if err != nil {
			return fmt.Errorf("store: record uninstalled: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		summary := map[string]any{"complete": rep.Complete, "manager": rep.Manager}
		if len(rep.Problems) > 0 {
			summary["problems"] = rep.Problems
		}
		if err := tx.insertAudit(ctx, &AuditEntry{OrgID: orgID, At: now, Actor: "agent:" + endpointID, Action: "endpoint.uninstalled",
			TargetType: "endpoint", TargetID: endpointID, Summary: summary}); err != nil {
			return err
		}
		recorded = true
		return nil
	})
	return recorded, err
}

// RecordAgentStopping records that the agent whose secret hashes to
// secretHash said, at at, that it stops (POST /agent/v1/stopping): its
// endpoint counts as disconnected from then until a check-in after at
// (seenConnected). Written at once, not batched: a check-in accepted
// before it and written later is older, and leaves the endpoint
// disconnected. It answers false when the secret is no endpoint's (removed,
// or enrolled again since).
func (s *Store) RecordAgentStopping(ctx context.Context, secretHash string, at time.Time) (bool, error) {
	res, err := s.exec(ctx, `UPDATE endpoint_presence SET stopped_at = ? WHERE endpoint_id = (SELECT id FROM endpoints WHERE secret_hash = ?)`,
		millis(at), secretHash)
	if err != nil {
		return false, fmt.Errorf("store: record agent stopping: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Checkin is what one check-in reports, batched by the presence tracker.
type Checkin struct {
	EndpointID    string
	At            time.Time
	LastBootAt    *time.Time
	PendingReboot bool
	User          *string
	IPAddresses   []string
	AgentVersion  string
}

// CheckinsRefused answers RecordCheckins when the database refused some
// check-ins' data: every other check-in of the batch is written, these are
// not (written again, they would fail again).
type CheckinsRefused struct {
	Refused map[string]error // by endpoint id
}

func (e *CheckinsRefused) Error() string {
	ids := slices.Sorted(maps.Keys(e.Refused))
	return fmt.Sprintf("store: record check-ins: %d refused by the database, first %s: %v", len(ids), ids[0], e.Refused[ids[0]])
}

// RecordCheckins writes a batch of check-ins in one transaction, and with
// them the writing replica's presence watermark when mark is not nil (see
// PublishPresenceWatermark): committed together, the watermark never
// claims a check-in that is not written, and a flush costs one commit.
// When the database refuses a row's data (rowFault) the batch is written
// again in halves, down to single check-ins (a few transactions per
// refused row, not one per row), so that one endpoint's bad data does not
// keep every other endpoint's last-seen time from being written: the
// refused ones are answered in a *CheckinsRefused, the others are written,
// then the watermark in a transaction of its own. Any other error (the
// database unreachable, a conflict after retries) fails the batch, and
// the watermark is not written.
func (s *Store) RecordCheckins(ctx context.Context, batch []Checkin, mark *PresenceMark) error {
	err := s.recordCheckins(ctx, batch, mark)
	if err == nil || !rowFault(err) || len(batch) == 1 {
		// Alone, a refused row cannot be told from a failing database.
		return err
	}
	refused := &CheckinsRefused{Refused: map[string]error{}}
	half := len(batch) / 2
	if err := s.recordIsolating(ctx, batch[:half], refused); err != nil {
		return err
	}
	if err := s.recordIsolating(ctx, batch[half:], refused); err != nil {
		return err
	}
	if mark != nil {
		if err := s.PublishPresenceWatermark(ctx, mark.Replica, mark.WrittenThrough, mark.At); err != nil {
			return err
		}
	}
	if len(refused.Refused) == 0 {
		return nil
	}
	return refused
}

func (s *Store) recordIsolating(ctx context.Context, batch []Checkin, refused *CheckinsRefused) error {
	err := s.recordCheckins(ctx, batch, nil)
	switch {
	case err == nil:
		return nil
	case !rowFault(err):
		return err
	case len(batch) == 1:
		refused.Refused[batch[0].EndpointID] = err
		return nil
	}
	half := len(batch) / 2
	if err := s.recordIsolating(ctx, batch[:half], refused); err != nil {
		return err
	}
	return s.recordIsolating(ctx, batch[half:], refused)
}

func (s *Store) recordCheckins(ctx context.Context, batch []Checkin, mark *PresenceMark) error {
	if len(batch) == 0 && mark == nil {
		return nil
	}
	// Endpoint rows in id order, as the ingester locks them: replicas'
	// flushes and ingesters on PostgreSQL then never wait on each other in
	// a circle.
	batch = slices.Clone(batch)
	slices.SortStableFunc(batch, func(a, b Checkin) int { return strings.Compare(a.EndpointID, b.EndpointID) })
	return s.InTxRetry(ctx, func(tx *Tx) error {
		if err := tx.lockGroupsOf(ctx, batch); err != nil {
			return err
		}
		if s.checkinFault != nil {
			for _, c := range batch {
				if err := s.checkinFault(c); err != nil {
					return fmt.Errorf("store: record check-ins: %w", err)
				}
			}
		}
		for chunk := range slices.Chunk(batch, checkinChunk) {
			if err := tx.recordCheckinChunk(ctx, chunk); err != nil {
				return fmt.Errorf("store: record check-ins: %w", err)
			}
		}
		if mark != nil {
			return tx.publishPresenceWatermark(ctx, *mark)
		}
		return nil
	})
}

// checkinChunk bounds the endpoints one statement of a flush names.
const checkinChunk = 500

// recordCheckinChunk writes check-ins of distinct endpoints, in id order,
// in a few statements whatever their number: the fields group rules test
// (and the boot time) are read (on SQLite only for the check-ins whose facts
// differ from those the row was last written with: checkinFacts), every
// last-seen time is written to the narrow endpoint_presence row (a page
// holds about eighty; the endpoints row, five or six: migration 038), and
// only an endpoint whose fields changed has its endpoints row written and
// its group membership re-decided. On PostgreSQL the read locks the
// presence rows in id order first. A flush is most of what a check-in
// costs the database; a statement per endpoint was most of the flush. The
// endpoints travel as one JSON parameter, so the statements' text is the
// same whatever the chunk's size (each is prepared once: the writer's
// statement cache on SQLite, pgx's on PostgreSQL).
func (tx *Tx) recordCheckinChunk(ctx context.Context, chunk []Checkin) error {
	// The facts are those before this flush.
	const factColumns = `e.id, e.org_id, e.pending_reboot, e.logged_user, e.ip_addresses, e.agent_version, e.last_boot_at`
	var read, write string
	if tx.s.engine == Postgres {
		read = `SELECT ` + factColumns + ` FROM endpoint_presence p JOIN endpoints e ON e.id = p.endpoint_id
			WHERE p.endpoint_id IN (SELECT seen.id FROM json_to_recordset(CAST(? AS json)) AS seen(id text))
			ORDER BY p.endpoint_id FOR NO KEY UPDATE OF p`
		write = `UPDATE endpoint_presence SET last_seen_at = seen.at
			FROM json_to_recordset(CAST(? AS json)) AS seen(id text, at bigint) WHERE endpoint_presence.endpoint_id = seen.id`
	} else {
		read = `SELECT ` + factColumns + ` FROM json_each(?) AS seen JOIN endpoints e ON e.id = seen.key`
		write = `UPDATE endpoint_presence SET last_seen_at = seen.value
			FROM json_each(?) AS seen WHERE endpoint_presence.endpoint_id = seen.key`
	}
	seen := tx.s.seenJSON(chunk)
	// Rows known to hold what their check-in would write need no reading
	// (SQLite: see checkinFacts); on PostgreSQL the read locks them all.
	toRead := tx.s.facts.toRead(chunk, time.Now())
	known := make(map[string]facts, len(toRead))
	if len(toRead) > 0 {
		readSeen := seen
		if len(toRead) != len(chunk) {
			readSeen = tx.s.seenJSON(toRead)
		}
		if err := tx.readFacts(ctx, read, readSeen, known); err != nil {
			return err
		}
		if len(known) == 0 && len(toRead) == len(chunk) {
			return nil // none of the endpoints is there any more
		}
	}
	if _, err := tx.exec(ctx, write, seen); err != nil {
		return err
	}
	// The endpoints whose fields changed have their rows written in one
	// statement, then those whose rule fields changed their membership
	// re-decided, an organization at a time.
	var changed []factChange
	var rules map[string][]string // endpoint ids by organization
	for _, c := range chunk {
		f, ok := known[c.EndpointID]
		if !ok {
			continue
		}
		if tx.s.facts != nil {
			tx.checkinsApplied = append(tx.checkinsApplied, c)
		}
		// A check-in without addresses (or version, or boot time) leaves
		// the known ones.
		ch := factChange{ID: c.EndpointID, Reboot: c.PendingReboot, Login: c.User}
		ips, version, boot := f.ips, f.version, f.boot
		if len(c.IPAddresses) > 0 {
			b, _ := json.Marshal(c.IPAddresses)
			ips = string(b)
			ch.IPs = &ips
		}
		if c.AgentVersion != "" {
			version = sql.NullString{String: c.AgentVersion, Valid: true}
			ch.Version = &c.AgentVersion
		}
		if c.LastBootAt != nil {
			boot = sql.NullInt64{Int64: millis(*c.LastBootAt), Valid: true}
			ch.Boot = &boot.Int64
		}
		user := sql.NullString{}
		if c.User != nil {
			user = sql.NullString{String: *c.User, Valid: true}
		}
		rulesSame := f.reboot == c.PendingReboot && f.user == user && f.ips == ips && f.version == version
		if rulesSame && f.boot == boot {
			continue
		}
		changed = append(changed, ch)
		if !rulesSame { // not only the boot time, which no group rule tests
			if rules == nil {
				rules = map[string][]string{}
			}
			rules[f.org] = append(rules[f.org], c.EndpointID)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	if err := tx.writeFacts(ctx, changed); err != nil {
		return err
	}
	for _, org := range slices.Sorted(maps.Keys(rules)) {
		if err := tx.afterEndpointsChange(ctx, org, rules[org]); err != nil {
			return err
		}
	}
	return nil
}

// factChange is what a check-in writes of an endpoint row whose fields
// changed; a nil address list, version or boot time keeps the row's.
type factChange struct {
	ID      string  `json:"id"`
	Reboot  bool    `json:"reboot"`
	Login   *string `json:"login"`
	IPs     *string `json:"ips"` // a JSON array, as ip_addresses holds it
	Version *string `json:"version"`
	Boot    *int64  `json:"boot"`
}

// writeFacts writes the changed fields of a flush's endpoints, in id order,
// in one statement (two on PostgreSQL, which first locks the rows in id
// order as the ingester does: an UPDATE … FROM locks them in the order of
// its join).
func (tx *Tx) writeFacts(ctx context.Context, changed []factChange) error {
	b, _ := json.Marshal(changed)
	var update string
	if tx.s.engine == Postgres {
		if _, err := tx.exec(ctx, `SELECT id FROM endpoints
			WHERE id IN (SELECT c.id FROM json_to_recordset(CAST(? AS json)) AS c(id text)) ORDER BY id FOR NO KEY UPDATE`, string(b)); err != nil {
			return err
		}
		update = `UPDATE endpoints SET pending_reboot = c.reboot, logged_user = c.login, ip_addresses = COALESCE(c.ips, endpoints.ip_addresses),
			agent_version = COALESCE(c.version, endpoints.agent_version), last_boot_at = COALESCE(c.boot, endpoints.last_boot_at)
			FROM json_to_recordset(CAST(? AS json)) AS c(id text, reboot boolean, login text, ips text, version text, boot bigint)
			WHERE endpoints.id = c.id`
	} else {
		update = `UPDATE endpoints SET pending_reboot = c.value ->> 'reboot', logged_user = c.value ->> 'login',
			ip_addresses = COALESCE(c.value ->> 'ips', ip_addresses), agent_version = COALESCE(c.value ->> 'version', agent_version),
			last_boot_at = COALESCE(c.value ->> 'boot', last_boot_at)
			FROM json_each(?) AS c WHERE endpoints.id = c.value ->> 'id'`
	}
	_, err := tx.exec(ctx, update, string(b))
	return err
}

// facts are what a check-in flush reads of an endpoint row before writing
// it.
type facts struct {
	org           string
	reboot        bool
	user, version sql.NullString
	ips           string
	boot          sql.NullInt64
}

// seenJSON is the one parameter naming a flush's endpoints and their
// last-seen times. PostgreSQL reads an array of objects; SQLite an object
// of times keyed by id: json_each hands out an object's keys and values as
// they are, while a member of an array of objects is handed out as JSON
// text that ->> parses again, which made both statements twice as costly
// (docs/performance.md).
func (s *Store) seenJSON(chunk []Checkin) string {
	var b []byte
	if s.engine == Postgres {
		type seenRow struct {
			ID string `json:"id"`
			At int64  `json:"at"`
		}
		rows := make([]seenRow, len(chunk))
		for i, c := range chunk {
			rows[i] = seenRow{ID: c.EndpointID, At: millis(c.At)}
		}
		b, _ = json.Marshal(rows)
	} else {
		at := make(map[string]int64, len(chunk))
		for _, c := range chunk {
			at[c.EndpointID] = millis(c.At)
		}
		b, _ = json.Marshal(at)
	}
	return string(b)
}

// readFacts reads the facts of the endpoints seen names into known.
func (tx *Tx) readFacts(ctx context.Context, read, seen string, known map[string]facts) error {
	rows, err := tx.query(ctx, read, seen)
	return eachRow(rows, err, func(r *sql.Rows) error {
		var id string
		var f facts
		if err := r.Scan(&id, &f.org, &f.reboot, &f.user, &f.ips, &f.version, &f.boot); err != nil {
			return err
		}
		known[id] = f
		return nil
	})
}

// lockGroupsOf takes, on PostgreSQL, the group locks of the batch's
// organizations before any endpoint row: a check-in that changes a field
// group rules test re-decides membership under that lock, and taking it
// after the rows would deadlock with an ingester holding it.
func (tx *Tx) lockGroupsOf(ctx context.Context, batch []Checkin) error {
	if tx.s.engine != Postgres {
		return nil
	}
	var orgs []string
	for chunk := range slices.Chunk(batch, 500) {
		args := make([]any, len(chunk))
		for i, c := range chunk {
			args[i] = c.EndpointID
		}
		rows, err := tx.query(ctx, `SELECT DISTINCT org_id FROM endpoints WHERE id IN (`+placeholders(len(args))+`)`, args...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var org string
			if err := r.Scan(&org); err != nil {
				return err
			}
			orgs = append(orgs, org)
			return nil
		}); err != nil {
			return fmt.Errorf("store: record check-ins: %w", err)
		}
	}
	slices.Sort(orgs)
	for _, org := range slices.Compact(orgs) {
		if err := tx.shareGroups(ctx, org); err != nil {
			return err
		}
	}
	return nil
}

// endpointsSeen is the endpoints (e) with their presence (p: migration
// 038), for the queries that read it (SQLite looks the presence row up
// even where nothing of it is read).
const endpointsSeen = `endpoints e LEFT JOIN endpoint_presence p ON p.endpoint_id = e.id`

// seenConnected is the condition that the endpoint of presence row p is
// connected, its one argument the oldest last check-in of a connected
// endpoint (endpointq.ConnectedSince): seen since, and its agent has not
// said it stops after its last check-in (stopped_at, POST
// /agent/v1/stopping). seenDisconnected is its negation (a missing
// presence row included). Every status the store answers or filters on
// is one of these, or connectedAt in Go.
const (
	seenConnected    = `(p.last_seen_at >= ? AND (p.stopped_at IS NULL OR p.stopped_at < p.last_seen_at))`
	seenDisconnected = `(p.last_seen_at IS NULL OR p.last_seen_at < ? OR (p.stopped_at IS NOT NULL AND p.stopped_at >= p.last_seen_at))`
)

// connectedAt is seenConnected on values read: an endpoint last seen at
// lastSeen, whose agent said it stops at stopped, is connected when seen at
// or after connectedSince and not stopped since.
func connectedAt(lastSeen, stopped sql.NullInt64, connectedSince time.Time) bool {
	return lastSeen.Valid && lastSeen.Int64 >= millis(connectedSince) && (!stopped.Valid || stopped.Int64 < lastSeen.Int64)
}

const endpointColumns = `e.id, COALESCE(e.display_name, e.hostname), e.hostname, e.platform, p.last_seen_at, e.os, e.os_version, e.os_build, e.type,
	e.domain, e.ad_ou, e.logged_user, e.manufacturer, e.model, e.serial_number, e.cpu, e.cores, e.ram_gb, e.ip_addresses, e.mac_addresses,
	e.antivirus, e.pending_reboot, e.agent_version, e.attributes, e.last_boot_at, e.enrolled_at, e.comment, e.insecure_channel, p.stopped_at,
	e.risk, e.risk_cve`

// scanEndpoint reads endpointColumns; an endpoint seen at or after
// connectedSince, and not stopped since, is connected (connectedAt).
func scanEndpoint(row interface{ Scan(...any) error }, connectedSince time.Time) (apiv1.Endpoint, error) {
	var e apiv1.Endpoint
	var lastSeen, lastBoot, stopped sql.NullInt64
	var enrolled int64
	var cores sql.NullInt64
	var ram sql.NullFloat64
	var ips, macs, attrs string
	var os, osVersion, osBuild, domain, adOU, user, manufacturer, model, serial, cpu, antivirus, agentVersion, comment, riskCVE sql.NullString
	if err := row.Scan(&e.ID, &e.Name, &e.Hostname, &e.Platform, &lastSeen, &os, &osVersion, &osBuild, &e.Type,
		&domain, &adOU, &user, &manufacturer, &model, &serial, &cpu, &cores, &ram, &ips, &macs,
		&antivirus, &e.PendingReboot, &agentVersion, &attrs, &lastBoot, &enrolled, &comment, &e.InsecureChannel, &stopped,
		&e.RiskScore, &riskCVE); err != nil {
		return e, err
	}
	e.RiskCVE = nullString(riskCVE)
	e.OS, e.OSVersion, e.OSBuild = nullString(os), nullString(osVersion), nullString(osBuild)
	e.Domain, e.ADOU, e.User = nullString(domain), nullString(adOU), nullString(user)
	e.Manufacturer, e.Model, e.SerialNumber, e.CPU = nullString(manufacturer), nullString(model), nullString(serial), nullString(cpu)
	e.Antivirus, e.AgentVersion, e.Comment = nullString(antivirus), nullString(agentVersion), nullString(comment)
	if cores.Valid {
		n := int(cores.Int64)
		e.Cores = &n
	}
	if ram.Valid {
		e.RAMGB = &ram.Float64
	}
	e.LastSeenAt, e.LastBootAt = nullTime(lastSeen), nullTime(lastBoot)
	enrolledAt := fromMillis(enrolled)
	e.EnrolledAt = &enrolledAt
	e.Status = "disconnected"
	if connectedAt(lastSeen, stopped, connectedSince) {
		e.Status = "connected"
	}
	e.IPAddresses, e.MACAddresses, e.Attributes = []string{}, []string{}, map[string]string{}
	if err := unmarshalIfAny(ips, &e.IPAddresses); err != nil {
		return e, fmt.Errorf("ip addresses: %w", err)
	}
	if err := unmarshalIfAny(macs, &e.MACAddresses); err != nil {
		return e, fmt.Errorf("mac addresses: %w", err)
	}
	if err := unmarshalIfAny(attrs, &e.Attributes); err != nil {
		return e, fmt.Errorf("attributes: %w", err)
	}
	return e, nil
}

// unmarshalIfAny decodes a stored JSON list or object, skipping the decoder
// for the empty ones most rows hold (a page of 500 endpoints decodes 1,500).
func unmarshalIfAny(s string, v any) error {
	if s == "[]" || s == "{}" || s == "" {
		return nil
	}
	return json.Unmarshal([]byte(s), v)
}

// likePattern makes a case-insensitive substring pattern for LIKE … ESCAPE '\'.
func likePattern(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(q)) + "%"
}

// EndpointQuery selects, orders and pages an organization's endpoints for
// the lists (the API's q alone; the console's filters besides).
type EndpointQuery struct {
	OrgID string
	// Q matches a substring of the hostname or display name (the API's q).
	Q string
	// Search matches a substring of the hostname, display name, an IP
	// address, the operating system or its version.
	Search string
	// Status is "connected" or "disconnected" (seen since ConnectedSince
	// and not stopped since, or not: seenConnected).
	Status   string
	Platform string
	// OS matches a substring of the operating system and its version.
	OS      string
	GroupID string
	// Missing is "critical" (a critical update missing; "important",
	// "moderate", "low", "unspecified" likewise), "other" (updates missing,
	// none critical), "any" (any update missing) or "none" (fully patched).
	Missing string
	// Compliance is "overdue" (an update missing past the compliance
	// policy's deadline at Now) or "compliant" (none).
	Compliance    string
	Now           time.Time
	PendingReboot bool
	// NotSeenSince keeps endpoints last seen before it (or never).
	NotSeenSince time.Time
	AgentVersion string
	// UpdateKey keeps the endpoints missing that update; CVE those a CVE
	// affects.
	UpdateKey string
	CVE       string
	// Software keeps the endpoints with that software title (its exact
	// name); with SoftwareVersion, that version of it.
	Software, SoftwareVersion string
	// Sort is one of EndpointSorts (default "name"); Desc reverses it.
	Sort           string
	Desc           bool
	Limit, Offset  int
	ConnectedSince time.Time
	// policy is the organization's compliance policy, read by the store
	// when Compliance or the "overdue" sort needs it.
	policy *updates.CompliancePolicy
}

// withPolicy answers q with the organization's compliance policy when it
// needs one.
func (s *Store) withPolicy(ctx context.Context, q EndpointQuery) (EndpointQuery, error) {
	if q.Compliance == "" && q.Sort != "overdue" {
		return q, nil
	}
	p, err := s.CompliancePolicy(ctx, q.OrgID)
	if err != nil {
		return q, err
	}
	q.policy = &p
	return q, nil
}

// EndpointSorts are the orders of the endpoint lists.
var EndpointSorts = []string{"name", "status", "platform", "os", "type", "lastSeen", "agentVersion", "missingCritical", "missingTotal", "overdue", "risk"}

// EndpointStatuses, EndpointMissing are the values the filters take.
var (
	EndpointStatuses   = []string{"connected", "disconnected"}
	EndpointMissing    = []string{"critical", "important", "moderate", "low", "unspecified", "other", "any", "none"}
	EndpointCompliance = []string{"overdue", "compliant"}
)

// endpointWhere is the condition and arguments of q, and the table it is
// a condition on: the endpoints with their presence (endpointsSeen) when
// it tests the last-seen time, else the endpoints alone.
func endpointWhere(q EndpointQuery) (from, where string, args []any) {
	from, where = `endpoints e`, `e.org_id = ?`
	args = []any{q.OrgID}
	if q.Q != "" {
		where += ` AND (lower(e.hostname) LIKE ? ESCAPE '\' OR lower(COALESCE(e.display_name, '')) LIKE ? ESCAPE '\')`
		p := likePattern(q.Q)
		args = append(args, p, p)
	}
	if q.Search != "" {
		where += ` AND (lower(e.hostname) LIKE ? ESCAPE '\' OR lower(COALESCE(e.display_name, '')) LIKE ? ESCAPE '\'
			OR lower(e.ip_addresses) LIKE ? ESCAPE '\' OR lower(COALESCE(e.os, '') || ' ' || COALESCE(e.os_version, '')) LIKE ? ESCAPE '\')`
		p := likePattern(q.Search)
		args = append(args, p, p, p, p)
	}
	switch q.Status {
	case "connected":
		from, where = endpointsSeen, where+` AND `+seenConnected
		args = append(args, millis(q.ConnectedSince))
	case "disconnected":
		from, where = endpointsSeen, where+` AND `+seenDisconnected
		args = append(args, millis(q.ConnectedSince))
	}
	if q.Platform != "" {
		where += ` AND e.platform = ?`
		args = append(args, q.Platform)
	}
	if q.OS != "" {
		where += ` AND lower(COALESCE(e.os, '') || ' ' || COALESCE(e.os_version, '')) LIKE ? ESCAPE '\'`
		args = append(args, likePattern(q.OS))
	}
	if q.GroupID != "" {
		// Members stored, or those of a built-in group, counted when read
		// (as GroupMemberIDs does).
		now := q.Now
		if now.IsZero() {
			now = time.Now()
		}
		where += ` AND (EXISTS (SELECT 1 FROM group_members m WHERE m.group_id = ? AND m.endpoint_id = e.id)
			OR EXISTS (SELECT 1 FROM endpoint_groups g WHERE g.id = ? AND g.org_id = e.org_id
				AND (g.builtin = ? OR (g.builtin = ? AND e.enrolled_at >= ?))))`
		args = append(args, q.GroupID, q.GroupID, groups.BuiltinAll, groups.BuiltinNew, millis(now.AddDate(0, 0, -NewEndpointDays)))
	}
	// The endpoints' counters of missing updates (migration 030).
	switch q.Missing {
	case "critical":
		where += ` AND e.missing_critical > 0`
	case "important", "moderate", "low", "unspecified":
		where += ` AND e.missing_` + q.Missing + ` > 0`
	case "other": // missing updates, none of them critical
		where += ` AND ` + missingTotal + ` > 0 AND e.missing_critical = 0`
	case "any":
		where += ` AND ` + missingTotal + ` > 0`
	case "none":
		where += ` AND ` + missingTotal + ` = 0`
	}
	if q.Compliance != "" && q.policy != nil {
		cond, cargs := overdueEndpoint(*q.policy, q.Now)
		if q.Compliance == "compliant" {
			cond = `NOT ` + cond
		}
		where += ` AND ` + cond
		args = append(args, cargs...)
	}
	if q.PendingReboot {
		where += ` AND e.pending_reboot`
	}
	if q.UpdateKey != "" {
		where += ` AND EXISTS (SELECT 1 FROM endpoint_updates u WHERE u.org_id = e.org_id AND u.key = ? AND u.endpoint_id = e.id)`
		args = append(args, q.UpdateKey)
	}
	if q.Software != "" {
		cond := ``
		args = append(args, q.Software)
		if q.SoftwareVersion != "" {
			cond = ` AND es.version_key = ?`
			args = append(args, q.SoftwareVersion)
		}
		where += ` AND EXISTS (SELECT 1 FROM software_titles t JOIN endpoint_software es ON es.title_id = t.id
			WHERE t.org_id = e.org_id AND t.name = ? AND es.endpoint_id = e.id` + cond + `)`
	}
	if q.CVE != "" {
		where += ` AND EXISTS (SELECT 1 FROM endpoint_vulns v WHERE v.org_id = e.org_id AND v.cve_id = ? AND v.endpoint_id = e.id)`
		args = append(args, q.CVE)
	}
	if !q.NotSeenSince.IsZero() {
		from, where = endpointsSeen, where+` AND (p.last_seen_at IS NULL OR p.last_seen_at < ?)`
		args = append(args, millis(q.NotSeenSince))
	}
	if q.AgentVersion != "" {
		where += ` AND e.agent_version = ?`
		args = append(args, q.AgentVersion)
	}
	return from, where, args
}

// endpointOrder is the ORDER BY of q's sort (the name, then the id, break
// ties so pages never overlap).
func endpointOrder(q EndpointQuery) string {
	dir := ""
	if q.Desc {
		dir = " DESC"
	}
	overdue := "0"
	if q.policy != nil {
		// The cutoffs are numbers the store computed, written into the text
		// as the ORDER BY takes no arguments here.
		c := q.policy.Cutoffs(q.Now)
		overdue = fmt.Sprintf(`(SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = e.id AND (u.detected_at < CASE u.derived_severity
			WHEN 'Critical' THEN %d WHEN 'Important' THEN %d WHEN 'Moderate' THEN %d WHEN 'Low' THEN %d ELSE %d END
			OR u.kev AND u.detected_at < %d)
			AND NOT EXISTS (SELECT 1 FROM update_approvals a WHERE a.org_id = u.org_id AND a.key = u.key AND a.status = 'DECLINED'))`,
			millis(c[0]), millis(c[1]), millis(c[2]), millis(c[3]), millis(c[4]), millis(q.policy.KEVCutoff(q.Now)))
	}
	sort := q.Sort
	col := map[string]string{
		"missingCritical": "e.missing_critical",
		"risk":            "e.risk",
		"missingTotal":    missingTotal,
		"overdue":         overdue,
		"status":          "CASE WHEN p.stopped_at >= p.last_seen_at THEN 0 ELSE 1 END, p.last_seen_at IS NULL, p.last_seen_at",
		"lastSeen":        "p.last_seen_at IS NULL, p.last_seen_at",
		"platform":        "e.platform",
		"os":              "COALESCE(e.os, ''), COALESCE(e.os_version, '')",
		"type":            "e.type",
		"agentVersion":    "COALESCE(e.agent_version, '')",
	}[sort]
	if col == "" {
		return "e.sort_name" + dir + ", e.id" + dir
	}
	parts := strings.Split(col, ", ")
	for i := range parts {
		parts[i] += dir
	}
	return strings.Join(parts, ", ") + ", e.sort_name, e.id"
}

// FindEndpoints pages the endpoints q selects, in its order, with their
// total.
func (s *Store) FindEndpoints(ctx context.Context, q EndpointQuery) ([]apiv1.Endpoint, int, error) {
	q, err := s.withPolicy(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	from, where, args := endpointWhere(q)
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM `+from+` WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count endpoints: %w", err)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = total
	}
	rows, err := s.query(ctx, `SELECT `+endpointColumns+` FROM `+endpointsSeen+` WHERE `+where+` ORDER BY `+endpointOrder(q)+` LIMIT ? OFFSET ?`,
		append(args, limit, q.Offset)...)
	out := make([]apiv1.Endpoint, 0, min(limit, 500))
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		e, err := scanEndpoint(r, q.ConnectedSince)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("store: list endpoints: %w", err)
	}
	if err := fillEndpointRisk(ctx, s.query, out); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// FindEndpointIDs is the id of every endpoint q selects, its paging
// ignored: what "select all N matching" acts on.
func (s *Store) FindEndpointIDs(ctx context.Context, q EndpointQuery) ([]string, error) {
	q, err := s.withPolicy(ctx, q)
	if err != nil {
		return nil, err
	}
	from, where, args := endpointWhere(q)
	rows, err := s.query(ctx, `SELECT e.id FROM `+from+` WHERE `+where+` ORDER BY e.id`, args...)
	var ids []string
	if err := appendRows(&ids, rows, err, scanString); err != nil {
		return nil, fmt.Errorf("store: endpoint ids: %w", err)
	}
	return ids, nil
}

// GetEndpoint reads an endpoint of the organization with its inventory.
func (s *Store) GetEndpoint(ctx context.Context, orgID, id string, connectedSince time.Time) (apiv1.EndpointDetail, error) {
	var d apiv1.EndpointDetail
	e, err := scanEndpoint(s.queryRow(ctx, `SELECT `+endpointColumns+` FROM `+endpointsSeen+` WHERE e.org_id = ? AND e.id = ?`, orgID, id), connectedSince)
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("store: endpoint %s: %w", id, dberr.ErrNotFound)
	}
	if err != nil {
		return d, fmt.Errorf("store: get endpoint: %w", err)
	}
	one := []apiv1.Endpoint{e}
	if err := fillEndpointRisk(ctx, s.query, one); err != nil {
		return d, err
	}
	d.Endpoint = one[0]
	rows, err := s.query(ctx, `SELECT drive, size_gb, free_gb FROM endpoint_disks WHERE endpoint_id = ? ORDER BY pos`, id)
	if d.Disks, err = scanRows(rows, err, func(r rowScanner) (apiv1.Disk, error) {
		var disk apiv1.Disk
		var size, free sql.NullFloat64
		err := r.Scan(&disk.Drive, &size, &free)
		disk.SizeGB, disk.FreeGB = nullFloat(size), nullFloat(free)
		return disk, err
	}); err != nil {
		return d, fmt.Errorf("store: endpoint disks: %w", err)
	}
	rows, err = s.query(ctx, `SELECT t.name, NULLIF(es.version_key, ''), es.publisher, es.install_date FROM endpoint_software es
		JOIN software_titles t ON t.id = es.title_id WHERE es.endpoint_id = ? ORDER BY t.name_lower, es.title_id, es.version_key`, id)
	if d.Software, err = scanRows(rows, err, func(r rowScanner) (apiv1.Software, error) {
		var sw apiv1.Software
		var version, publisher, installDate sql.NullString
		err := r.Scan(&sw.Name, &version, &publisher, &installDate)
		sw.Version, sw.Publisher, sw.InstallDate = nullString(version), nullString(publisher), nullString(installDate)
		return sw, err
	}); err != nil {
		return d, fmt.Errorf("store: endpoint software: %w", err)
	}
	rows, err = s.query(ctx, `SELECT id, title, kb, derived_severity, source, winget_id, installed_version, latest_version, reboot_required
		FROM endpoint_updates WHERE endpoint_id = ? ORDER BY CASE derived_severity WHEN 'Critical' THEN 0 WHEN 'Important' THEN 1 WHEN 'Moderate' THEN 2 WHEN 'Low' THEN 3 ELSE 4 END, title`, id)
	if d.MissingUpdates, err = scanRows(rows, err, func(r rowScanner) (apiv1.MissingUpdate, error) {
		var u apiv1.MissingUpdate
		var kb, winget, installed, latest sql.NullString
		var severity string
		err := r.Scan(&u.ID, &u.Title, &kb, &severity, &u.Source, &winget, &installed, &latest, &u.RebootRequired)
		u.KB, u.WingetID, u.InstalledVersion, u.LatestVersion = nullString(kb), nullString(winget), nullString(installed), nullString(latest)
		u.Severity = &severity
		return u, err
	}); err != nil {
		return d, fmt.Errorf("store: endpoint updates: %w", err)
	}
	return d, nil
}

// EndpointPatch is a checked change of an endpoint.
type EndpointPatch struct {
	// Name: nil leaves it; "" clears the display name.
	Name    *string
	Comment *string
	// Attributes are merged into the stored ones; an empty value removes the key.
	Attributes map[string]string
}

// PatchEndpoint renames or annotates an endpoint.
func (s *Store) PatchEndpoint(ctx context.Context, e *AuditEntry, orgID, id string, p EndpointPatch) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		var hostname, attrs string
		err := tx.queryRow(ctx, `SELECT hostname, attributes FROM endpoints WHERE org_id = ? AND id = ?`, orgID, id).Scan(&hostname, &attrs)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: endpoint %s: %w", id, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: patch endpoint: %w", err)
		}
		if p.Name != nil {
			var display any
			sortName := strings.ToLower(hostname)
			if *p.Name != "" {
				display, sortName = *p.Name, strings.ToLower(*p.Name)
			}
			if _, err := tx.exec(ctx, `UPDATE endpoints SET display_name = ?, sort_name = ? WHERE id = ?`, display, sortName, id); err != nil {
				return fmt.Errorf("store: rename endpoint: %w", err)
			}
		}
		if p.Comment != nil {
			var comment any
			if *p.Comment != "" {
				comment = *p.Comment
			}
			if _, err := tx.exec(ctx, `UPDATE endpoints SET comment = ? WHERE id = ?`, comment, id); err != nil {
				return fmt.Errorf("store: comment endpoint: %w", err)
			}
		}
		if p.Attributes != nil {
			current := map[string]string{}
			if err := json.Unmarshal([]byte(attrs), &current); err != nil {
				return fmt.Errorf("store: endpoint attributes: %w", err)
			}
			for k, v := range p.Attributes {
				if v == "" {
					delete(current, k)
				} else {
					current[k] = v
				}
			}
			b, _ := json.Marshal(current)
			if _, err := tx.exec(ctx, `UPDATE endpoints SET attributes = ? WHERE id = ?`, string(b), id); err != nil {
				return fmt.Errorf("store: endpoint attributes: %w", err)
			}
		}
		return tx.afterEndpointChange(ctx, orgID, id)
	})
}

// endpointChangeHooks run in the transaction of any change to endpoints'
// records or inventories (group membership follows them), with the changed
// endpoints of one organization, distinct and in id order.
var endpointChangeHooks []func(ctx context.Context, tx *Tx, orgID string, endpointIDs []string) error

func (tx *Tx) afterEndpointChange(ctx context.Context, orgID, id string) error {
	return tx.afterEndpointsChange(ctx, orgID, []string{id})
}

func (tx *Tx) afterEndpointsChange(ctx context.Context, orgID string, ids []string) error {
	for _, h := range endpointChangeHooks {
		if err := h(ctx, tx, orgID, ids); err != nil {
			return err
		}
	}
	return nil
}

// DeleteEndpoint removes an endpoint with its inventory and keeps a
// tombstone of its secret, so that its agent is told to uninstall. Its
// pending commands are cancelled.
func (s *Store) DeleteEndpoint(ctx context.Context, e *AuditEntry, orgID, id string, now time.Time) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		var secret, name string
		err := tx.queryRow(ctx, `SELECT secret_hash, COALESCE(display_name, hostname) FROM endpoints WHERE org_id = ? AND id = ?`, orgID, id).Scan(&secret, &name)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: endpoint %s: %w", id, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: delete endpoint: %w", err)
		}
		e.Summary = map[string]any{"name": name}
		if err := tx.releaseInventory(ctx, orgID, id); err != nil {
			return err
		}
		if err := tx.cancelPendingCommands(ctx, id, "Cancelled: the endpoint was removed", now); err != nil {
			return err
		}
		for _, h := range endpointDeleteHooks {
			if err := h(ctx, tx, orgID, id); err != nil {
				return err
			}
		}
		// The presence row before the endpoint row (the cascade would take
		// them the other way round): in the order a check-in flush locks
		// them, so that the two never wait on each other in a circle.
		if _, err := tx.exec(ctx, `DELETE FROM endpoint_presence WHERE endpoint_id = ?`, id); err != nil {
			return fmt.Errorf("store: delete endpoint: %w", err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM endpoints WHERE id = ?`, id); err != nil {
			return fmt.Errorf("store: delete endpoint: %w", err)
		}
		tx.s.facts.forget(id)
		if _, err := tx.exec(ctx, `INSERT INTO endpoint_tombstones (secret_hash, org_id, endpoint_id, removed_at) VALUES (?, ?, ?, ?)`,
			secret, orgID, id, millis(now)); err != nil {
			return fmt.Errorf("store: endpoint tombstone: %w", err)
		}
		return nil
	})
}

// endpointDeleteHooks run before an endpoint row is deleted (rows of other
// domains that reference it go first).
var endpointDeleteHooks []func(ctx context.Context, tx *Tx, orgID, endpointID string) error

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullFloat(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	f := v.Float64
	return &f
}

// StatusChange is an endpoint that went offline or came back online.
type StatusChange struct {
	OrgID      string
	EndpointID string
	Name       string
	Connected  bool
	At         time.Time
	// Since is when the endpoint was last seen (offline) or when it had gone
	// offline (online).
	Since *time.Time
}

// SweepStatus records the connected/disconnected transitions: endpoints not
// seen since cutoff, or whose agent said it stops after its last check-in,
// become disconnected, and disconnected endpoints seen since (and not
// stopped since) become connected. It answers the transitions it recorded.
func (s *Store) SweepStatus(ctx context.Context, cutoff, now time.Time) ([]StatusChange, error) {
	var out []StatusChange
	err := s.InTx(ctx, func(tx *Tx) error {
		// The narrow presence rows are read once for both transitions
		// (migration 038), and the endpoints row only of those that
		// change. In id order, as check-in flushes lock presence rows; on
		// PostgreSQL the presence rows another replica's sweep or a flush
		// holds are left to the next sweep instead of waited for. Only p
		// is locked: the endpoints row is merely read, so an ingester or a
		// foreign-key check holding it delays no transition.
		lock := ``
		if s.engine == Postgres {
			lock = ` FOR NO KEY UPDATE OF p SKIP LOCKED`
		}
		rows, err := tx.query(ctx, `SELECT p.endpoint_id, e.org_id, COALESCE(e.display_name, e.hostname), p.last_seen_at, p.status_changed_at, p.status
			FROM endpoint_presence p JOIN endpoints e ON e.id = p.endpoint_id
			WHERE (p.status = 'connected' AND `+seenDisconnected+`)
				OR (p.status = 'disconnected' AND `+seenConnected+`)
			ORDER BY p.endpoint_id`+lock, millis(cutoff), millis(cutoff))
		var batch []StatusChange
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var ch StatusChange
			var seen, changed sql.NullInt64
			var from string
			if err := r.Scan(&ch.EndpointID, &ch.OrgID, &ch.Name, &seen, &changed, &from); err != nil {
				return err
			}
			ch.Connected, ch.At = from == "disconnected", now
			if ch.Connected {
				ch.Since = nullTime(changed)
			} else {
				ch.Since = nullTime(seen)
			}
			batch = append(batch, ch)
			return nil
		}); err != nil {
			return fmt.Errorf("store: sweep status: %w", err)
		}
		for _, ch := range batch {
			from, to := "connected", "disconnected"
			if ch.Connected {
				from, to = to, from
			}
			res, err := tx.exec(ctx, `UPDATE endpoint_presence SET status = ?, status_changed_at = ? WHERE endpoint_id = ? AND status = ?`,
				to, millis(now), ch.EndpointID, from)
			if err != nil {
				return fmt.Errorf("store: sweep status: %w", err)
			}
			// Recorded once, by the sweep that changed it.
			if n, _ := res.RowsAffected(); n > 0 {
				out = append(out, ch)
			}
		}
		if len(out) > 0 {
			for _, h := range statusChangeHooks {
				if err := h(ctx, tx, out); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return out, err
}

// statusChangeHooks see the transitions SweepStatus records, in its
// transaction (the alert engine raises its events there).
var statusChangeHooks []func(ctx context.Context, tx *Tx, changes []StatusChange) error
