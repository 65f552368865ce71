package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/vulns"
)

// titles remembers software title ids by organization and name.
var titles = newCatalogCache[int64]()

// titleID answers the id of the organization's title name, made with
// publisher (the first one reported, kept) when it is new.
func (tx *Tx) titleID(ctx context.Context, orgID, name string, publisher *string) (int64, error) {
	k := [2]string{orgID, name}
	if id, ok := titles.get(k); ok {
		return id, nil
	}
	if id, ok := tx.newTitles[k]; ok {
		return id, nil
	}
	var pub any
	if publisher != nil && *publisher != "" {
		pub = *publisher
	}
	if _, err := tx.exec(ctx, `INSERT INTO software_titles (org_id, name, name_lower, publisher, installs) VALUES (?, ?, ?, ?, 0) ON CONFLICT (org_id, name) DO NOTHING`,
		orgID, name, strings.ToLower(name), pub); err != nil {
		return 0, fmt.Errorf("store: software title: %w", err)
	}
	var id int64
	if err := tx.queryRow(ctx, `SELECT id FROM software_titles WHERE org_id = ? AND name = ?`, orgID, name).Scan(&id); err != nil {
		return 0, fmt.Errorf("store: software title: %w", err)
	}
	// The id is shared with other transactions only once this one commits:
	// a rolled-back title row must not stay in the cache.
	if tx.newTitles == nil {
		tx.newTitles = map[[2]string]int64{}
	}
	tx.newTitles[k] = id
	return id, nil
}

type swRow struct {
	titleID                                                            int64
	versionKey                                                         string
	name                                                               string
	version, publisher, installDate, installedFor, instType, sourcePkg *string
}

func (r swRow) same(o swRow) bool {
	return eq(r.version, o.version) && eq(r.publisher, o.publisher) && eq(r.installDate, o.installDate) &&
		eq(r.installedFor, o.installedFor) && eq(r.instType, o.instType) && eq(r.sourcePkg, o.sourcePkg) && r.name == o.name
}

func eq(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// ReplaceInventory stores an endpoint's whole inventory in one transaction,
// as a difference against what is stored: unchanged rows stay (an update
// seen before keeps its detectedAt), and the organization's catalogs of
// software titles and update keys keep exact counts.
func (s *Store) ReplaceInventory(ctx context.Context, orgID, endpointID string, n inventory.Normalized, hash string, now time.Time) error {
	inv, err := prepareInventory(orgID, endpointID, n, hash, now)
	if err != nil {
		return err
	}
	return s.InTx(ctx, func(tx *Tx) error { return tx.replaceInventory(ctx, inv) })
}

// preparedInventory is an inventory with the work that needs no database
// done: it is stored by replaceInventory.
type preparedInventory struct {
	orgID, endpointID, hash string
	n                       inventory.Normalized
	sets                    []compressedDataset
	now                     time.Time
}

// prepareInventory compresses the datasets before the (single, on SQLite)
// writer is taken.
func prepareInventory(orgID, endpointID string, n inventory.Normalized, hash string, now time.Time) (*preparedInventory, error) {
	sets, err := compressDatasets(n.Datasets)
	if err != nil {
		return nil, err
	}
	return &preparedInventory{orgID: orgID, endpointID: endpointID, hash: hash, n: n, sets: sets, now: now}, nil
}

func (tx *Tx) replaceInventory(ctx context.Context, inv *preparedInventory) error {
	orgID, endpointID, n, hash, now, sets := inv.orgID, inv.endpointID, inv.n, inv.hash, inv.now, inv.sets
	doc := n.Doc
	{
		sys := doc.System
		macs, _ := json.Marshal(nonNilStrings(sys.MACAddresses))
		var distro any
		if n.Distro != "" {
			distro = n.Distro
		}
		res, err := tx.exec(ctx, `UPDATE endpoints SET hostname = ?, sort_name = CASE WHEN display_name IS NULL THEN ? ELSE sort_name END,
			os = ?, os_version = ?, os_build = ?, os_installation_type = ?, arch = ?, type = ?, domain = ?, ad_ou = ?, manufacturer = ?, model = ?, serial_number = ?,
			cpu = ?, cores = ?, ram_gb = ?, mac_addresses = ?, antivirus = ?, time_zone = ?, distro = COALESCE(?, distro),
			inventory_hash = ?, inventory_at = ? WHERE id = ? AND org_id = ?`,
			sys.Hostname, strings.ToLower(sys.Hostname), sys.OS, sys.OSVersion, sys.OSBuild, sys.OSInstallationType, nullIfEmpty(sys.Arch), sys.Type, sys.Domain, sys.ADOU,
			sys.Manufacturer, sys.Model, sys.SerialNumber, sys.CPU, sys.Cores, sys.RAMGB, string(macs), sys.Antivirus, sys.TimeZone, distro,
			hash, millis(doc.CollectedAt), endpointID, orgID)
		if err != nil {
			return fmt.Errorf("store: inventory system: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: endpoint %s: %w", endpointID, dberr.ErrNotFound)
		}
		if err := tx.replaceDisks(ctx, endpointID, doc.Disks); err != nil {
			return err
		}
		if err := tx.replaceSoftware(ctx, orgID, endpointID, doc.Software); err != nil {
			return err
		}
		if err := tx.replaceUpdates(ctx, orgID, endpointID, n.Updates, now); err != nil {
			return err
		}
		if err := tx.replaceDatasets(ctx, orgID, endpointID, sets, doc.CollectedAt); err != nil {
			return err
		}
		return tx.afterEndpointChange(ctx, orgID, endpointID)
	}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (tx *Tx) replaceDisks(ctx context.Context, endpointID string, disks []agentproto.Disk) error {
	if _, err := tx.exec(ctx, `DELETE FROM endpoint_disks WHERE endpoint_id = ?`, endpointID); err != nil {
		return fmt.Errorf("store: inventory disks: %w", err)
	}
	rows := make([][]any, len(disks))
	for i, d := range disks {
		rows[i] = []any{endpointID, i, d.Drive, d.SizeGB, d.FreeGB}
	}
	return tx.insertRows(ctx, "endpoint_disks", []string{"endpoint_id", "pos", "drive", "size_gb", "free_gb"}, rows)
}

func (tx *Tx) replaceSoftware(ctx context.Context, orgID, endpointID string, software []agentproto.Software) error {
	type key struct {
		title int64
		ver   string
	}
	old := map[key]swRow{}
	rows, err := tx.query(ctx, `SELECT title_id, version_key, publisher, install_date, installed_for, install_type, source_package
		FROM endpoint_software WHERE endpoint_id = ?`, endpointID)
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var r swRow
		if err := row.Scan(&r.titleID, &r.versionKey, &r.publisher, &r.installDate, &r.installedFor, &r.instType, &r.sourcePkg); err != nil {
			return err
		}
		old[key{r.titleID, r.versionKey}] = r
		return nil
	}); err != nil {
		return fmt.Errorf("store: inventory software: %w", err)
	}
	had := map[int64]bool{} // the titles the endpoint had, and has
	for k := range old {
		had[k.title] = true
	}
	has := map[int64]bool{}
	delta := map[int64]int{}
	var inserts [][]any
	for _, sw := range software {
		id, err := tx.titleID(ctx, orgID, sw.Name, sw.Publisher)
		if err != nil {
			return err
		}
		has[id] = true
		r := swRow{titleID: id, versionKey: inventory.VersionKey(sw.Version), publisher: sw.Publisher,
			installDate: sw.InstallDate, installedFor: sw.InstalledFor, instType: sw.InstallType, sourcePkg: sw.SourcePackage}
		k := key{id, r.versionKey}
		if prev, ok := old[k]; ok {
			delete(old, k)
			if prev.same(r) {
				continue
			}
			if _, err := tx.exec(ctx, `UPDATE endpoint_software SET publisher = ?, install_date = ?, installed_for = ?,
				install_type = ?, source_package = ? WHERE endpoint_id = ? AND title_id = ? AND version_key = ?`,
				r.publisher, r.installDate, r.installedFor, r.instType, r.sourcePkg, endpointID, id, r.versionKey); err != nil {
				return fmt.Errorf("store: inventory software: %w", err)
			}
			continue
		}
		delta[id]++
		tx.countVersion(titleVersion{id, r.versionKey}, 1)
		inserts = append(inserts, []any{endpointID, id, r.versionKey, r.publisher, r.installDate, r.installedFor, r.instType, r.sourcePkg})
	}
	for id := range has {
		if !had[id] {
			tx.countTitleHost(id, 1)
		}
	}
	for id := range had {
		if !has[id] {
			tx.countTitleHost(id, -1)
		}
	}
	for k := range old {
		delta[k.title]--
		tx.countVersion(titleVersion{k.title, k.ver}, -1)
		if _, err := tx.exec(ctx, `DELETE FROM endpoint_software WHERE endpoint_id = ? AND title_id = ? AND version_key = ?`, endpointID, k.title, k.ver); err != nil {
			return fmt.Errorf("store: inventory software: %w", err)
		}
	}
	if err := tx.insertRows(ctx, "endpoint_software", []string{"endpoint_id", "title_id", "version_key", "publisher",
		"install_date", "installed_for", "install_type", "source_package"}, inserts); err != nil {
		return err
	}
	tx.applyTitleDelta(delta)
	return nil
}

// applyTitleDelta counts install-count changes, written before the commit
// (see counts).
func (tx *Tx) applyTitleDelta(delta map[int64]int) {
	for id, d := range delta {
		tx.countTitle(id, d)
	}
}

type updRow struct {
	id, key, title, severity, source, categories   string
	derived                                        string // derived_severity
	kev                                            bool
	kb, winget, pkg, productKey, installed, latest *string
	reboot                                         bool
	release                                        sql.NullInt64
}

// updRowOf is the stored form of an inventory's update.
func updRowOf(u inventory.Update) updRow {
	cats, _ := json.Marshal(u.Categories)
	r := updRow{key: u.Key, title: u.Title, severity: u.Severity, source: u.Source, categories: string(cats), kb: u.KB, winget: u.WingetID,
		pkg: u.PackageName, productKey: u.ProductKey, installed: u.InstalledVersion, latest: u.LatestVersion, reboot: u.RebootRequired}
	if u.ReleaseDate != nil {
		r.release = sql.NullInt64{Int64: millis(*u.ReleaseDate), Valid: true}
	}
	return r
}

func (tx *Tx) replaceUpdates(ctx context.Context, orgID, endpointID string, ups []inventory.Update, now time.Time) error {
	old := map[string]updRow{}
	rows, err := tx.query(ctx, `SELECT id, key, title, severity, source, categories, kb, winget_id, package_name, product_key, installed_version,
		latest_version, reboot_required, release_date, derived_severity, kev FROM endpoint_updates WHERE endpoint_id = ?`, endpointID)
	if err := eachRow(rows, err, func(row *sql.Rows) error {
		var r updRow
		if err := row.Scan(&r.id, &r.key, &r.title, &r.severity, &r.source, &r.categories, &r.kb, &r.winget, &r.pkg, &r.productKey,
			&r.installed, &r.latest, &r.reboot, &r.release, &r.derived, &r.kev); err != nil {
			return err
		}
		old[r.key] = r
		return nil
	}); err != nil {
		return fmt.Errorf("store: inventory updates: %w", err)
	}
	var before, after missingCounts
	for _, r := range old {
		before.add(r.derived)
	}
	// The keys' effective severity, for the rows new or of a new reported
	// severity (the others keep theirs, which the matcher keeps current).
	var ask []string
	for _, u := range ups {
		if prev, ok := old[u.Key]; !ok || prev.severity != u.Severity {
			ask = append(ask, u.Key)
		}
	}
	keySev, err := keySeverities(ctx, tx.query, orgID, ask)
	if err != nil {
		return err
	}
	delta := map[string]int{}
	var inserts [][]any
	var fresh []newUpdateKey
	for _, u := range ups {
		r := updRowOf(u)
		if prev, ok := old[u.Key]; ok && prev.severity == r.severity {
			r.derived, r.kev = prev.derived, prev.kev
		} else {
			k := keySev[u.Key]
			r.derived, r.kev = higherSeverity(r.severity, k.severity), k.kev
		}
		after.add(r.derived)
		if prev, ok := old[u.Key]; ok {
			delete(old, u.Key)
			if prev.title == r.title && prev.severity == r.severity && prev.source == r.source && prev.categories == r.categories &&
				eq(prev.kb, r.kb) && eq(prev.winget, r.winget) && eq(prev.pkg, r.pkg) && eq(prev.productKey, r.productKey) &&
				eq(prev.installed, r.installed) && eq(prev.latest, r.latest) && prev.reboot == r.reboot && prev.release == r.release {
				continue
			}
			if _, err := tx.exec(ctx, `UPDATE endpoint_updates SET title = ?, severity = ?, source = ?, categories = ?, kb = ?, winget_id = ?,
				package_name = ?, product_key = ?, installed_version = ?, latest_version = ?, reboot_required = ?, release_date = ?,
				derived_severity = ?, kev = ? WHERE id = ?`,
				r.title, r.severity, r.source, r.categories, r.kb, r.winget, r.pkg, r.productKey, r.installed, r.latest, r.reboot, r.release,
				r.derived, r.kev, prev.id); err != nil {
				return fmt.Errorf("store: inventory updates: %w", err)
			}
			continue
		}
		delta[u.Key]++
		created, err := tx.createUpdateKey(ctx, orgID, r, now)
		if err != nil {
			return err
		}
		if created {
			fresh = append(fresh, newUpdateKey{key: u.Key, severity: r.severity, source: r.source, title: r.title})
		}
		inserts = append(inserts, []any{NewID(), orgID, endpointID, u.Key, r.title, r.kb, r.severity, r.source, r.categories, r.winget, r.pkg,
			r.productKey, r.installed, r.latest, r.reboot, r.release, millis(now), r.derived, r.kev})
	}
	for k, r := range old {
		delta[k]--
		if _, err := tx.exec(ctx, `DELETE FROM endpoint_updates WHERE id = ?`, r.id); err != nil {
			return fmt.Errorf("store: inventory updates: %w", err)
		}
	}
	if err := tx.insertRows(ctx, "endpoint_updates", []string{"id", "org_id", "endpoint_id", "key", "title", "kb", "severity", "source", "categories",
		"winget_id", "package_name", "product_key", "installed_version", "latest_version", "reboot_required", "release_date", "detected_at",
		"derived_severity", "kev"}, inserts); err != nil {
		return err
	}
	tx.applyKeyDelta(orgID, delta)
	if after != before {
		if _, err := tx.exec(ctx, `UPDATE endpoints SET missing_critical = ?, missing_important = ?, missing_moderate = ?, missing_low = ?,
			missing_unspecified = ? WHERE id = ?`, after[0], after[1], after[2], after[3], after[4], endpointID); err != nil {
			return fmt.Errorf("store: inventory update counts: %w", err)
		}
	}
	return tx.afterNewUpdateKeys(ctx, orgID, fresh, now)
}

// keySeverity is an update key's effective severity and whether it fixes a
// KEV CVE (update_keys.severity, kev).
type keySeverity struct {
	severity string
	kev      bool
}

// keySeverities answers the effective severity of the organization's update
// keys (those not found left out).
func keySeverities(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), orgID string, keys []string) (map[string]keySeverity, error) {
	out := map[string]keySeverity{}
	for start := 0; start < len(keys); start += inChunk {
		part := anySlice(keys[start:min(start+inChunk, len(keys))])
		rows, err := query(ctx, `SELECT key, severity, kev FROM update_keys WHERE org_id = ? AND key IN (`+placeholders(len(part))+`)`,
			append([]any{orgID}, part...)...)
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var k string
			var v keySeverity
			if err := r.Scan(&k, &v.severity, &v.kev); err != nil {
				return err
			}
			out[k] = v
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store: update key severities: %w", err)
		}
	}
	return out, nil
}

// higherSeverity answers the higher of two update severities (an unknown
// one as Unspecified).
func higherSeverity(a, b string) string {
	if vulns.SeverityRank(b) > vulns.SeverityRank(a) {
		a = b
	}
	if vulns.SeverityRank(a) == 0 {
		return "Unspecified"
	}
	return a
}

// missingCounts counts an endpoint's missing updates by severity, in the
// order of updates.Severities (endpoints.missing_critical …
// missing_unspecified).
type missingCounts [5]int

func (c *missingCounts) add(severity string) {
	switch severity {
	case "Critical":
		c[0]++
	case "Important":
		c[1]++
	case "Moderate":
		c[2]++
	case "Low":
		c[3]++
	default:
		c[4]++
	}
}

// applyKeyDelta counts endpoint-count changes of update keys, written
// before the commit (see counts).
func (tx *Tx) applyKeyDelta(orgID string, delta map[string]int) {
	for k, d := range delta {
		tx.countKey(orgID, k, d)
	}
}

type compressedDataset struct {
	name  string
	blob  []byte
	count int
}

func compressDatasets(sets []inventory.Dataset) ([]compressedDataset, error) {
	out := make([]compressedDataset, 0, len(sets))
	for _, d := range sets {
		b, err := compressJSON(d.JSON)
		if err != nil {
			return nil, fmt.Errorf("store: dataset %s: %w", d.Name, err)
		}
		out = append(out, compressedDataset{name: d.Name, blob: b, count: d.Rows})
	}
	return out, nil
}

func (tx *Tx) replaceDatasets(ctx context.Context, orgID, endpointID string, sets []compressedDataset, at time.Time) error {
	if _, err := tx.exec(ctx, `DELETE FROM endpoint_datasets WHERE endpoint_id = ?`, endpointID); err != nil {
		return fmt.Errorf("store: inventory datasets: %w", err)
	}
	rows := make([][]any, 0, len(sets))
	for _, d := range sets {
		rows = append(rows, []any{endpointID, orgID, d.name, d.blob, d.count, millis(at)})
	}
	return tx.insertRows(ctx, "endpoint_datasets", []string{"endpoint_id", "org_id", "name", "rows_gz", "row_count", "collected_at"}, rows)
}

// releaseInventory takes an endpoint's software and updates out of the
// organization's counts (before the endpoint is deleted).
func (tx *Tx) releaseInventory(ctx context.Context, orgID, endpointID string) error {
	tdelta := map[int64]int{}
	rows, err := tx.query(ctx, `SELECT title_id, version_key FROM endpoint_software WHERE endpoint_id = ?`, endpointID)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id int64
		var ver string
		if err := r.Scan(&id, &ver); err != nil {
			return err
		}
		tdelta[id]--
		tx.countVersion(titleVersion{id, ver}, -1)
		return nil
	}); err != nil {
		return fmt.Errorf("store: release software: %w", err)
	}
	for id := range tdelta {
		tx.countTitleHost(id, -1)
	}
	kdelta := map[string]int{}
	rows, err = tx.query(ctx, `SELECT key FROM endpoint_updates WHERE endpoint_id = ?`, endpointID)
	keys, err := scanRows(rows, err, scanString)
	if err != nil {
		return fmt.Errorf("store: release updates: %w", err)
	}
	for _, k := range keys {
		kdelta[k]--
	}
	tx.applyTitleDelta(tdelta)
	tx.applyKeyDelta(orgID, kdelta)
	return nil
}

// insertRows inserts rows in multi-row statements.
func (tx *Tx) insertRows(ctx context.Context, table string, columns []string, rows [][]any) error {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	insert := "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES %s"
	return tx.execRows(ctx, "insert into "+table, insert, one, rows)
}

// execRows runs format, whose VALUES list is %s, on the rows in the chunks
// of statementChunks, each row written as row says: the multi-row inserts
// of inventories and the counters' updates.
func (tx *Tx) execRows(ctx context.Context, what, format, row string, rows [][]any) error {
	var args []any
	for chunk := range statementChunks(rows) {
		args = args[:0]
		for _, r := range chunk {
			args = append(args, r...)
		}
		if _, err := tx.exec(ctx, statementText(format, row, len(chunk)), args...); err != nil {
			return fmt.Errorf("store: %s: %w", what, err)
		}
	}
	return nil
}

// statementTexts are the texts statementText made.
var statementTexts sync.Map // statementKey -> string

type statementKey struct {
	format, row string
	n           int
}

// statementText answers format with its %s replaced by n copies of row
// separated by commas: a multi-row statement. Its few texts (the chunks of
// statementChunks) are made once, not again for each inventory; callers
// pass constant formats and rows, so the texts are bounded.
func statementText(format, row string, n int) string {
	k := statementKey{format, row, n}
	if v, ok := statementTexts.Load(k); ok {
		return v.(string)
	}
	text := fmt.Sprintf(format, strings.TrimSuffix(strings.Repeat(row+", ", n), ", "))
	statementTexts.Store(k, text)
	return text
}

// rowsPerStatement bounds the rows one multi-row statement writes.
const rowsPerStatement = 64

// statementChunks splits rows for multi-row statements: rowsPerStatement
// at a time, the rest in chunks of powers of two (32, 16, …, 1), so that a
// table's statements come in seven texts, which the writer's statement
// cache keeps prepared, whatever the number of rows.
func statementChunks[T any](rows []T) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		for n := rowsPerStatement; len(rows) > 0; {
			for n > len(rows) {
				n /= 2
			}
			if !yield(rows[:n]) {
				return
			}
			rows = rows[n:]
		}
	}
}
