package feeds

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// MSRCDocument is one monthly security update document of the Microsoft
// Security Response Center (CVRF 1.1, as api.msrc.microsoft.com serves it at
// /cvrf/v3.0/cvrf/{YYYY-Mon}, in JSON by default or XML with
// "Accept: application/xml").
type MSRCDocument struct {
	ID       string    // "2025-Nov"
	Title    string    // "November 2025 Security Updates"
	Released time.Time // InitialReleaseDate (UTC)
	Products []MSRCProduct
	Vulns    []MSRCVuln
}

// MSRCProduct is one entry of the document's ProductTree.
type MSRCProduct struct {
	ID   string // "12243"
	Name string // "Windows 11 Version 23H2 for x64-based Systems"
}

// MSRCVuln is one CVE of a document.
type MSRCVuln struct {
	CVE       string
	Title     string
	CVSS      *float64 // the highest base score of the CVSS score sets, nil without one
	Vector    string   // the vector of that score set
	Severity  string   // Microsoft's highest severity: Critical, Important, Moderate, Low or ""
	Exploited bool     // Threats, type Exploit Status: "Exploited:Yes"
	Disclosed bool     // "Publicly Disclosed:Yes"
	Fixes     []MSRCFix
}

// MSRCFix is one product's vendor fix (Remediations, type Vendor Fix) of a
// CVE: the KB and, for Windows, the build that carries it.
type MSRCFix struct {
	ProductID  string
	KB         string // "KB5068791" (the Description is the bare number), or ClickToRun
	FixedBuild string // "10.0.17763.8027", "" when Microsoft gives none
	SubType    string // "Security Update", "Security Hotpatch Update", …
	URL        string
}

// ClickToRun is the KB of the vendor fixes Microsoft names "Click to Run"
// (Microsoft 365 Apps, Office LTSC 2021/2024, Office 2019): no KB and no
// fixed build (the document's FixedBuild is a link to
// https://aka.ms/OfficeSecurityReleases); the fix is the Click-to-Run builds
// released on the month's Patch Tuesday (see OfficeBuild).
const ClickToRun = "Click to Run"

// Hotpatch reports whether the fix is a hotpatch update: it applies only to
// hotpatch-enrolled computers, whose builds count on a separate branch.
func (f MSRCFix) Hotpatch() bool { return strings.Contains(strings.ToLower(f.SubType), "hotpatch") }

// ParseMSRC reads one MSRC CVRF document, JSON or XML (told apart by its
// first byte).
func ParseMSRC(r io.Reader) (MSRCDocument, error) {
	br := bufio.NewReader(r)
	first, err := firstByte(br)
	if err != nil {
		return MSRCDocument{}, fmt.Errorf("msrc: %w", err)
	}
	var doc MSRCDocument
	if first == '<' {
		doc, err = parseMSRCXML(br)
	} else {
		doc, err = parseMSRCJSON(br)
	}
	if err != nil {
		return doc, err
	}
	if doc.ID == "" {
		return doc, fmt.Errorf("msrc: document without DocumentTracking/Identification/ID")
	}
	return doc, nil
}

// The shapes both encodings decode to before normalising.
type msrcThreat struct {
	Type        string
	Description string
}

type msrcScore struct {
	Base   string
	Vector string
}

type msrcRemediation struct {
	Type        string
	Description string
	URL         string
	SubType     string
	FixedBuild  string
	ProductIDs  []string
}

func buildVuln(cve, title string, threats []msrcThreat, scores []msrcScore, rems []msrcRemediation) MSRCVuln {
	v := MSRCVuln{CVE: strings.TrimSpace(cve), Title: strings.TrimSpace(title)}
	sevRank := map[string]int{"low": 1, "moderate": 2, "important": 3, "critical": 4}
	for _, t := range threats {
		switch t.Type {
		case "Exploit Status":
			for _, part := range strings.Split(t.Description, ";") {
				k, val, _ := strings.Cut(part, ":")
				yes := strings.EqualFold(strings.TrimSpace(val), "Yes")
				switch strings.TrimSpace(k) {
				case "Exploited":
					v.Exploited = v.Exploited || yes
				case "Publicly Disclosed":
					v.Disclosed = v.Disclosed || yes
				}
			}
		case "Severity":
			s := strings.TrimSpace(t.Description)
			if sevRank[strings.ToLower(s)] > sevRank[strings.ToLower(v.Severity)] {
				v.Severity = s
			}
		}
	}
	for _, s := range scores {
		f, err := strconv.ParseFloat(strings.TrimSpace(s.Base), 64)
		if err != nil || f < 0 || f > 10 {
			continue
		}
		if v.CVSS == nil || f > *v.CVSS {
			v.CVSS = &f
			v.Vector = strings.TrimSpace(s.Vector)
		}
	}
	for _, r := range rems {
		if r.Type != "Vendor Fix" {
			continue
		}
		kb, build, url := strings.TrimSpace(r.Description), strings.TrimSpace(r.FixedBuild), strings.TrimSpace(r.URL)
		switch {
		case strings.EqualFold(kb, ClickToRun):
			kb = ClickToRun
			if url == "" && strings.Contains(build, "://") {
				url = build
			}
			build = ""
		case kb == "" || strings.Trim(kb, "0123456789") != "":
			continue // not a KB number (some fixes name a version or a link)
		default:
			kb = "KB" + kb
		}
		for _, p := range r.ProductIDs {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			v.Fixes = append(v.Fixes, MSRCFix{ProductID: p, KB: kb, FixedBuild: build, SubType: strings.TrimSpace(r.SubType), URL: url})
		}
	}
	return v
}

func msrcTime(s string) time.Time {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// --- XML ---

type xmlProductName struct {
	ID   string `xml:"ProductID,attr"`
	Name string `xml:",chardata"`
}

type xmlBranch struct {
	Products []xmlProductName `xml:"FullProductName"`
	Branches []xmlBranch      `xml:"Branch"`
}

type xmlVuln struct {
	Title   string `xml:"Title"`
	CVE     string `xml:"CVE"`
	Threats []struct {
		Type        string `xml:"Type,attr"`
		Description string `xml:"Description"`
	} `xml:"Threats>Threat"`
	Scores []struct {
		Base   string `xml:"BaseScore"`
		Vector string `xml:"Vector"`
	} `xml:"CVSSScoreSets>ScoreSet"`
	Remediations []struct {
		Type        string   `xml:"Type,attr"`
		Description string   `xml:"Description"`
		URL         string   `xml:"URL"`
		SubType     string   `xml:"SubType"`
		FixedBuild  string   `xml:"FixedBuild"`
		ProductIDs  []string `xml:"ProductID"`
	} `xml:"Remediations>Remediation"`
}

func walkBranches(bs []xmlBranch, fn func(xmlProductName)) {
	for _, b := range bs {
		for _, p := range b.Products {
			fn(p)
		}
		walkBranches(b.Branches, fn)
	}
}

// parseMSRCXML streams the document: the header and product tree are
// decoded as they come, each Vulnerability element on its own.
func parseMSRCXML(r io.Reader) (MSRCDocument, error) {
	var doc MSRCDocument
	dec := xml.NewDecoder(r)
	seen := map[string]bool{}
	addProduct := func(p xmlProductName) {
		id, name := strings.TrimSpace(p.ID), strings.TrimSpace(p.Name)
		if id == "" || seen[id] {
			return
		}
		seen[id] = true
		doc.Products = append(doc.Products, MSRCProduct{ID: id, Name: name})
	}
	root := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return doc, fmt.Errorf("msrc: xml: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if !root {
			if se.Name.Local != "cvrfdoc" {
				return doc, fmt.Errorf("msrc: xml root is %q, not cvrfdoc", se.Name.Local)
			}
			root = true
			continue
		}
		switch se.Name.Local {
		case "DocumentTitle":
			if err := dec.DecodeElement(&doc.Title, &se); err != nil {
				return doc, fmt.Errorf("msrc: xml title: %w", err)
			}
			doc.Title = strings.TrimSpace(doc.Title)
		case "DocumentTracking":
			var t struct {
				ID       string `xml:"Identification>ID"`
				Released string `xml:"InitialReleaseDate"`
			}
			if err := dec.DecodeElement(&t, &se); err != nil {
				return doc, fmt.Errorf("msrc: xml tracking: %w", err)
			}
			doc.ID, doc.Released = strings.TrimSpace(t.ID), msrcTime(t.Released)
		case "ProductTree":
			var t struct {
				Products []xmlProductName `xml:"FullProductName"`
				Branches []xmlBranch      `xml:"Branch"`
			}
			if err := dec.DecodeElement(&t, &se); err != nil {
				return doc, fmt.Errorf("msrc: xml product tree: %w", err)
			}
			walkBranches(t.Branches, addProduct)
			for _, p := range t.Products {
				addProduct(p)
			}
		case "Vulnerability":
			var x xmlVuln
			if err := dec.DecodeElement(&x, &se); err != nil {
				return doc, fmt.Errorf("msrc: xml vulnerability: %w", err)
			}
			threats := make([]msrcThreat, len(x.Threats))
			for i, t := range x.Threats {
				threats[i] = msrcThreat{Type: t.Type, Description: t.Description}
			}
			scores := make([]msrcScore, len(x.Scores))
			for i, s := range x.Scores {
				scores[i] = msrcScore{Base: s.Base, Vector: s.Vector}
			}
			rems := make([]msrcRemediation, len(x.Remediations))
			for i, r := range x.Remediations {
				rems[i] = msrcRemediation{Type: r.Type, Description: r.Description, URL: r.URL, SubType: r.SubType,
					FixedBuild: r.FixedBuild, ProductIDs: r.ProductIDs}
			}
			if v := buildVuln(x.CVE, x.Title, threats, scores, rems); v.CVE != "" {
				doc.Vulns = append(doc.Vulns, v)
			}
		default:
			if err := dec.Skip(); err != nil {
				return doc, fmt.Errorf("msrc: xml: %w", err)
			}
		}
	}
	if !root {
		return doc, fmt.Errorf("msrc: empty xml document")
	}
	return doc, nil
}

// --- JSON ---

// In the JSON form, CVRF enumerations are numbers: Threat Type 0 Impact,
// 1 Exploit Status, 3 Severity; Remediation Type 2 Vendor Fix.
var (
	jsonThreatTypes      = map[string]string{"0": "Impact", "1": "Exploit Status", "2": "Target Set", "3": "Severity"}
	jsonRemediationTypes = map[string]string{"0": "Workaround", "1": "Mitigation", "2": "Vendor Fix", "3": "None Available", "4": "Will Not Fix"}
)

// jsonEnum is a CVRF enumeration written as a number or as its name.
type jsonEnum string

func (e *jsonEnum) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*e = jsonEnum(s)
		return nil
	}
	*e = jsonEnum(string(b))
	return nil
}

func (e jsonEnum) name(names map[string]string) string {
	if n, ok := names[string(e)]; ok {
		return n
	}
	return string(e)
}

// jsonValue is {"Value": "..."} or a bare string.
type jsonValue string

func (v *jsonValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = jsonValue(s)
		return nil
	}
	if len(b) > 0 && b[0] == '{' {
		var o struct {
			Value string `json:"Value"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		*v = jsonValue(o.Value)
	}
	return nil
}

type jsonProductName struct {
	ProductID string `json:"ProductID"`
	Value     string `json:"Value"`
}

type jsonBranch struct {
	Items           []jsonBranch      `json:"Items"`
	ProductID       string            `json:"ProductID"`
	Value           string            `json:"Value"`
	FullProductName []jsonProductName `json:"FullProductName"`
}

func walkJSONBranches(bs []jsonBranch, fn func(id, name string)) {
	for _, b := range bs {
		if b.ProductID != "" {
			fn(b.ProductID, b.Value)
		}
		for _, p := range b.FullProductName {
			fn(p.ProductID, p.Value)
		}
		walkJSONBranches(b.Items, fn)
	}
}

type jsonDoc struct {
	DocumentTitle    jsonValue `json:"DocumentTitle"`
	DocumentTracking struct {
		Identification struct {
			ID jsonValue `json:"ID"`
		} `json:"Identification"`
		InitialReleaseDate string `json:"InitialReleaseDate"`
	} `json:"DocumentTracking"`
	ProductTree struct {
		Branch          []jsonBranch      `json:"Branch"`
		FullProductName []jsonProductName `json:"FullProductName"`
	} `json:"ProductTree"`
	Vulnerability []struct {
		Title   jsonValue `json:"Title"`
		CVE     string    `json:"CVE"`
		Threats []struct {
			Type        jsonEnum  `json:"Type"`
			Description jsonValue `json:"Description"`
		} `json:"Threats"`
		CVSSScoreSets []struct {
			BaseScore json.Number `json:"BaseScore"`
			Vector    string      `json:"Vector"`
		} `json:"CVSSScoreSets"`
		Remediations []struct {
			Type        jsonEnum  `json:"Type"`
			Description jsonValue `json:"Description"`
			URL         string    `json:"URL"`
			SubType     string    `json:"SubType"`
			FixedBuild  string    `json:"FixedBuild"`
			ProductID   []string  `json:"ProductID"`
		} `json:"Remediations"`
	} `json:"Vulnerability"`
}

func parseMSRCJSON(r io.Reader) (MSRCDocument, error) {
	var j jsonDoc
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(&j); err != nil {
		return MSRCDocument{}, fmt.Errorf("msrc: json: %w", err)
	}
	doc := MSRCDocument{ID: strings.TrimSpace(string(j.DocumentTracking.Identification.ID)), Title: strings.TrimSpace(string(j.DocumentTitle)),
		Released: msrcTime(j.DocumentTracking.InitialReleaseDate)}
	seen := map[string]bool{}
	add := func(id, name string) {
		id, name = strings.TrimSpace(id), strings.TrimSpace(name)
		if id == "" || seen[id] {
			return
		}
		seen[id] = true
		doc.Products = append(doc.Products, MSRCProduct{ID: id, Name: name})
	}
	walkJSONBranches(j.ProductTree.Branch, add)
	for _, p := range j.ProductTree.FullProductName {
		add(p.ProductID, p.Value)
	}
	for _, x := range j.Vulnerability {
		threats := make([]msrcThreat, len(x.Threats))
		for i, t := range x.Threats {
			threats[i] = msrcThreat{Type: t.Type.name(jsonThreatTypes), Description: string(t.Description)}
		}
		scores := make([]msrcScore, len(x.CVSSScoreSets))
		for i, s := range x.CVSSScoreSets {
			scores[i] = msrcScore{Base: s.BaseScore.String(), Vector: s.Vector}
		}
		rems := make([]msrcRemediation, len(x.Remediations))
		for i, r := range x.Remediations {
			rems[i] = msrcRemediation{Type: r.Type.name(jsonRemediationTypes), Description: string(r.Description), URL: r.URL,
				SubType: r.SubType, FixedBuild: r.FixedBuild, ProductIDs: r.ProductID}
		}
		if v := buildVuln(x.CVE, string(x.Title), threats, scores, rems); v.CVE != "" {
			doc.Vulns = append(doc.Vulns, v)
		}
	}
	return doc, nil
}
