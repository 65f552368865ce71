package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
)

// People across the instance, for instance operators: every person with
// the organizations it belongs to and its role in each; an operator adds
// a person to another organization or takes it out of one, with the code
// of patchd admin user member-add and member-remove. Each change is
// recorded in the Audit Trail of the organization entered or left.

// peopleListLimit bounds the people listed at once (the search narrows).
const peopleListLimit = 200

func (c *Console) instancePeopleRoutes() {
	c.page("GET /console/instance/people", operatorOnly, c.instancePeoplePage)
	c.page("GET /console/instance/people/{id}", operatorOnly, c.instancePersonPage)
	c.page("POST /console/instance/people/{id}/memberships", operatorOnly, c.membershipAdd)
	c.page("POST /console/instance/people/{id}/memberships/{org}/remove", operatorOnly, c.membershipRemove)
}

type instancePeopleData struct {
	Query  string
	People []store.Person
	// More: the list stopped at Limit people.
	More  bool
	Limit int
}

func (c *Console) instancePeoplePage(w http.ResponseWriter, r *http.Request, s *session) error {
	d := &instancePeopleData{Query: strings.TrimSpace(r.URL.Query().Get("q")), Limit: peopleListLimit}
	people, err := c.store.ListPeople(r.Context(), d.Query, peopleListLimit+1)
	if err != nil {
		return err
	}
	if len(people) > peopleListLimit {
		people, d.More = people[:peopleListLimit], true
	}
	d.People = people
	return c.render(w, r, s, http.StatusOK, "instance_people", "", "People & organizations", "instance-people", d)
}

// joinable is an organization a person may join, with its roles.
type joinable struct {
	Org   store.Org
	Roles []store.Role
}

type instancePersonData struct {
	Person store.Person
	// Joinable are the organizations the person is not a member of.
	Joinable []joinable
}

func (c *Console) instancePersonPage(w http.ResponseWriter, r *http.Request, s *session) error {
	p, err := c.store.PersonByID(r.Context(), r.PathValue("id"))
	if errors.Is(err, dberr.ErrNotFound) {
		return &pageError{http.StatusNotFound, "No such person on this server."}
	}
	if err != nil {
		return err
	}
	d := &instancePersonData{Person: p}
	orgs, err := c.store.ListOrgs(r.Context())
	if err != nil {
		return err
	}
	member := map[string]bool{}
	for _, m := range p.Memberships {
		member[m.OrgID] = true
	}
	for _, o := range orgs {
		if member[o.ID] {
			continue
		}
		roles, err := c.store.ListRoles(r.Context(), o.ID)
		if err != nil {
			return err
		}
		d.Joinable = append(d.Joinable, joinable{Org: o, Roles: roles})
	}
	return c.render(w, r, s, http.StatusOK, "instance_person", "", p.Email, "instance-people", d)
}

// personAsMember reads the person id as a member of the organization
// orgID (any of its organizations for ""), as the command line finds a
// person by its address and organization.
func (c *Console) personAsMember(r *http.Request, id, orgID string) (store.Person, store.ConsoleUser, error) {
	p, err := c.store.PersonByID(r.Context(), id)
	if errors.Is(err, dberr.ErrNotFound) {
		return p, store.ConsoleUser{}, &pageError{http.StatusNotFound, "No such person on this server."}
	}
	if err != nil {
		return p, store.ConsoleUser{}, err
	}
	if orgID == "" {
		orgID = p.Memberships[0].OrgID
	}
	u, err := admin.FindUser(r.Context(), c.store, orgID, p.Email)
	if errors.Is(err, dberr.ErrNotFound) || err == nil && u.ID != p.ID {
		return p, store.ConsoleUser{}, &pageError{http.StatusNotFound, p.Email + " is no member of that organization."}
	}
	return p, u, err
}

// membershipAdd makes the person a member of another organization with a
// role of it (the form's "to": organization id, a slash, role id).
func (c *Console) membershipAdd(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	back := "/console/instance/people/" + url.PathEscape(id)
	p, u, err := c.personAsMember(r, id, "")
	if err != nil {
		return c.done(w, r, "/console/instance/people", err, "")
	}
	orgRef, roleRef, _ := strings.Cut(r.PostFormValue("to"), "/")
	if orgRef == "" || roleRef == "" {
		return c.done(w, r, back, badRequest("Choose an organization and a role of it."), "")
	}
	o, err := c.store.FindOrg(r.Context(), orgRef)
	if errors.Is(err, dberr.ErrNotFound) {
		return c.done(w, r, back, &pageError{http.StatusNotFound, "No such organization on this server; nothing was changed."}, "")
	}
	if err != nil {
		return err
	}
	out, err := admin.AddMembership(r.Context(), c.store, admin.By{Actor: s.actor(), Address: s.addr}, u, o.ID, roleRef)
	switch {
	case errors.Is(err, dberr.ErrNotFound):
		err = &pageError{http.StatusNotFound, o.Name + " has no such role; nothing was changed."}
	case errors.Is(err, dberr.ErrConflict):
		err = &pageError{http.StatusConflict, o.Name + " has a member with the address " + p.Email + " already (the person joins the two accounts on its Account page); nothing was changed."}
	}
	return c.done(w, r, back, err, p.Email+" is now a member of "+o.Name+" as "+out.Role+".")
}

// membershipRemove takes the person out of one organization, never its
// only one.
func (c *Console) membershipRemove(w http.ResponseWriter, r *http.Request, s *session) error {
	id, orgID := r.PathValue("id"), r.PathValue("org")
	back := "/console/instance/people/" + url.PathEscape(id)
	p, u, err := c.personAsMember(r, id, orgID)
	if err != nil {
		return c.done(w, r, back, err, "")
	}
	if u.ID == s.User.ID && u.OrgID == s.User.OrgID {
		return c.done(w, r, back, badRequest("You are working in this organization: switch to another of yours first."), "")
	}
	var name string
	for _, m := range p.Memberships {
		if m.OrgID == u.OrgID {
			name = m.OrgName
		}
	}
	err = admin.RemoveMembership(r.Context(), c.store, admin.By{Actor: s.actor(), Address: s.addr}, u)
	if errors.Is(err, store.ErrLastMembership) {
		err = &pageError{http.StatusConflict, name + " is the only organization of " + p.Email + ": the account goes with its last membership, on " + name + "'s Users page; nothing was changed."}
	}
	return c.done(w, r, back, err, p.Email+" is no longer a member of "+name+".")
}
