package feeds

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

type kevCatalog struct {
	Vulnerabilities []struct {
		CVEID                      string `json:"cveID"`
		VendorProject              string `json:"vendorProject"`
		Product                    string `json:"product"`
		VulnerabilityName          string `json:"vulnerabilityName"`
		DateAdded                  string `json:"dateAdded"`
		ShortDescription           string `json:"shortDescription"`
		DueDate                    string `json:"dueDate"`
		KnownRansomwareCampaignUse string `json:"knownRansomwareCampaignUse"`
	} `json:"vulnerabilities"`
}

// ReadKEV reads the CISA KEV catalog (about 1,500 entries, 1 MB: read whole).
func ReadKEV(r io.Reader) ([]KEV, error) {
	var cat kevCatalog
	if err := json.NewDecoder(r).Decode(&cat); err != nil {
		return nil, fmt.Errorf("kev: %w", err)
	}
	out := make([]KEV, 0, len(cat.Vulnerabilities))
	for _, v := range cat.Vulnerabilities {
		id := strings.ToUpper(strings.TrimSpace(v.CVEID))
		if id == "" {
			continue
		}
		out = append(out, KEV{
			CVEID:         id,
			DateAdded:     parseTime(v.DateAdded),
			DueDate:       parseTime(v.DueDate),
			Ransomware:    strings.EqualFold(strings.TrimSpace(v.KnownRansomwareCampaignUse), "Known"),
			VendorProject: v.VendorProject,
			Product:       v.Product,
			Name:          v.VulnerabilityName,
			Description:   v.ShortDescription,
		})
	}
	return out, nil
}
