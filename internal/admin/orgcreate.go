package admin

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// Creating organizations (docs/identity.md, "Creating organizations"):
// whoever runs the server grants a person the instance-level permission
// to create organizations; such a person creates one from the console or
// the REST API and becomes its Administrator, optionally copying a
// template organization it administers.

// MaxOrgName bounds an organization's name.
const MaxOrgName = 100

// CreatorOut is the printed form of a person's create-organizations
// permission.
type CreatorOut struct {
	ID         string `json:"id"`
	OrgID      string `json:"orgId"`
	Org        string `json:"org"`
	Email      string `json:"email"`
	Disabled   bool   `json:"disabled"`
	CreateOrgs bool   `json:"createOrgs"`
	// Changed is false when the person had the asked state already.
	Changed bool `json:"changed,omitempty"`
}

// SetCreateOrgs grants (on) or revokes the create-organizations
// permission of the person with the e-mail address (orgRef names one of
// its organizations when the address has accounts in several), recorded
// in the instance's Audit Trail (org_creator.grant, org_creator.revoke).
func SetCreateOrgs(ctx context.Context, s *store.Store, by InstanceActor, orgRef, email string, on bool) (CreatorOut, error) {
	u, org, err := findUser(ctx, s, orgRef, email)
	if err != nil {
		return CreatorOut{}, err
	}
	action := "org_creator.revoke"
	if on {
		action = "org_creator.grant"
	}
	changed, err := s.SetCreateOrgs(ctx, by.event(action, map[string]any{"email": u.Email, "org": org.Name, "orgId": org.ID}), u.ID, on)
	if err != nil {
		return CreatorOut{}, err
	}
	return CreatorOut{ID: u.ID, OrgID: org.ID, Org: org.Name, Email: u.Email, Disabled: u.Disabled, CreateOrgs: on, Changed: changed}, nil
}

// ListOrgCreators lists the people who may create organizations.
func ListOrgCreators(ctx context.Context, s *store.Store) ([]CreatorOut, error) {
	users, err := s.ListOrgCreators(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]CreatorOut, 0, len(users))
	for _, u := range users {
		o, err := s.FindOrg(ctx, u.OrgID)
		if err != nil {
			return nil, err
		}
		out = append(out, CreatorOut{ID: u.ID, OrgID: u.OrgID, Org: o.Name, Email: u.Email, Disabled: u.Disabled, CreateOrgs: true})
	}
	return out, nil
}

// OrgRequest is an organization to create.
type OrgRequest struct {
	Name     string
	TimeZone string
	// Template names the organization (id or name) whose settings are
	// copied; "" for none.
	Template string
	// Creator becomes the Administrator of the new organization (nil:
	// nobody). Checked says the creator must hold the permission and
	// administer the template (the console and the API); the command line
	// is not checked.
	Creator *store.ConsoleUser
	Checked bool
	// By made the request; FromOrgID is the organization it came from
	// ("": the command line), whose Audit Trail records it too.
	By        By
	FromOrgID string
	// Instance names the actor in the instance's Audit Trail (By's actor
	// when empty).
	Instance string
}

// NewOrgOut is the answer of a creation.
type NewOrgOut struct {
	store.Org
	// Administrator is the e-mail address of the creator, now the
	// organization's Administrator ("" when nobody).
	Administrator string                  `json:"administrator,omitempty"`
	Copied        *apiv1.OrganizationCopy `json:"copied,omitempty"`
}

// CheckOrgName adds the problems of an organization's name to errs and
// answers it trimmed.
func CheckOrgName(errs *valid.Errors, name string) string {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		errs.Add("name", "is required")
	case utf8.RuneCountInString(name) > MaxOrgName:
		errs.Add("name", "must have at most %d characters", MaxOrgName)
	case strings.IndexFunc(name, func(c rune) bool { return c < 0x20 || c == 0x7f }) >= 0 || !utf8.ValidString(name):
		errs.Add("name", "must not hold control characters")
	}
	return name
}

// ErrOrgNameTaken answers a name another organization has.
var ErrOrgNameTaken = valid.One("name", "is taken: an organization with this name exists")

// ErrNoTemplate answers a template that does not exist or that the
// creator does not administer (the two are not told apart).
var ErrNoTemplate = valid.One("template", "is no organization you administer (id or name)")

// CreateOrgAs creates an organization for req: the creator becomes its
// Administrator, the template's settings are copied, and the creation is
// recorded as org.create in the new organization, in the one the request
// came from and in the instance's Audit Trail. Bad input is a
// *valid.Error (name, timezone, template); a checked creator without the
// permission store.ErrNoCreateOrgs.
func CreateOrgAs(ctx context.Context, s *store.Store, req OrgRequest) (NewOrgOut, error) {
	var errs valid.Errors
	name := CheckOrgName(&errs, req.Name)
	tz := strings.TrimSpace(req.TimeZone)
	if tz == "" {
		tz = "UTC"
	}
	if _, err := time.LoadLocation(tz); err != nil || tz == "Local" || len(tz) > 100 || strings.ContainsRune(tz, 0) {
		errs.Add("timezone", "%q is not a known IANA time zone", tz)
	}
	template := strings.TrimSpace(req.Template)
	if len(template) > 200 || strings.IndexFunc(template, func(c rune) bool { return c < 0x20 || c == 0x7f }) >= 0 || !utf8.ValidString(template) {
		errs.Add("template", "is no organization you administer (id or name)")
	}
	if err := errs.Err(); err != nil {
		return NewOrgOut{}, err
	}
	in := store.NewOrg{Name: name, TimeZone: tz, TemplateRef: template, Checked: req.Checked,
		Entry:    &store.AuditEntry{Actor: req.By.Actor, Address: req.By.Address, Action: "org.create"},
		Instance: &store.InstanceEvent{Actor: req.By.Actor, Address: req.By.Address, Action: "org.create"}}
	if req.Instance != "" {
		in.Instance.Actor = req.Instance
	}
	if req.Creator != nil {
		in.CreatorID = req.Creator.ID
	}
	if req.FromOrgID != "" {
		in.From = &store.AuditEntry{OrgID: req.FromOrgID, Actor: req.By.Actor, Address: req.By.Address, Action: "org.create"}
	}
	o, copied, err := s.CreateOrgFor(ctx, in)
	switch {
	case errors.Is(err, store.ErrTemplate):
		return NewOrgOut{}, ErrNoTemplate
	case errors.Is(err, dberr.ErrConflict):
		return NewOrgOut{}, ErrOrgNameTaken
	case err != nil:
		return NewOrgOut{}, err
	}
	out := NewOrgOut{Org: o, Copied: copied}
	if req.Creator != nil {
		out.Administrator = req.Creator.Email
	}
	return out, nil
}
