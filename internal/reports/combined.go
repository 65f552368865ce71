package reports

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // local-time works where the host has no zone database

	"github.com/patchd/patchd/internal/store"
)

// Reports that combine sources or aggregate them. Their output is small
// (one row per endpoint, user, week or process name), so they build it in
// memory while the inputs stream.

func str(row map[string]any, k string) string {
	switch v := row[k].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func num(row map[string]any, k string) float64 {
	switch v := row[k].(type) {
	case float64:
		return v
	case string:
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return 0
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func daysSince(date string, now time.Time) any {
	t, ok := parseTime(date)
	if !ok {
		return nil
	}
	return int64(now.Sub(t).Hours() / 24)
}

func isSDCard(row map[string]any) bool {
	name := strings.ToLower(str(row, "name"))
	return strings.Contains(name, "card reader") || strings.Contains(name, "sd card") || strings.Contains(name, "sdxc") || strings.Contains(name, "sdhc")
}

// localTime is the UTC offset and the local time now in the zone named
// iana, or at the offset collected when the zone is unknown.
func localTime(iana, collectedOffset string, now time.Time) []any {
	if loc, err := time.LoadLocation(iana); err == nil && iana != "" {
		t := now.In(loc)
		return []any{t.Format("-07:00"), t.Format("2006-01-02 15:04:05")}
	}
	if t, err := time.Parse("-07:00", collectedOffset); err == nil {
		_, off := t.Zone()
		return []any{collectedOffset, now.In(time.FixedZone("", off)).Format("2006-01-02 15:04:05")}
	}
	return []any{nil, nil}
}

// weeklyUpdates counts the installed updates of the last twelve weeks by
// week (starting Monday, UTC), newest week first.
func weeklyUpdates(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error) {
	type week struct {
		installed, security, byPatchd int64
		endpoints                     map[string]bool
	}
	day := env.Now.UTC().Truncate(24 * time.Hour)
	thisWeek := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	oldest := thisWeek.AddDate(0, 0, -7*11)
	weeks := map[time.Time]*week{}
	err := eachDataset(ctx, env, seen, "installed-updates", "", func(d store.ReportDataset) {
		for _, row := range d.Rows {
			at, ok := parseTime(str(row, "installedAt"))
			if !ok || at.Before(oldest) || at.After(env.Now) {
				continue
			}
			at = at.UTC().Truncate(24 * time.Hour)
			start := at.AddDate(0, 0, -((int(at.Weekday()) + 6) % 7))
			w := weeks[start]
			if w == nil {
				w = &week{endpoints: map[string]bool{}}
				weeks[start] = w
			}
			w.installed++
			if str(row, "type") == "Security Update" {
				w.security++
			}
			if str(row, "installedBy") == "patchd" {
				w.byPatchd++
			}
			w.endpoints[d.EndpointID] = true
		}
	})
	if err != nil {
		return nil, err
	}
	var out [][]any
	for start := thisWeek; !start.Before(oldest); start = start.AddDate(0, 0, -7) {
		if w := weeks[start]; w != nil {
			out = append(out, []any{start.Format("2006-01-02"), w.installed, w.security, int64(len(w.endpoints)), w.byPatchd})
		}
	}
	return out, nil
}

// firstRows reads the first row of a one-row dataset per endpoint.
func firstRows(ctx context.Context, env Env, seen func(time.Time), name, platform string) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	err := eachDataset(ctx, env, seen, name, platform, func(d store.ReportDataset) {
		if len(d.Rows) > 0 {
			out[d.EndpointID] = d.Rows[0]
		}
	})
	return out, err
}

// allRows reads every row of a dataset per endpoint.
func allRows(ctx context.Context, env Env, seen func(time.Time), name, platform string) (map[string][]map[string]any, error) {
	out := map[string][]map[string]any{}
	err := eachDataset(ctx, env, seen, name, platform, func(d store.ReportDataset) { out[d.EndpointID] = d.Rows })
	return out, err
}

// win11 checks the Windows 11 hardware requirements that the inventory
// can tell: a 64-bit processor with 2 cores at 1 GHz or more, 4 GB of RAM,
// a 64 GB system disk, UEFI with Secure Boot, and a TPM (known present when
// BitLocker uses it as a key protector; unknown otherwise). The processor
// generation list is not checked.
func win11(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error) {
	eps, err := env.Store.ReportEndpoints(ctx, env.OrgID, "windows")
	if err != nil {
		return nil, err
	}
	firmware, err := firstRows(ctx, env, seen, "firmware", "windows")
	if err != nil {
		return nil, err
	}
	cpus, err := firstRows(ctx, env, seen, "processors", "windows")
	if err != nil {
		return nil, err
	}
	bitlocker, err := allRows(ctx, env, seen, "bitlocker", "windows")
	if err != nil {
		return nil, err
	}
	var out [][]any
	for _, e := range eps {
		if strings.Contains(e.OS, "Server") {
			continue
		}
		seen(e.InventoryAt)
		var issues []string
		unknown := false
		check := func(known, ok bool, issue string) {
			switch {
			case !known:
				unknown = true
			case !ok:
				issues = append(issues, issue)
			}
		}
		cpu := cpus[e.ID]
		arch, cores, clock := any(nil), any(nil), any(nil)
		if cpu != nil {
			arch, cores, clock = cpu["architecture"], cpu["cores"], cpu["maxClockMHz"]
			a := str(cpu, "architecture")
			check(a != "", a == "amd64" || a == "arm64", "32-bit processor")
			check(cpu["cores"] != nil, num(cpu, "cores") >= 2, "fewer than 2 cores")
			check(cpu["maxClockMHz"] != nil, num(cpu, "maxClockMHz") >= 1000, "processor slower than 1 GHz")
		} else {
			unknown = true
		}
		check(e.RAMGB != nil, e.RAMGB != nil && *e.RAMGB >= 3.8, "less than 4 GB of RAM")
		check(e.SystemDiskGB != nil, e.SystemDiskGB != nil && *e.SystemDiskGB >= 64, "system disk under 64 GB")
		fw := firmware[e.ID]
		mode, secure := any(nil), any(nil)
		if fw != nil {
			mode, secure = fw["mode"], fw["secureBoot"]
			check(fw["mode"] != nil, str(fw, "mode") == "UEFI", "legacy BIOS boot")
			check(fw["secureBoot"] != nil, fw["secureBoot"] == true, "Secure Boot off")
		} else {
			unknown = true
		}
		tpm := "Unknown"
		for _, b := range bitlocker[e.ID] {
			if strings.Contains(str(b, "keyProtectors"), "Tpm") {
				tpm = "Yes"
			}
		}
		if tpm == "Unknown" {
			unknown = true
		}
		compatible := "Yes"
		switch {
		case len(issues) > 0:
			compatible = "No"
		case unknown:
			compatible = "Unknown"
		}
		out = append(out, []any{e.Name, e.ID, e.OS, e.CPU, arch, cores, clock, floatOrNil(e.RAMGB), floatOrNil(e.SystemDiskGB),
			mode, secure, tpm, compatible, strings.Join(issues, "; ")})
	}
	return out, nil
}

func floatOrNil(f *float64) any {
	if f == nil {
		return nil
	}
	return round2(*f)
}

// compliance: an endpoint complies when it misses no critical update, has
// no critical vulnerability, runs an antivirus (Windows and macOS) and
// encrypts its system drive (BitLocker on, or LUKS/FileVault on /).
func compliance(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error) {
	eps, err := env.Store.ReportEndpoints(ctx, env.OrgID, "")
	if err != nil {
		return nil, err
	}
	bitlocker, err := allRows(ctx, env, seen, "bitlocker", "windows")
	if err != nil {
		return nil, err
	}
	encryption, err := allRows(ctx, env, seen, "disk-encryption", "")
	if err != nil {
		return nil, err
	}
	out := make([][]any, 0, len(eps))
	for _, e := range eps {
		seen(e.InventoryAt)
		var issues []string
		if e.MissingCritical > 0 {
			issues = append(issues, fmt.Sprintf("%d critical updates missing", e.MissingCritical))
		}
		if e.CriticalVulns > 0 {
			issues = append(issues, fmt.Sprintf("%d critical vulnerabilities", e.CriticalVulns))
		}
		av := any(nil)
		if e.Antivirus != "" {
			av = e.Antivirus
		} else if e.Platform != "linux" {
			issues = append(issues, "no antivirus")
		}
		enc := "Unknown"
		if rows, ok := bitlocker[e.ID]; ok {
			enc = "Off"
			for _, r := range rows {
				if strings.EqualFold(str(r, "drive"), "C:") && str(r, "protectionStatus") == "On" {
					enc = "BitLocker"
				}
			}
		}
		if rows, ok := encryption[e.ID]; ok {
			enc = "Off"
			for _, r := range rows {
				if (str(r, "volume") == "/" || str(r, "volume") == "/System/Volumes/Data") && r["encrypted"] == true {
					enc = str(r, "method")
				}
			}
		}
		if enc == "Off" {
			issues = append(issues, "system drive not encrypted")
		}
		compliant := "Yes"
		if len(issues) > 0 {
			compliant = "No"
		}
		out = append(out, []any{e.Name, e.ID, e.Platform, e.OS, int64(e.MissingCritical), int64(e.CriticalVulns), av, enc, compliant, strings.Join(issues, "; ")})
	}
	return out, nil
}

// logonStatistics aggregates the logon history by endpoint and user.
func logonStatistics(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error) {
	var out [][]any
	err := eachDataset(ctx, env, seen, "logon-history", "", func(d store.ReportDataset) {
		type stat struct {
			ok, failed int64
			types      map[string]bool
			last       string
		}
		users := map[string]*stat{}
		for _, r := range d.Rows {
			u := str(r, "user")
			s := users[u]
			if s == nil {
				s = &stat{types: map[string]bool{}}
				users[u] = s
			}
			if r["success"] == false {
				s.failed++
			} else {
				s.ok++
				if at := str(r, "logonAt"); at > s.last {
					s.last = at
				}
			}
			if t := str(r, "logonType"); t != "" {
				s.types[t] = true
			}
		}
		names := make([]string, 0, len(users))
		for u := range users {
			names = append(names, u)
		}
		sort.Strings(names)
		for _, u := range names {
			s := users[u]
			types := make([]string, 0, len(s.types))
			for t := range s.types {
				types = append(types, t)
			}
			sort.Strings(types)
			var last any
			if s.last != "" {
				last = s.last
			}
			out = append(out, []any{d.EndpointName, d.EndpointID, u, s.ok, s.failed, strings.Join(types, ", "), last})
		}
	})
	return out, err
}

// profilesByUser lists the profiles across the fleet by user.
func profilesByUser(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error) {
	var out [][]any
	err := eachDataset(ctx, env, seen, "profiles", "", func(d store.ReportDataset) {
		for _, r := range d.Rows {
			out = append(out, []any{cell(r["user"]), d.EndpointName, d.EndpointID, cell(r["path"]), cell(r["sizeMB"]), cell(r["lastUsedAt"])})
		}
	})
	sort.SliceStable(out, func(i, j int) bool {
		a, b := strings.ToLower(fmt.Sprint(out[i][0])), strings.ToLower(fmt.Sprint(out[j][0]))
		return a < b
	})
	return out, err
}

// processMemory aggregates the running processes by name.
func processMemory(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error) {
	type stat struct {
		instances, endpoints int64
		total, peak          float64
	}
	procs := map[string]*stat{}
	err := eachDataset(ctx, env, seen, "processes", "", func(d store.ReportDataset) {
		here := map[string]bool{}
		for _, r := range d.Rows {
			name := str(r, "name")
			s := procs[name]
			if s == nil {
				s = &stat{}
				procs[name] = s
			}
			m := num(r, "memoryMB")
			s.instances++
			s.total += m
			s.peak = max(s.peak, m)
			if !here[name] {
				here[name] = true
				s.endpoints++
			}
		}
	}, "name", "memoryMB")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(procs))
	for n := range procs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if procs[names[i]].total != procs[names[j]].total {
			return procs[names[i]].total > procs[names[j]].total
		}
		return names[i] < names[j]
	})
	out := make([][]any, len(names))
	for i, n := range names {
		s := procs[n]
		out[i] = []any{n, s.instances, s.endpoints, round2(s.total), round2(s.total / float64(s.instances)), round2(s.peak)}
	}
	return out, nil
}

// vulnerabilityList reads the vulnerability list of the API (operation 8)
// page by page.
func vulnerabilityList(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error) {
	at, err := env.Store.LatestInventory(ctx, env.OrgID)
	if err != nil {
		return nil, err
	}
	var out [][]any
	for offset := 0; ; {
		page, total, err := env.Store.ListVulnerabilities(ctx, store.VulnQuery{OrgID: env.OrgID, Limit: 500, Offset: offset, Now: env.Now})
		if err != nil {
			return nil, err
		}
		for _, v := range page {
			names := make([]string, len(v.Endpoints))
			for i, e := range v.Endpoints {
				names[i] = e.Name
			}
			out = append(out, []any{v.CVEID, strOrNil(v.Severity), floatOrNil(v.CVSSScore), v.CISAKEV, v.Ransomware, timeOrNil(v.PublishedAt),
				strOrNil(v.RemediationStatus), timeOrNil(v.RemediationDeadline), int64(len(v.Endpoints)), strings.Join(v.Software, ", "), strOrNil(v.NVDURL)})
		}
		offset += len(page)
		if len(page) == 0 || offset >= total {
			break
		}
	}
	if len(out) > 0 {
		seen(at)
	}
	return out, nil
}

func strOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func timeOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func compensatingControls(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error) {
	list, err := env.Store.ListVulnExceptions(ctx, env.OrgID, store.ExceptionCompensatingControl, env.Now)
	if err != nil {
		return nil, err
	}
	out := make([][]any, len(list))
	for i, x := range list {
		seen(x.CreatedAt)
		out[i] = []any{x.CVEID, x.Reason, x.Active, timeOrNil(x.ExpiresAt), int64(x.Endpoints), x.CreatedBy, x.CreatedAt.UTC().Format(time.RFC3339)}
	}
	return out, nil
}

// vulnerabilitySummary counts the findings by severity.
func vulnerabilitySummary(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error) {
	order := []string{"Critical", "High", "Medium", "Low", "None", "Unscored"}
	type stat struct {
		cves, kev, endpoints map[string]bool
		findings             int64
	}
	stats := map[string]*stat{}
	for row, err := range sql("vuln-findings", "")(ctx, env, seen) {
		if err != nil {
			return nil, err
		}
		sev, _ := row[3].(string)
		if sev == "" {
			sev = "Unscored"
		}
		s := stats[sev]
		if s == nil {
			s = &stat{cves: map[string]bool{}, kev: map[string]bool{}, endpoints: map[string]bool{}}
			stats[sev] = s
		}
		cve, _ := row[2].(string)
		s.findings++
		s.cves[cve] = true
		s.endpoints[fmt.Sprint(row[1])] = true
		if row[5] == true {
			s.kev[cve] = true
		}
	}
	var other []string
	for sev := range stats {
		if !slices.Contains(order, sev) {
			other = append(other, sev)
		}
	}
	sort.Strings(other)
	order = append(order, other...)
	var out [][]any
	for _, sev := range order {
		if s := stats[sev]; s != nil {
			out = append(out, []any{sev, int64(len(s.cves)), s.findings, int64(len(s.endpoints)), int64(len(s.kev))})
		}
	}
	return out, nil
}

// complianceByGroup is every group's compliance under the organization's
// compliance policy (store.ComplianceByGroup): what the Compliance page
// and GET /api/v1/compliance/groups show.
func complianceByGroup(ctx context.Context, env Env, seen func(time.Time)) ([][]any, error) {
	gs, _, err := env.Store.ComplianceByGroup(ctx, env.OrgID, env.Now)
	if err != nil {
		return nil, err
	}
	out := make([][]any, 0, len(gs))
	for _, g := range gs {
		if g.Endpoints == 0 {
			continue // an empty group has nothing to say
		}
		// The compliance is evaluated now, from the stored missing updates.
		seen(env.Now)
		pct := math.Round(float64(g.Compliant)*1000/float64(g.Endpoints)) / 10
		out = append(out, []any{g.Name, g.GroupID, g.Endpoints, g.Compliant, pct, g.Endpoints - g.Compliant, g.MissingCritical})
	}
	return out, nil
}
