package console

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/api"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

type roleView struct {
	store.Role
	Names []string
}

type usersData struct {
	// RequireSecondFactor is the organization's setting.
	RequireSecondFactor bool
	Users               []store.ConsoleUser
	Roles               []roleView
	Credentials         []store.Credential
	// NewCredential is set right after creation: its secret is shown once.
	NewCredential *apiv1.NewCredential
	// NewInvitation is set right after an invitation: its link is shown
	// once.
	NewInvitation *apiv1.NewUser
	MinPassword   int
	AllPerms      []string
	// RoleUse is each role with what holds it (GET /api/v1/roles).
	RoleUse []apiv1.Role
}

func (c *Console) usersData(r *http.Request, s *session) (*usersData, error) {
	ctx := r.Context()
	users, err := c.store.ListUsers(ctx, s.User.OrgID)
	if err != nil {
		return nil, err
	}
	roles, err := c.store.ListRoles(ctx, s.User.OrgID)
	if err != nil {
		return nil, err
	}
	creds, err := c.store.ListCredentials(ctx, s.User.OrgID)
	if err != nil {
		return nil, err
	}
	required, err := c.store.OrgRequiresMFA(ctx, s.User.OrgID)
	if err != nil {
		return nil, err
	}
	var roleUse apiv1.List[apiv1.Role]
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/roles", nil, &roleUse); err != nil {
		return nil, err
	}
	d := &usersData{Users: users, Credentials: creds, MinPassword: admin.MinPasswordLength, AllPerms: perm.All.Names(), RequireSecondFactor: required,
		RoleUse: roleUse.Items}
	for _, ro := range roles {
		d.Roles = append(d.Roles, roleView{Role: ro, Names: ro.Permissions.Names()})
	}
	return d, nil
}

func (c *Console) usersPage(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := c.usersData(r, s)
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "users", "", "Users & API Credentials", "users", d)
}

// adminError turns the admin package's refusals into messages for the
// user; its other errors stay errors.
func adminError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, dberr.ErrConflict):
		return badRequest("That name is taken in your organization.")
	case errors.Is(err, dberr.ErrNotFound):
		return notFound("record")
	}
	return err
}

// roleOf checks that a role id names a role of the session's organization.
func (c *Console) roleOf(r *http.Request, s *session, id string) (store.Role, error) {
	if id == "" {
		return store.Role{}, badRequest("Choose a role.")
	}
	ro, err := c.store.FindRole(r.Context(), s.User.OrgID, id)
	if errors.Is(err, dberr.ErrNotFound) {
		return ro, badRequest("Choose a role of your organization.")
	}
	return ro, err
}

// userCreate creates a user with a one-time password, or invites one and
// shows the invitation's link once, through POST /api/v1/users.
func (c *Console) userCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	body := apiv1.UserCreate{Email: r.PostFormValue("email"), Role: r.PostFormValue("role")}
	switch r.PostFormValue("how") {
	case "invite":
		body.Invite = true
		if h := r.PostFormValue("expires_hours"); h != "" {
			n, err := strconv.Atoi(h)
			if err != nil {
				return c.done(w, r, "/console/users", badRequest("Choose how long the invitation works."), "")
			}
			body.ExpiresInHours = n
		}
	case "", "password":
		body.Password = r.PostFormValue("password")
	default:
		return c.done(w, r, "/console/users", badRequest("Choose a one-time password or an invitation."), "")
	}
	var nu apiv1.NewUser
	if err := c.callAPI(r, s, http.MethodPost, "/api/v1/users", body, &nu); err != nil {
		return c.done(w, r, "/console/users", err, "")
	}
	if nu.Invitation == nil {
		return c.done(w, r, "/console/users", nil, "User "+nu.Email+" created with the role "+nu.Role+"; the password is a one-time one: "+nu.Email+" chooses a new one at the first sign-in.")
	}
	// The in-process call has no host of its own: the link is built on
	// the address the browser reached.
	nu.Invitation.URL = c.baseURL(r) + api.InvitationPath + "?token=" + url.QueryEscape(nu.Invitation.Token)
	d, err := c.usersData(r, s)
	if err != nil {
		return err
	}
	d.NewInvitation = &nu
	return c.render(w, r, s, http.StatusOK, "users", "", "Users & API Credentials", "users", d)
}

// roleCreate creates a custom role through POST /api/v1/roles.
func (c *Console) roleCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	body := apiv1.RoleBody{Name: r.PostFormValue("name"), Permissions: r.PostForm["perm"]}
	var ro apiv1.Role
	err := c.callAPI(r, s, http.MethodPost, "/api/v1/roles", body, &ro)
	return c.done(w, r, "/console/users#h-roles", err, "Role "+ro.Name+" created.")
}

// roleChange renames a custom role and sets its permissions (PATCH), or
// deletes it (DELETE /api/v1/roles/{id}).
func (c *Console) roleChange(w http.ResponseWriter, r *http.Request, s *session) error {
	path := "/api/v1/roles/" + url.PathEscape(r.PathValue("id"))
	switch r.PathValue("op") {
	case "delete":
		return c.deleted(w, r, s, deletion{api: path, page: "/console/users#h-roles", list: "/console/users#h-roles", ok: "Role deleted."})
	case "update":
	default:
		return notFound("operation")
	}
	name, perms := r.PostFormValue("name"), r.PostForm["perm"]
	if perms == nil {
		perms = []string{}
	}
	var ro apiv1.Role
	err := c.callAPI(r, s, http.MethodPatch, path, apiv1.RolePatch{Name: &name, Permissions: &perms}, &ro)
	return c.done(w, r, "/console/users#h-roles", err, "Role "+ro.Name+" saved.")
}

func (c *Console) userChange(w http.ResponseWriter, r *http.Request, s *session) error {
	id, op := r.PathValue("id"), r.PathValue("op")
	if id == s.User.ID {
		return c.done(w, r, "/console/users", badRequest("You cannot change your own role, disable, reset or delete your own account here (your Account page has your password and second factor)."), "")
	}
	target, err := c.userOf(r, s, id)
	if err != nil {
		return c.done(w, r, "/console/users", err, "")
	}
	if target.InstanceOperator && !s.User.InstanceOperator && op != "enable" {
		return &pageError{http.StatusForbidden, target.Email + " is an instance operator: only an instance operator may change the role of, disable, reset or delete that account."}
	}
	by := admin.By{Actor: s.actor(), Address: s.addr}
	var text string
	switch op {
	case "disable", "enable":
		err = admin.SetDisabled(r.Context(), c.store, by, target, op == "disable")
		text = "User " + op + "d."
	case "role":
		var ro store.Role
		if ro, err = c.roleOf(r, s, r.PostFormValue("role")); err != nil {
			return c.done(w, r, "/console/users", err, "")
		}
		_, err = admin.ChangeRole(r.Context(), c.store, by, target, ro.ID)
		text = target.Email + " now has the role " + ro.Name + "."
	case "password":
		password := r.PostFormValue("password")
		if len([]rune(password)) < admin.MinPasswordLength {
			return c.done(w, r, "/console/users", badRequest("The password must have at least 12 characters."), "")
		}
		mustChange := r.PostFormValue("must_change") == "on"
		err = admin.ResetPassword(r.Context(), c.store, by, target, password, mustChange)
		text = "The password of " + target.Email + " is reset and its sessions are signed out."
		if mustChange {
			text += " It is a one-time password: " + target.Email + " chooses a new one at the next sign-in."
		}
	case "reset-mfa":
		err = admin.ResetSecondFactor(r.Context(), c.store, by, target)
		text = "The second factors of " + target.Email + " (authenticator app, recovery codes and passkeys) are removed."
	case "delete":
		err = c.store.DeleteUser(r.Context(), s.audit("user.delete", "user", id), s.User.OrgID, id)
		text = "User deleted."
	default:
		return notFound("operation")
	}
	if errors.Is(err, store.ErrLastOperator) {
		err = &pageError{http.StatusConflict, target.Email + " is the server's last enabled instance operator: grant another user first (patchd admin user operator grant --email …)."}
	}
	if errors.Is(err, store.ErrOtherOrgs) {
		err = &pageError{http.StatusConflict, target.Email + " belongs to other organizations too: this organization changes only its role, and Delete removes it from this organization. Its password and second factor are the person's own (or the server's operator's: patchd admin user)."}
	}
	return c.done(w, r, "/console/users", adminError(err), text)
}

// userOf finds a console user of the session's organization.
func (c *Console) userOf(r *http.Request, s *session, id string) (store.ConsoleUser, error) {
	users, err := c.store.ListUsers(r.Context(), s.User.OrgID)
	if err != nil {
		return store.ConsoleUser{}, err
	}
	for _, u := range users {
		if u.ID == id {
			return u, nil
		}
	}
	return store.ConsoleUser{}, notFound("user")
}

// credentialCreate creates an API credential through POST
// /api/v1/credentials and shows its secret once.
func (c *Console) credentialCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	var nc apiv1.NewCredential
	body := apiv1.CredentialBody{Name: r.PostFormValue("name"), Role: r.PostFormValue("role")}
	if err := c.callAPI(r, s, http.MethodPost, "/api/v1/credentials", body, &nc); err != nil {
		return c.done(w, r, "/console/users", err, "")
	}
	d, err := c.usersData(r, s)
	if err != nil {
		return err
	}
	d.NewCredential = &nc
	return c.render(w, r, s, http.StatusOK, "users", "", "Users & API Credentials", "users", d)
}

// credentialChange disables or enables (PATCH) or deletes (DELETE
// /api/v1/credentials/{id}) an API credential.
func (c *Console) credentialChange(w http.ResponseWriter, r *http.Request, s *session) error {
	id, op := r.PathValue("id"), r.PathValue("op")
	path := "/api/v1/credentials/" + url.PathEscape(id)
	var cred apiv1.Credential
	var err error
	switch op {
	case "disable", "enable":
		disabled := op == "disable"
		err = c.callAPI(r, s, http.MethodPatch, path, apiv1.CredentialPatch{Disabled: &disabled}, &cred)
	case "delete":
		return c.deleted(w, r, s, deletion{api: path, page: "/console/users", list: "/console/users", ok: "Credential deleted."})
	default:
		return notFound("operation")
	}
	return c.done(w, r, "/console/users", err, "Credential "+cred.Name+": "+op+"d.")
}

type enrollData struct {
	Tokens     []apiv1.EnrollToken
	New        *apiv1.NewEnrollToken
	Installers *agentdist.Installers
	BaseURL    string
	Loopback   bool
	Published  []agentdist.Binary
	Packages   []packageLink
	Now        time.Time
	Offer      installOffer
}

// installOffer is what the enrollment page offers to install: a
// platform's lines only when its agent can be downloaded from this server.
type installOffer struct {
	Linux, MacOS, Windows bool // an agent of the system is published
	Packages              bool // .deb and .rpm: a Linux agent, and a server that builds packages
	MSI                   bool // the .msi: a Windows x64 agent, and wixl and msibuild here
	Missing               []string
}

type packageLink struct{ Label, URL string }

// baseURL is the server's public address: --base-url, else the address
// the browser reached.
func (c *Console) baseURL(r *http.Request) string {
	if c.cfg.BaseURL != "" {
		return c.cfg.BaseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (c *Console) enrollmentData(r *http.Request, s *session) (*enrollData, error) {
	var tokens apiv1.List[apiv1.EnrollToken]
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/enrollment-tokens", nil, &tokens); err != nil {
		return nil, err
	}
	base := c.baseURL(r)
	d := &enrollData{Tokens: tokens.Items, BaseURL: base, Loopback: agentdist.IsLoopback(base), Now: c.now()}
	if c.cfg.Agents != nil {
		d.Published = c.cfg.Agents.Published()
		builds := c.cfg.Agents.Packages != nil
		for _, b := range d.Published {
			switch b.OS {
			case "linux":
				d.Offer.Linux = true
				d.Offer.Packages = builds
			case "darwin":
				d.Offer.MacOS = true
			case "windows":
				d.Offer.Windows = true
				d.Offer.MSI = d.Offer.MSI || (builds && b.Arch == "amd64" && agentdist.CanBuildMSI())
			}
			if b.OS == "linux" && builds {
				d.Packages = append(d.Packages, packageLink{".deb " + b.Arch, base + "/agent/v1/package/deb/" + b.Arch},
					packageLink{".rpm " + b.Arch, base + "/agent/v1/package/rpm/" + b.Arch})
			}
			if b.OS == "windows" && b.Arch == "amd64" && builds && agentdist.CanBuildMSI() {
				d.Packages = append(d.Packages, packageLink{".msi x64 (Intune, GPO, SCCM)", base + "/agent/v1/package/msi/amd64"})
			}
		}
	}
	for _, p := range []struct {
		has  bool
		name string
	}{{d.Offer.Linux, "Linux"}, {d.Offer.MacOS, "macOS"}, {d.Offer.Windows, "Windows"}} {
		if !p.has {
			d.Offer.Missing = append(d.Offer.Missing, p.name)
		}
	}
	return d, nil
}

func (c *Console) enrollmentPage(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := c.enrollmentData(r, s)
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "enrollment", "", "Agent enrollment", "enrollment", d)
}

func (c *Console) enrollTokenCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	var body apiv1.EnrollTokenBody
	switch r.PostFormValue("expires") {
	case "", "never":
	case "1d":
		body.ExpiresInHours = 24
	case "7d":
		body.ExpiresInHours = 7 * 24
	case "30d":
		body.ExpiresInHours = 30 * 24
	default:
		return c.done(w, r, "/console/enrollment", badRequest("Choose how long the token is valid."), "")
	}
	var t apiv1.NewEnrollToken
	if err := c.callAPI(r, s, http.MethodPost, "/api/v1/enrollment-tokens", body, &t); err != nil {
		return c.done(w, r, "/console/enrollment", err, "")
	}
	d, err := c.enrollmentData(r, s)
	if err != nil {
		return err
	}
	d.New = &t
	if c.cfg.Agents != nil {
		in, err := c.cfg.Agents.Installers(r.Context(), d.BaseURL, t.Secret())
		if err != nil {
			return err
		}
		d.Installers = &in
	}
	return c.render(w, r, s, http.StatusOK, "enrollment", "", "Agent enrollment", "enrollment", d)
}

func (c *Console) enrollTokenRevoke(w http.ResponseWriter, r *http.Request, s *session) error {
	err := c.callAPI(r, s, http.MethodPost, "/api/v1/enrollment-tokens/"+url.PathEscape(r.PathValue("id"))+"/revoke", nil, nil)
	return c.done(w, r, "/console/enrollment", err, "Enrollment token revoked.")
}

type auditData struct {
	Entries              []apiv1.AuditEntry
	Actor, Action, Since string
	Limit                int
	// Total counts the matching entries; Older is the query of the next
	// page when there is one.
	Total int
	Older template.URL
}

// auditQuery reads the Audit Trail pages' filters.
func auditQuery(r *http.Request) (auditData, time.Time, error) {
	q := r.URL.Query()
	d := auditData{Actor: strings.TrimSpace(q.Get("actor")), Action: strings.TrimSpace(q.Get("action")), Since: q.Get("since"), Limit: 200}
	if d.Since == "" {
		return d, time.Time{}, nil
	}
	t, err := time.Parse("2006-01-02T15:04", d.Since)
	if err != nil {
		if t, err = time.Parse("2006-01-02", d.Since); err != nil {
			return d, t, badRequest("'since' must be a date (YYYY-MM-DD) or a date and time.")
		}
	}
	return d, t.UTC(), nil
}

func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, s *session) error {
	d, since, err := auditQuery(r)
	if err != nil {
		return err
	}
	q := url.Values{"limit": {strconv.Itoa(d.Limit)}}
	for k, v := range map[string]string{"actor": d.Actor, "action": d.Action} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !since.IsZero() {
		q.Set("since", since.Format(time.RFC3339))
	}
	offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	var page apiv1.Page[apiv1.AuditEntry]
	if err := c.callAPI(r, s, http.MethodGet, "/api/v1/audit?"+q.Encode(), nil, &page); err != nil {
		return err
	}
	d.Entries, d.Total = page.Items, page.Total
	if next := page.Offset + len(page.Items); len(page.Items) > 0 && next < page.Total {
		older := r.URL.Query()
		older.Set("offset", strconv.Itoa(next))
		// The query is url.Values.Encode's: safe as it stands.
		d.Older = template.URL("/console/audit?" + older.Encode())
	}
	return c.render(w, r, s, http.StatusOK, "audit", "", "Audit Trail", "audit", d)
}

type instanceAuditData struct {
	auditData
	Events []store.InstanceEvent
}

// instanceAuditPage is the instance's Audit Trail (feed imports and
// syncs, operator grants), for instance operators.
func (c *Console) instanceAuditPage(w http.ResponseWriter, r *http.Request, s *session) error {
	d, since, err := auditQuery(r)
	if err != nil {
		return err
	}
	f := store.InstanceEventFilter{Actor: d.Actor, Since: since, Limit: d.Limit}
	if d.Action != "" {
		f.Actions = []string{d.Action}
	}
	events, err := c.store.ListInstanceEvents(r.Context(), f)
	if err != nil {
		return err
	}
	return c.render(w, r, s, http.StatusOK, "instance_audit", "", "Instance Audit Trail", "instance-audit", &instanceAuditData{auditData: d, Events: events})
}
