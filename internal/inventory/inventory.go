// Package inventory checks and normalises the inventory documents agents
// send (agent protocol section 3) before they are stored: the first problem
// is reported, and nothing is stored for an invalid document.
package inventory

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/updates"
)

// Limits of one inventory document.
const (
	MaxSoftware     = 20000
	MaxUpdates      = 5000
	MaxDisks        = 256
	MaxDatasets     = 100
	MaxDatasetRows  = 50000
	MaxText         = 4096
	MaxHostname     = agentproto.MaxHostname
	MaxAddresses    = agentproto.MaxIPAddresses
	MaxDrive        = agentproto.MaxDrive
	MaxMACAddress   = agentproto.MaxMACAddress
	MaxCategoryList = 32
)

var datasetName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Problem is the first thing wrong with a document.
type Problem struct{ Field, Message string }

func (p *Problem) Error() string { return p.Field + ": " + p.Message }

func bad(field, format string, args ...any) error {
	return &Problem{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Update is an update of the document with its derived key.
type Update struct {
	agentproto.Update
	Key      string
	Severity string
}

// Normalized is a checked document, ready to store.
type Normalized struct {
	Doc     *agentproto.Inventory
	Updates []Update
}

// Check validates doc for an endpoint of the given platform and distro,
// trims its text, drops duplicate software rows, derives update keys, and
// answers the first problem found.
func Check(doc *agentproto.Inventory, platform, distro string, now time.Time) (Normalized, error) {
	if doc.CollectedAt.IsZero() || doc.CollectedAt.After(now.Add(24*time.Hour)) {
		doc.CollectedAt = now
	}
	sys := &doc.System
	sys.Hostname = strings.TrimSpace(sys.Hostname)
	if sys.Hostname == "" {
		return Normalized{}, bad("system.hostname", "is required")
	}
	if !validText(sys.Hostname, MaxHostname) {
		return Normalized{}, bad("system.hostname", "must be valid text of at most %d bytes", MaxHostname)
	}
	switch sys.Type {
	case "":
		sys.Type = "workstation"
	case "server", "workstation":
	default:
		return Normalized{}, bad("system.type", "must be server or workstation, not %q", sys.Type)
	}
	for name, p := range map[string]**string{"system.os": &sys.OS, "system.osVersion": &sys.OSVersion, "system.osBuild": &sys.OSBuild,
		"system.osInstallationType": &sys.OSInstallationType,
		"system.domain":             &sys.Domain, "system.adOu": &sys.ADOU, "system.manufacturer": &sys.Manufacturer, "system.model": &sys.Model,
		"system.serialNumber": &sys.SerialNumber, "system.cpu": &sys.CPU, "system.antivirus": &sys.Antivirus, "system.timeZone": &sys.TimeZone} {
		if err := text(name, p); err != nil {
			return Normalized{}, err
		}
	}
	if sys.Cores != nil && (*sys.Cores < 0 || *sys.Cores > 1<<16) {
		return Normalized{}, bad("system.cores", "must be between 0 and 65536")
	}
	if sys.RAMGB != nil && (*sys.RAMGB < 0 || math.IsNaN(*sys.RAMGB) || *sys.RAMGB > 1<<20) {
		return Normalized{}, bad("system.ramGB", "must be a plausible number of GB")
	}
	if len(sys.MACAddresses) > MaxAddresses {
		return Normalized{}, bad("system.macAddresses", "lists more than %d addresses", MaxAddresses)
	}
	for i, m := range sys.MACAddresses {
		if !validText(m, MaxMACAddress) {
			return Normalized{}, bad(fmt.Sprintf("system.macAddresses[%d]", i), "must be valid text of at most %d bytes", MaxMACAddress)
		}
	}
	if len(doc.Disks) > MaxDisks {
		return Normalized{}, bad("disks", "lists more than %d disks", MaxDisks)
	}
	for i := range doc.Disks {
		d := &doc.Disks[i]
		d.Drive = strings.TrimSpace(d.Drive)
		if d.Drive == "" {
			return Normalized{}, bad(fmt.Sprintf("disks[%d].drive", i), "is required")
		}
		if !validText(d.Drive, MaxDrive) {
			return Normalized{}, bad(fmt.Sprintf("disks[%d].drive", i), "must be valid text of at most %d bytes", MaxDrive)
		}
		if err := size(fmt.Sprintf("disks[%d].sizeGB", i), d.SizeGB); err != nil {
			return Normalized{}, err
		}
		if err := size(fmt.Sprintf("disks[%d].freeGB", i), d.FreeGB); err != nil {
			return Normalized{}, err
		}
	}
	if len(doc.Software) > MaxSoftware {
		return Normalized{}, bad("software", "lists more than %d applications", MaxSoftware)
	}
	seen := make(map[[2]string]bool, len(doc.Software))
	kept := doc.Software[:0]
	for i := range doc.Software {
		sw := doc.Software[i]
		sw.Name = strings.TrimSpace(sw.Name)
		field := fmt.Sprintf("software[%d]", i)
		if sw.Name == "" {
			return Normalized{}, bad(field+".name", "is required")
		}
		if !validText(sw.Name, MaxText) {
			return Normalized{}, bad(field+".name", "must be valid text of at most %d bytes", MaxText)
		}
		for name, p := range map[string]**string{".version": &sw.Version, ".publisher": &sw.Publisher, ".installDate": &sw.InstallDate,
			".installedFor": &sw.InstalledFor, ".installType": &sw.InstallType, ".sourcePackage": &sw.SourcePackage} {
			if err := text(field+name, p); err != nil {
				return Normalized{}, err
			}
		}
		k := [2]string{sw.Name, VersionKey(sw.Version)}
		if seen[k] {
			continue
		}
		seen[k] = true
		kept = append(kept, sw)
	}
	doc.Software = kept
	if len(doc.Updates) > MaxUpdates {
		return Normalized{}, bad("updates", "lists more than %d updates", MaxUpdates)
	}
	out := Normalized{Doc: doc, Updates: make([]Update, 0, len(doc.Updates))}
	keys := make(map[string]bool, len(doc.Updates))
	for i, u := range doc.Updates {
		field := fmt.Sprintf("updates[%d]", i)
		u.Title = strings.TrimSpace(u.Title)
		if u.Title == "" {
			return Normalized{}, bad(field+".title", "is required")
		}
		if !validText(u.Title, MaxText) {
			return Normalized{}, bad(field+".title", "must be valid text of at most %d bytes", MaxText)
		}
		if !updates.ValidSource(u.Source) {
			return Normalized{}, bad(field+".source", "must be %q, %q or %q", updates.SourceOSMandatory, updates.SourceOSOptional, updates.SourceApps)
		}
		sev, ok := updates.NormalizeSeverity(deref(u.Severity))
		if !ok {
			return Normalized{}, bad(field+".severity", "must be Critical, Important, Moderate, Low or Unspecified")
		}
		for name, p := range map[string]**string{".kb": &u.KB, ".wingetId": &u.WingetID, ".packageName": &u.PackageName,
			".installedVersion": &u.InstalledVersion, ".latestVersion": &u.LatestVersion, ".productKey": &u.ProductKey, ".distro": &u.Distro} {
			if err := text(field+name, p); err != nil {
				return Normalized{}, err
			}
		}
		if len(u.Categories) > MaxCategoryList {
			return Normalized{}, bad(field+".categories", "lists more than %d categories", MaxCategoryList)
		}
		for j, c := range u.Categories {
			if !validText(c, MaxText) {
				return Normalized{}, bad(fmt.Sprintf("%s.categories[%d]", field, j), "must be valid text of at most %d bytes", MaxText)
			}
		}
		key, err := updates.Key(platform, distro, u)
		if err != nil {
			return Normalized{}, bad(field, "%v", err)
		}
		if keys[key] {
			continue
		}
		keys[key] = true
		if u.Categories == nil {
			u.Categories = []string{}
		}
		out.Updates = append(out.Updates, Update{Update: u, Key: key, Severity: sev})
	}
	if len(doc.Datasets) > MaxDatasets {
		return Normalized{}, bad("datasets", "holds more than %d datasets", MaxDatasets)
	}
	for name, rows := range doc.Datasets {
		if !datasetName.MatchString(name) {
			return Normalized{}, bad("datasets", "name %q must be lower-case letters, digits, '-' or '_' (at most 64)", name)
		}
		if len(rows) > MaxDatasetRows {
			return Normalized{}, bad("datasets."+name, "holds more than %d rows", MaxDatasetRows)
		}
	}
	return out, nil
}

// VersionKey is the stored form of a nullable version in keys.
func VersionKey(v *string) string {
	if v == nil {
		return ""
	}
	return *v
}

func text(field string, p **string) error {
	if *p == nil {
		return nil
	}
	v := strings.TrimSpace(**p)
	if !validText(v, MaxText) {
		return bad(field, "must be valid text of at most %d bytes", MaxText)
	}
	if v == "" {
		*p = nil
		return nil
	}
	*p = &v
	return nil
}

// validText tells whether s is UTF-8 of at most max bytes without NUL.
// The request decoder refuses NUL already; Check holds the same rule for
// documents that reach it another way.
func validText(s string, max int) bool {
	return len(s) <= max && utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

func size(field string, v *float64) error {
	if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
		return bad(field, "must be a number of 0 or more")
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
