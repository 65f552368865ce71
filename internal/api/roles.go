package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// Roles (a patchd addition under /api/v1/roles): the organization's roles
// and custom roles made from the spec's permissions. As the people
// operations, for roles holding every permission: a role is what a user
// or credential may do.

const maxRoleName = 100

func roleOut(r store.Role, use store.RoleUse) apiv1.Role {
	return apiv1.Role{ID: r.ID, Name: r.Name, Permissions: r.Permissions.Names(), Builtin: r.Builtin,
		Users: use.Users, Credentials: use.Credentials, SSO: use.SSO, CreatedAt: r.CreatedAt}
}

func (a *API) listRoles(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "managing roles"); err != nil {
		return err
	}
	orgID := principal(r).OrgID
	roles, err := a.store.ListRoles(r.Context(), orgID)
	if err != nil {
		return err
	}
	uses, err := a.store.RoleUses(r.Context(), orgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, listOf(roles, func(ro store.Role) apiv1.Role { return roleOut(ro, uses[ro.ID]) }))
	return nil
}

// checkRoleName adds the problems of a role's name to errs and answers it
// trimmed.
func checkRoleName(errs *valid.Errors, name string) string {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		errs.Add("name", "is required")
	case utf8.RuneCountInString(name) > maxRoleName:
		errs.Add("name", "must have at most %d characters", maxRoleName)
	case strings.IndexFunc(name, func(c rune) bool { return c < 0x20 || c == 0x7f }) >= 0:
		errs.Add("name", "must not hold control characters")
	}
	return name
}

// checkPermissions adds the problems of a permission list to errs (each
// name one of the spec's; at least one) and answers the set.
func checkPermissions(errs *valid.Errors, names []string) perm.Set {
	if len(names) == 0 {
		errs.Add("permissions", "give at least one of: %s", strings.Join(perm.All.Names(), ", "))
		return 0
	}
	var set perm.Set
	for i, n := range names {
		p, err := perm.Parse(strings.TrimSpace(n))
		if err != nil || p == 0 || strings.Contains(n, ",") {
			errs.Add(fmt.Sprintf("permissions[%d]", i), "%q is not a permission; one of: %s", n, strings.Join(perm.All.Names(), ", "))
			continue
		}
		set |= p
	}
	return set
}

func roleError(err error) error {
	switch {
	case isNotFound(err):
		return httpx.NotFound("role")
	case errors.Is(err, dberr.ErrConflict):
		return httpx.Validation("name", "is taken by another role of the organization")
	case errors.Is(err, store.ErrBuiltinRole):
		return httpx.Errorf(http.StatusConflict, "builtin_role", "a built-in role cannot be changed or deleted")
	}
	return err
}

func (a *API) createRole(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "managing roles"); err != nil {
		return err
	}
	var body apiv1.RoleBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	var errs valid.Errors
	name := checkRoleName(&errs, body.Name)
	set := checkPermissions(&errs, body.Permissions)
	if err := errs.Err(); err != nil {
		return err
	}
	e := a.auditEntry(r, "role.create", "role", "")
	e.Summary = map[string]any{"name": name, "permissions": set.Names()}
	ro, err := a.store.CreateRoleAudited(r.Context(), e, principal(r).OrgID, name, set)
	if err != nil {
		return roleError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, roleOut(ro, store.RoleUse{}))
	return nil
}

// findRole finds the role {id} (id or name) of the caller's organization.
func (a *API) findRole(r *http.Request) (store.Role, error) {
	ro, err := a.store.FindRole(r.Context(), principal(r).OrgID, r.PathValue("id"))
	if err != nil {
		return ro, roleError(err)
	}
	return ro, nil
}

func (a *API) patchRole(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "managing roles"); err != nil {
		return err
	}
	var body apiv1.RolePatch
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	ro, err := a.findRole(r)
	if err != nil {
		return err
	}
	if ro.Builtin {
		return roleError(store.ErrBuiltinRole)
	}
	var errs valid.Errors
	name, set := ro.Name, ro.Permissions
	if body.Name == nil && body.Permissions == nil {
		errs.Add("name", "give name, permissions or both")
	}
	if body.Name != nil {
		name = checkRoleName(&errs, *body.Name)
	}
	if body.Permissions != nil {
		set = checkPermissions(&errs, *body.Permissions)
	}
	if err := errs.Err(); err != nil {
		return err
	}
	e := a.auditEntry(r, "role.update", "role", ro.ID)
	e.Summary = map[string]any{"name": name}
	if name != ro.Name {
		e.Summary["from"] = ro.Name
	}
	if set != ro.Permissions {
		e.Summary["permissions"], e.Summary["fromPermissions"] = set.Names(), ro.Permissions.Names()
	}
	if err := a.store.UpdateRole(r.Context(), e, ro.OrgID, ro.ID, name, set); err != nil {
		return roleError(err)
	}
	// This replica drops the role's cached tokens at once; the others
	// learn it from the store within seconds.
	a.auth.Forget(store.AuthChange{RoleID: ro.ID})
	ro.Name, ro.Permissions = name, set
	uses, err := a.store.RoleUses(r.Context(), ro.OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, roleOut(ro, uses[ro.ID]))
	return nil
}

func (a *API) deleteRole(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "managing roles"); err != nil {
		return err
	}
	ro, err := a.findRole(r)
	if err != nil {
		return err
	}
	e := a.auditEntry(r, "role.delete", "role", ro.ID)
	e.Summary = map[string]any{"name": ro.Name, "permissions": ro.Permissions.Names()}
	use, err := a.store.DeleteRole(r.Context(), e, ro.OrgID, ro.ID)
	if errors.Is(err, store.ErrRoleInUse) {
		held := fmt.Sprintf("%d user(s), %d API credential(s)", use.Users, use.Credentials)
		if use.SSO {
			held += ", the single sign-on settings"
		}
		return httpx.Errorf(http.StatusConflict, "role_in_use", "the role "+ro.Name+" is in use ("+held+"): give them another role first")
	}
	if err != nil {
		return roleError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}
