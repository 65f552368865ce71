package console

import (
	"net/http"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/store"
)

// The software page, by title: the organization's applications with the
// number of endpoints of each and of its versions (the store's query behind
// GET /api/v1/software/titles, a patchd addition), most endpoints first or
// by name, filtered by name and publisher. One row per endpoint and
// application is the Installed software report.

type softwareData struct {
	Items        []apiv1.SoftwareTitle
	Page         pager
	Q, Publisher string
	Sort         string
}

func (c *Console) softwareList(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := newPager(r, 50)
	if err != nil {
		return err
	}
	qv := r.URL.Query()
	d := softwareData{Page: p, Q: strings.TrimSpace(qv.Get("q")), Publisher: strings.TrimSpace(qv.Get("publisher")),
		Sort: qv.Get("sort")}
	switch d.Sort {
	case "":
		d.Sort = store.TitlesByHosts
	case store.TitlesByHosts, store.TitlesByName:
	default:
		return badRequest("Sort by hosts or name.")
	}
	d.Items, d.Page.Total, err = c.store.ListSoftwareTitles(r.Context(), store.SoftwareTitleQuery{OrgID: s.User.OrgID, Q: d.Q,
		Publisher: d.Publisher, Sort: d.Sort, Limit: p.Limit, Offset: p.Offset})
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "software", "", "Software", "software", d)
}
