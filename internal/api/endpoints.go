package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/endpointq"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// connectedSince is the oldest last check-in of a connected endpoint.
func (a *API) connectedSince() time.Time {
	return endpointq.ConnectedSince(time.Now(), a.cfg.CheckinInterval)
}

// listEndpoints is operation 2.
func (a *API) listEndpoints(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.ParsePage(r)
	if err != nil {
		return err
	}
	// q is the specification's; the other filters and the order are patchd
	// additions, read as the console reads them.
	q, err := endpointq.Parse(r.URL.Query(), principal(r).OrgID, time.Now(), a.connectedSince())
	if err != nil {
		return httpx.InvalidRequest(err.Error())
	}
	q.Limit, q.Offset = page.Limit, page.Offset
	items, total, err := a.store.FindEndpoints(r.Context(), q)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewPage(items, total, page))
	return nil
}

// getEndpoint is operation 3.
func (a *API) getEndpoint(w http.ResponseWriter, r *http.Request) error {
	d, err := a.store.GetEndpoint(r.Context(), principal(r).OrgID, r.PathValue("id"), a.connectedSince())
	if err != nil {
		return endpointNotFound(err)
	}
	httpx.WriteJSON(w, http.StatusOK, d)
	return nil
}

func endpointNotFound(err error) error {
	if isNotFound(err) {
		return httpx.NotFound("endpoint")
	}
	return err
}

// endpointPatchBody is EndpointPatch with presence tracking: a field left
// out changes nothing.
type endpointPatchBody struct {
	Name       *string            `json:"name"`
	Comment    *string            `json:"comment"`
	Attributes map[string]*string `json:"attributes"`
}

// Limits of EndpointPatch values.
const (
	maxEndpointName = 255
	maxComment      = 4096
	maxAttribute    = 1024
	maxAttributeKey = 30
)

// validAttributeKey tells whether k is one of attr1 … attr30.
func validAttributeKey(k string) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(k, "attr"))
	return strings.HasPrefix(k, "attr") && err == nil && n >= 1 && n <= maxAttributeKey && k == "attr"+strconv.Itoa(n)
}

func (b endpointPatchBody) check() (store.EndpointPatch, error) {
	var errs valid.Errors
	p := store.EndpointPatch{Name: b.Name, Comment: b.Comment}
	if b.Name != nil {
		name := strings.TrimSpace(*b.Name)
		if utf8.RuneCountInString(name) > maxEndpointName {
			errs.Add("name", "must have at most %d characters", maxEndpointName)
		}
		p.Name = &name
	}
	if b.Comment != nil && utf8.RuneCountInString(*b.Comment) > maxComment {
		errs.Add("comment", "must have at most %d characters", maxComment)
	}
	if b.Attributes != nil {
		p.Attributes = map[string]string{}
		for k, v := range b.Attributes {
			if !validAttributeKey(k) {
				errs.Add("attributes."+k, "only keys attr1 … attr30 are accepted")
				continue
			}
			value := ""
			if v != nil {
				value = *v
			}
			if utf8.RuneCountInString(value) > maxAttribute {
				errs.Add("attributes."+k, "must have at most %d characters", maxAttribute)
			}
			p.Attributes[k] = value
		}
	}
	return p, errs.Err()
}

// patchEndpoint is operation 4.
func (a *API) patchEndpoint(w http.ResponseWriter, r *http.Request) error {
	var body endpointPatchBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	p, err := body.check()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	e := a.auditEntry(r, "endpoint.update", "endpoint", id)
	summary := map[string]any{}
	if p.Name != nil {
		summary["name"] = *p.Name
	}
	if p.Comment != nil {
		summary["comment"] = *p.Comment
	}
	if p.Attributes != nil {
		summary["attributes"] = p.Attributes
	}
	e.Summary = summary
	if err := a.store.PatchEndpoint(r.Context(), e, principal(r).OrgID, id, p); err != nil {
		return endpointNotFound(err)
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}

// deleteEndpoint is operation 5: the record goes, and the agent is told to
// uninstall at its next check-in.
func (a *API) deleteEndpoint(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := a.store.DeleteEndpoint(r.Context(), a.auditEntry(r, "endpoint.delete", "endpoint", id), principal(r).OrgID, id, time.Now()); err != nil {
		return endpointNotFound(err)
	}
	if a.cfg.EndpointRemoved != nil {
		a.cfg.EndpointRemoved(id)
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}

// scanEndpoint (a patchd addition) asks the endpoint's agent to refresh
// its package metadata and send its inventory now: at once when it holds a
// long poll, else at its next check-in.
func (a *API) scanEndpoint(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := a.store.RequestScan(r.Context(), a.auditEntry(r, "endpoint.scan", "endpoint", id), principal(r).OrgID, id, time.Now()); err != nil {
		return endpointNotFound(err)
	}
	if a.cfg.Queued != nil {
		a.cfg.Queued(context.WithoutCancel(r.Context()), []string{id})
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}

// listSoftware is operation 7.
func (a *API) listSoftware(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.ParsePage(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	items, total, err := a.store.ListSoftware(r.Context(), store.SoftwareQuery{OrgID: principal(r).OrgID, Q: strings.TrimSpace(q.Get("q")),
		EndpointID: strings.TrimSpace(q.Get("endpointId")), Limit: page.Limit, Offset: page.Offset})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewPage(items, total, page))
	return nil
}

// listSoftwareTitles pages the software by title with endpoint counts (a
// patchd addition).
func (a *API) listSoftwareTitles(w http.ResponseWriter, r *http.Request) error {
	page, err := httpx.ParsePage(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	sort := q.Get("sort")
	switch sort {
	case "", store.TitlesByHosts, store.TitlesByName:
	default:
		return httpx.InvalidRequest("sort must be hosts or name")
	}
	items, total, err := a.store.ListSoftwareTitles(r.Context(), store.SoftwareTitleQuery{OrgID: principal(r).OrgID,
		Q: strings.TrimSpace(q.Get("q")), Publisher: strings.TrimSpace(q.Get("publisher")), Sort: sort, Limit: page.Limit, Offset: page.Offset})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, httpx.NewPage(items, total, page))
	return nil
}

func isNotFound(err error) bool { return errors.Is(err, dberr.ErrNotFound) }
