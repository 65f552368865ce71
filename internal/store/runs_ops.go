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

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/actions"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/updates"
)

// Errors of LaunchRun.
var (
	// ErrNoEndpoints: none of the target ids is an endpoint of the organization.
	ErrNoEndpoints = errors.New("store: no valid endpoints")
	// ErrNothingToInstall: a DEPLOY_UPDATES run would install nothing anywhere.
	ErrNothingToInstall = errors.New("store: nothing to install on any endpoint")
)

// Launch is a run to start: what to do, where, and until when.
type Launch struct {
	Run    NewRun
	Action actions.Action
	// EndpointIDs are the targets; ids outside the organization are ignored.
	EndpointIDs []string
	// NotAfter is the end of the maintenance window (nil: the command
	// expiry applies).
	NotAfter *time.Time
	// RecordEmpty records a DEPLOY_UPDATES run that installs nothing
	// anywhere (every command CANCELLED, "Nothing to install") instead of
	// refusing it: automations keep their slot in the history.
	RecordEmpty bool
}

// LaunchRun starts a run in one transaction with its Audit Trail entry
// (when e is not nil). The caller tells presence.Hub.Queued about the
// answer's endpoints after it returns.
func (s *Store) LaunchRun(ctx context.Context, e *AuditEntry, l Launch, now time.Time) (CreatedRun, error) {
	var out CreatedRun
	fn := func(tx *Tx) error {
		var err error
		out, err = tx.LaunchRun(ctx, l, now)
		if e != nil {
			e.TargetID = out.RunID
			if e.Summary == nil {
				e.Summary = map[string]any{}
			}
			e.Summary["runId"], e.Summary["queued"] = out.RunID, out.Queued
		}
		return err
	}
	if e == nil {
		return out, s.InTx(ctx, fn)
	}
	return out, s.Audited(ctx, e, fn)
}

type target struct{ id, name string }

// LaunchRun resolves the action on each endpoint of the organization among
// l.EndpointIDs and creates the run with its commands, in the caller's
// transaction.
func (tx *Tx) LaunchRun(ctx context.Context, l Launch, now time.Time) (CreatedRun, error) {
	orgID := l.Run.OrgID
	targets, err := tx.targets(ctx, orgID, l.EndpointIDs)
	if err != nil {
		return CreatedRun{}, err
	}
	if len(targets) == 0 {
		return CreatedRun{}, ErrNoEndpoints
	}
	l.Run.ActionType, l.Run.Payload = l.Action.Type, l.Action.Payload
	cmds := make([]NewCommand, len(targets))
	for i, t := range targets {
		cmds[i] = NewCommand{EndpointID: t.id, EndpointName: t.name, NotAfter: l.NotAfter}
	}
	switch {
	case l.Action.Type == agentproto.TypeDeployUpdates:
		installs, err := tx.resolveDeploy(ctx, orgID, *l.Action.Deploy, cmds)
		if err != nil {
			return CreatedRun{}, err
		}
		if installs == 0 && !l.RecordEmpty {
			return CreatedRun{}, ErrNothingToInstall
		}
	case l.Action.ScriptID != "":
		sc, err := tx.getScript(ctx, orgID, l.Action.ScriptID)
		if errors.Is(err, dberr.ErrNotFound) {
			return CreatedRun{}, fmt.Errorf("store: the stored script %s no longer exists: %w", l.Action.ScriptID, dberr.ErrNotFound)
		}
		if err != nil {
			return CreatedRun{}, err
		}
		var timeout int
		var stored struct {
			TimeoutSeconds int `json:"timeoutSeconds"`
		}
		if json.Unmarshal(l.Action.Payload, &stored) == nil {
			timeout = stored.TimeoutSeconds
		}
		p, err := actions.ResolveScript(sc.Stored(), l.Action.Parameters, timeout, "payload.")
		if err != nil {
			return CreatedRun{}, err
		}
		b, _ := json.Marshal(p)
		for i := range cmds {
			cmds[i].Payload = b
		}
	default:
		for i := range cmds {
			cmds[i].Payload = l.Action.Fixed
		}
	}
	return tx.CreateRun(ctx, l.Run, cmds, now)
}

// inChunk bounds the ids of one IN list (SQLite and PostgreSQL bind limits).
const inChunk = 500

// targets reads the endpoints of the organization among ids, once each, in
// the order given.
func (tx *Tx) targets(ctx context.Context, orgID string, ids []string) ([]target, error) {
	seen := make(map[string]bool, len(ids))
	uniq := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	names := make(map[string]string, len(uniq))
	for start := 0; start < len(uniq); start += inChunk {
		part := uniq[start:min(start+inChunk, len(uniq))]
		args := append([]any{orgID}, anySlice(part)...)
		rows, err := tx.query(ctx, `SELECT id, COALESCE(display_name, hostname) FROM endpoints WHERE org_id = ? AND id IN (`+placeholders(len(part))+`)`, args...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var id, name string
			if err := r.Scan(&id, &name); err != nil {
				return err
			}
			names[id] = name
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store: run targets: %w", err)
		}
	}
	out := make([]target, 0, len(names))
	for _, id := range uniq {
		if name, ok := names[id]; ok {
			out = append(out, target{id, name})
		}
	}
	return out, nil
}

func anySlice(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// resolveDeploy fills each command's DEPLOY_UPDATES payload from its
// endpoint's missing updates, or cancels it with "Nothing to install…".
// It answers how many endpoints install something.
//
// An application update counts as fixing a known vulnerability (a Security
// Update under filterVersion 2, with that severity) when the row the agent
// or the vulnerability matcher stored for it carries a severity other than
// Unspecified, or a security category.
func (tx *Tx) resolveDeploy(ctx context.Context, orgID string, sel actions.Selection, cmds []NewCommand) (int, error) {
	approvals := map[string]string{}
	rows, err := tx.query(ctx, `SELECT key, status FROM update_approvals WHERE org_id = ?`, orgID)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var k, st string
		if err := r.Scan(&k, &st); err != nil {
			return err
		}
		approvals[k] = st
		return nil
	}); err != nil {
		return 0, fmt.Errorf("store: approvals: %w", err)
	}
	missing := map[string][]actions.Missing{}
	for start := 0; start < len(cmds); start += inChunk {
		part := cmds[start:min(start+inChunk, len(cmds))]
		args := []any{orgID}
		for _, c := range part {
			args = append(args, c.EndpointID)
		}
		rows, err := tx.query(ctx, `SELECT eu.endpoint_id, eu.key, eu.title, eu.kb, eu.severity, eu.source, eu.categories, eu.winget_id, eu.package_name,
			eu.product_key, eu.latest_version, COALESCE(k.severity, ''), COALESCE(k.cve_count, 0)
			FROM endpoint_updates eu LEFT JOIN update_keys k ON k.org_id = eu.org_id AND k.key = eu.key
			WHERE eu.org_id = ? AND eu.endpoint_id IN (`+placeholders(len(part))+`) ORDER BY eu.endpoint_id, eu.key`, args...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var ep, cats, keySeverity string
			var cves int
			var m actions.Missing
			var kb, winget, pkg, product, latest sql.NullString
			if err := r.Scan(&ep, &m.Key, &m.Title, &kb, &m.Severity, &m.Source, &cats, &winget, &pkg, &product, &latest, &keySeverity, &cves); err != nil {
				return err
			}
			m.KB, m.WingetID, m.PackageName, m.ProductKey, m.Latest = nullString(kb), nullString(winget), nullString(pkg), nullString(product), nullString(latest)
			json.Unmarshal([]byte(cats), &m.Categories)
			if updates.ThirdParty(m.Source) && cves > 0 {
				// Fixes known CVEs: its severity is theirs (RefreshUpdateRisk).
				m.FixesVulnerability = keySeverity
			} else if updates.ThirdParty(m.Source) {
				security := m.Severity != "" && m.Severity != "Unspecified"
				for _, c := range m.Categories {
					security = security || strings.Contains(strings.ToLower(c), "security")
				}
				if security {
					m.FixesVulnerability = m.Severity
					if m.FixesVulnerability == "" || m.FixesVulnerability == "Unspecified" {
						m.FixesVulnerability = "Unspecified"
					}
				}
			}
			missing[ep] = append(missing[ep], m)
			return nil
		}); err != nil {
			return 0, fmt.Errorf("store: missing updates: %w", err)
		}
		if sel.NeedsFixes() {
			// The CVEs each missing update fixes on its endpoint.
			pairs, err := fixPairs(ctx, tx.query, orgID, `ev.endpoint_id IN (`+placeholders(len(part))+`)`, args[1:]...)
			if err != nil {
				return 0, err
			}
			kb, err := kbFixPairs(ctx, tx.query, orgID, args[1:])
			if err != nil {
				return 0, err
			}
			pairs = append(pairs, kb...)
			ids := map[string]bool{}
			for _, p := range pairs {
				ids[p.CVEID] = true
			}
			facts, err := cveFacts(ctx, tx.query, slices.Sorted(maps.Keys(ids)))
			if err != nil {
				return 0, err
			}
			for _, p := range pairs {
				for i := range missing[p.EndpointID] {
					if m := &missing[p.EndpointID][i]; m.Key == p.Key {
						m.CVEs = append(m.CVEs, p.CVEID)
						m.KEV = m.KEV || p.KEV
						f := facts[p.CVEID]
						m.MaxCVSS, m.MaxEPSS = maxOf(m.MaxCVSS, f.CVSS), maxOf(m.MaxEPSS, f.EPSS)
					}
				}
			}
		}
	}
	installs := 0
	for i := range cmds {
		r := sel.Select(missing[cmds[i].EndpointID], approvals)
		if r.Nothing != "" {
			cmds[i].Cancelled, cmds[i].Result = true, r.Nothing
			continue
		}
		b, _ := json.Marshal(r.Payload)
		cmds[i].Payload = b
		installs++
	}
	return installs, nil
}

// maxOf answers the greater of two optional numbers.
func maxOf(a, b *float64) *float64 {
	if a == nil || b != nil && *b > *a {
		return b
	}
	return a
}

// StopRun stops a running run: its pending commands become CANCELLED and
// the run STOPPED. Commands already running finish and are counted. A run
// that is not running is dberr.ErrConflict.
func (s *Store) StopRun(ctx context.Context, e *AuditEntry, orgID, runID string, now time.Time) (apiv1.Run, error) {
	err := s.Audited(ctx, e, func(tx *Tx) error {
		var status string
		err := tx.queryRow(ctx, `SELECT status FROM runs WHERE org_id = ? AND id = ?`, orgID, runID).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: run %s: %w", runID, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: stop run: %w", err)
		}
		if status != RunRunning {
			return fmt.Errorf("store: the run is %s already: %w", status, dberr.ErrConflict)
		}
		res, err := tx.exec(ctx, `UPDATE runs SET status = 'STOPPED', finished_at = ? WHERE id = ? AND status = 'RUNNING'`, millis(now), runID)
		if err != nil {
			return fmt.Errorf("store: stop run: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: the run finished meanwhile: %w", dberr.ErrConflict)
		}
		n, err := tx.cancelRunCommands(ctx, `run_id = ?`, []any{runID}, "Cancelled: the run was stopped by "+e.Actor+".", now)
		if err != nil {
			return err
		}
		e.TargetID = runID
		e.Summary = map[string]any{"cancelled": n}
		return nil
	})
	if err != nil {
		return apiv1.Run{}, err
	}
	return s.GetRun(ctx, orgID, runID)
}

// cancelRunCommands cancels the PENDING commands matching where, keeps the
// counters of their runs true, and answers how many it cancelled.
func (tx *Tx) cancelRunCommands(ctx context.Context, where string, args []any, reason string, now time.Time) (int, error) {
	rows, err := tx.query(ctx, `UPDATE commands SET status = 'CANCELLED', finished_at = ?, result = COALESCE(result, '') || ?
		WHERE status = 'PENDING' AND `+where+` RETURNING run_id`, append([]any{millis(now), reason}, args...)...)
	counts := map[string]int{}
	total := 0
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var run string
		if err := r.Scan(&run); err != nil {
			return err
		}
		counts[run]++
		total++
		return nil
	}); err != nil {
		return 0, fmt.Errorf("store: cancel commands: %w", err)
	}
	for run, n := range counts {
		if err := tx.closeCommands(ctx, run, CmdCancelled, n, now); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// DefaultCommandExpiry is how long a command without a maintenance window
// may wait for its endpoint before it is cancelled.
const DefaultCommandExpiry = 7 * 24 * time.Hour

// ExpireCommands cancels the commands that never started: those whose
// maintenance window ended, and those without a window older than expiry.
// Each gets a result that says why; the runs' counters follow.
func (s *Store) ExpireCommands(ctx context.Context, now time.Time, expiry time.Duration) (int, error) {
	if expiry <= 0 {
		expiry = DefaultCommandExpiry
	}
	// Asked of a reader first: the scheduler calls this every tick, and
	// taking the write transaction (SQLite's single writer, which the
	// check-in flushes and the ingester wait for) to find nothing was most
	// ticks' work. A command that falls due just after is the next tick's.
	const windowEnded, tooOld = `not_after IS NOT NULL AND not_after <= ?`, `not_after IS NULL AND created_at <= ?`
	var due bool
	if err := s.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM commands WHERE status = 'PENDING' AND `+windowEnded+`)
		OR EXISTS (SELECT 1 FROM commands WHERE status = 'PENDING' AND `+tooOld+`)`,
		millis(now), millis(now.Add(-expiry))).Scan(&due); err != nil {
		return 0, fmt.Errorf("store: expire commands: %w", err)
	}
	if !due {
		return 0, nil
	}
	total := 0
	err := s.InTx(ctx, func(tx *Tx) error {
		n, err := tx.cancelRunCommands(ctx, windowEnded, []any{millis(now)},
			"Cancelled: not started before the end of the maintenance window.", now)
		if err != nil {
			return err
		}
		m, err := tx.cancelRunCommands(ctx, tooOld, []any{millis(now.Add(-expiry))},
			fmt.Sprintf("Cancelled: the endpoint did not start the command within %s.", humanDuration(expiry)), now)
		total = n + m
		return err
	})
	return total, err
}

func humanDuration(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		if d == 24*time.Hour {
			return "1 day"
		}
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}

// ExistingEndpoints answers which of ids are endpoints of the organization.
func (s *Store) ExistingEndpoints(ctx context.Context, orgID string, ids []string) (map[string]bool, error) {
	out, err := endpointsAmong(ctx, s.query, orgID, ids)
	if err != nil {
		return nil, fmt.Errorf("store: existing endpoints: %w", err)
	}
	return out, nil
}

// endpointsAmong answers which of ids are endpoints of the organization,
// read through query (of the store or of a transaction).
func endpointsAmong(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error),
	orgID string, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for start := 0; start < len(ids); start += inChunk {
		part := ids[start:min(start+inChunk, len(ids))]
		rows, err := query(ctx, `SELECT id FROM endpoints WHERE org_id = ? AND id IN (`+placeholders(len(part))+`)`, append([]any{orgID}, anySlice(part)...)...)
		if err := addToSet(out, rows, err); err != nil {
			return nil, err
		}
	}
	return out, nil
}

var commandColumns = []string{"id", "org_id", "run_id", "endpoint_id", "endpoint_name", "type", "payload", "status",
	"created_at", "not_after", "result", "finished_at"}

// insertCommands writes a run's commands. On PostgreSQL the rows go as
// column arrays through unnest in one statement: a run on 10,000 endpoints
// is one round trip instead of a hundred and fifty.
func (tx *Tx) insertCommands(ctx context.Context, rows [][]any) error {
	if tx.s.engine != Postgres || len(rows) < 2*64 {
		return tx.insertRows(ctx, "commands", commandColumns, rows)
	}
	text := make([][]string, 8)
	for i := range text {
		text[i] = make([]string, len(rows))
	}
	created := make([]int64, len(rows))
	notAfter, finished := make([]*int64, len(rows)), make([]*int64, len(rows))
	result := make([]*string, len(rows))
	for r, row := range rows {
		for i := range 8 {
			text[i][r] = row[i].(string)
		}
		created[r] = row[8].(int64)
		if v, ok := row[9].(int64); ok {
			notAfter[r] = &v
		}
		if v, ok := row[10].(string); ok {
			result[r] = &v
		}
		if v, ok := row[11].(int64); ok {
			finished[r] = &v
		}
	}
	if _, err := tx.exec(ctx, `INSERT INTO commands (`+strings.Join(commandColumns, ", ")+`)
		SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::text[], ?::bigint[])`,
		text[0], text[1], text[2], text[3], text[4], text[5], text[6], text[7], created, notAfter, result, finished); err != nil {
		return fmt.Errorf("store: insert commands: %w", err)
	}
	return nil
}
