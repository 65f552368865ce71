package feeds

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// ErrUnknownFormat is answered when a document is none of the feeds.
var ErrUnknownFormat = errors.New("feeds: not an NVD CVE 2.0, CISA KEV, OSV, MSRC CVRF, EPSS or Microsoft 365 Apps release history document")

// sniffSize is how much of a document Detect needs at most.
const sniffSize = 64 << 10

// Detect answers the format of a document from its first bytes (up to 64 KB
// are used; a whole small document is fine). It reads the top-level keys:
// "format": "NVD_CVE" or vulnerabilities[].cve means NVD; "catalogVersion"
// or vulnerabilities[].cveID means KEV; an object with "id" and "affected",
// "modified" or "schema_version" (or an array of them) means OSV.
func Detect(head []byte) (Format, error) {
	if len(head) > sniffSize {
		head = head[:sniffSize]
	}
	head = bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF"))
	if isEPSS(head) {
		return FormatEPSS, nil
	}
	if t := bytes.TrimLeft(head, " \t\r\n"); len(t) > 0 && t[0] == '<' {
		// XML: only MSRC's CVRF documents are read.
		if isCVRFRoot(t) {
			return FormatMSRC, nil
		}
		return FormatUnknown, ErrUnknownFormat
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	tok, err := dec.Token()
	if err != nil {
		return FormatUnknown, ErrUnknownFormat
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return FormatUnknown, ErrUnknownFormat
	}
	if d == '[' {
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return FormatUnknown, ErrUnknownFormat
		}
		if f := sniffObject(dec); f == FormatOSV {
			return f, nil
		}
		return FormatUnknown, ErrUnknownFormat
	}
	if d != '{' {
		return FormatUnknown, ErrUnknownFormat
	}
	if f := sniffObject(dec); f != FormatUnknown {
		return f, nil
	}
	return FormatUnknown, ErrUnknownFormat
}

// isCVRFRoot reports whether an XML document's root element (after any
// declaration, comments or processing instructions) is a CVRF cvrfdoc.
func isCVRFRoot(head []byte) bool {
	dec := xml.NewDecoder(bytes.NewReader(head))
	for {
		tok, err := dec.RawToken()
		if err != nil {
			return false
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local == "cvrfdoc"
		}
	}
}

// sniffObject reads the keys of an object whose '{' was consumed, until it
// can tell the format or the input (perhaps truncated) ends.
func sniffObject(dec *json.Decoder) Format {
	var hasID, osvKey bool
	for dec.More() {
		key, err := readKey(dec)
		if err != nil {
			break
		}
		switch key {
		case "format":
			var f string
			if dec.Decode(&f) == nil && f == "NVD_CVE" {
				return FormatNVD
			}
			continue
		case "catalogVersion":
			return FormatKEV
		case "CVE_Items":
			return FormatUnknown // the retired NVD 1.1 feeds
		case "vulnerabilities":
			return sniffVulnerabilities(dec)
		case "DocumentTitle", "DocumentTracking", "ProductTree":
			return FormatMSRC // CVRF, as the MSRC API serves it
		case "DataForGeeks", "patchdOfficeBuilds":
			// A release history of Microsoft 365 Apps (DataForGeeks' copy
			// of Microsoft's page) or of volume-licensed Office, rows of
			// the same shape.
			return FormatOfficeBuilds
		case "id":
			hasID = true
		case "affected", "modified", "schema_version", "aliases":
			osvKey = true
		}
		if hasID && osvKey {
			return FormatOSV
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	return FormatUnknown
}

func sniffVulnerabilities(dec *json.Decoder) Format {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return FormatUnknown
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return FormatUnknown
	}
	for dec.More() {
		key, err := readKey(dec)
		if err != nil {
			return FormatUnknown
		}
		switch key {
		case "cve":
			return FormatNVD
		case "cveID":
			return FormatKEV
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return FormatUnknown
		}
	}
	return FormatUnknown
}

// Handler receives what Parse finds; a nil function skips that kind.
type Handler struct {
	CVE func(CVE) error
	KEV func(KEV) error
	OSV func(OSVAdvisory) error
	// MSRC receives each MSRC CVRF document whole (one month is a few MB).
	MSRC func(MSRCDocument) error
	// OfficeBuilds receives a Microsoft 365 Apps release history whole.
	OfficeBuilds func([]OfficeBuild) error
	// EPSS receives each row of an EPSS file.
	EPSS func(EPSS) error
	// Rejected is told the id of every NVD record marked Rejected.
	Rejected func(id string) error
}

// Parse detects the format of one document and streams its content to h.
func Parse(r io.Reader, h Handler) (Format, error) {
	f, br, err := DetectReader(r)
	if err != nil {
		return f, err
	}
	switch f {
	case FormatNVD:
		fn := h.CVE
		if fn == nil {
			fn = func(CVE) error { return nil }
		}
		return f, ParseNVDRejected(br, fn, h.Rejected)
	case FormatKEV:
		list, err := ReadKEV(br)
		if err != nil || h.KEV == nil {
			return f, err
		}
		for _, k := range list {
			if err := h.KEV(k); err != nil {
				return f, err
			}
		}
		return f, nil
	case FormatMSRC:
		doc, err := ParseMSRC(br)
		if err != nil || h.MSRC == nil {
			return f, err
		}
		return f, h.MSRC(doc)
	case FormatEPSS:
		fn := h.EPSS
		if fn == nil {
			fn = func(EPSS) error { return nil }
		}
		return f, ParseEPSS(br, fn)
	case FormatOfficeBuilds:
		list, err := ParseOfficeBuilds(br)
		if err != nil || h.OfficeBuilds == nil {
			return f, err
		}
		return f, h.OfficeBuilds(list)
	default:
		fn := h.OSV
		if fn == nil {
			fn = func(OSVAdvisory) error { return nil }
		}
		return f, ParseOSV(br, fn)
	}
}

// DetectReader answers the format of the document r holds and a reader
// that still yields the whole document (the bytes Detect looked at are not
// lost).
func DetectReader(r io.Reader) (Format, io.Reader, error) {
	br := bufio.NewReaderSize(r, sniffSize)
	head, err := br.Peek(sniffSize)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return FormatUnknown, br, fmt.Errorf("feeds: read: %w", err)
	}
	f, err := Detect(head)
	return f, br, err
}
