package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// Limits of GroupBody values.
const (
	maxGroupName        = 200
	maxGroupDescription = 4096
	maxGroupMachines    = 100000
	maxOfflineMinutes   = 525600 // a year
)

// groupBody is GroupBody with presence tracking: a field left out changes
// nothing, and offlineAlertMinutes null clears the alert.
type groupBody struct {
	Name                *string            `json:"name"`
	Description         *string            `json:"description"`
	MatchAll            *bool              `json:"matchAll"`
	Rules               *[]apiv1.GroupRule `json:"rules"`
	ExcludeRules        *[]apiv1.GroupRule `json:"excludeRules"`
	MachineIDs          *[]string          `json:"machineIds"`
	OfflineAlertMinutes json.RawMessage    `json:"offlineAlertMinutes"`
	OnlineAlert         *bool              `json:"onlineAlert"`
}

// check validates the body and answers every field problem at once; create
// requires a name.
func (b groupBody) check(create bool) (store.GroupChange, error) {
	var errs valid.Errors
	c := store.GroupChange{Description: b.Description, MatchAll: b.MatchAll, OnlineAlert: b.OnlineAlert}
	switch {
	case b.Name == nil && create:
		errs.Add("name", "is required")
	case b.Name != nil:
		name := strings.TrimSpace(*b.Name)
		if name == "" {
			errs.Add("name", "must not be empty")
		} else if utf8.RuneCountInString(name) > maxGroupName {
			errs.Add("name", "must have at most %d characters", maxGroupName)
		}
		c.Name = &name
	}
	if b.Description != nil && utf8.RuneCountInString(*b.Description) > maxGroupDescription {
		errs.Add("description", "must have at most %d characters", maxGroupDescription)
	}
	c.Rules = checkRules(&errs, "rules", b.Rules)
	c.ExcludeRules = checkRules(&errs, "excludeRules", b.ExcludeRules)
	if b.MachineIDs != nil {
		ids := make([]string, 0, len(*b.MachineIDs))
		for i, id := range *b.MachineIDs {
			id = strings.TrimSpace(id)
			if id == "" {
				errs.Add(fmt.Sprintf("machineIds[%d]", i), "must not be empty")
			}
			ids = append(ids, id)
		}
		if len(ids) > maxGroupMachines {
			errs.Add("machineIds", "at most %d endpoints", maxGroupMachines)
		}
		if (c.Rules != nil && len(*c.Rules) > 0) || (c.ExcludeRules != nil && len(*c.ExcludeRules) > 0) {
			errs.Add("machineIds", "a group is static (machineIds) or dynamic (rules, excludeRules), not both")
		}
		c.MachineIDs = &ids
	}
	if b.OfflineAlertMinutes != nil {
		c.OfflineAlertSet = true
		if string(b.OfflineAlertMinutes) != "null" {
			var n int
			if err := json.Unmarshal(b.OfflineAlertMinutes, &n); err != nil {
				errs.Add("offlineAlertMinutes", "must be an integer or null")
			} else if n < 1 || n > maxOfflineMinutes {
				errs.Add("offlineAlertMinutes", "must be between 1 and %d", maxOfflineMinutes)
			} else {
				c.OfflineAlertMinutes = &n
			}
		}
	}
	return c, errs.Err()
}

func checkRules(errs *valid.Errors, name string, in *[]apiv1.GroupRule) *[]groups.Rule {
	if in == nil {
		return nil
	}
	if len(*in) > groups.MaxRules {
		errs.Add(name, "at most %d rules", groups.MaxRules)
	}
	out := make([]groups.Rule, 0, len(*in))
	for i, r := range *in {
		rule, probs := groups.CheckRule(r.Field, r.Op, r.Value)
		for _, p := range probs {
			errs.Add(fmt.Sprintf("%s[%d].%s", name, i, p.Path), "%s", p.Message)
		}
		out = append(out, rule)
	}
	return &out
}

func groupOut(g store.Group) apiv1.Group {
	out := apiv1.Group{ID: g.ID, Name: g.Name, System: g.System, Kind: g.Kind, Members: g.Members, Description: g.Description,
		MatchAll: g.MatchAll, Rules: make([]apiv1.GroupRule, len(g.Rules)), ExcludeRules: make([]apiv1.GroupRule, len(g.ExcludeRules)),
		OfflineAlertMinutes: g.OfflineAlertMinutes, OnlineAlert: g.OnlineAlert}
	for i, r := range g.Rules {
		out.Rules[i] = apiv1.GroupRule(r)
	}
	for i, r := range g.ExcludeRules {
		out.ExcludeRules[i] = apiv1.GroupRule(r)
	}
	return out
}

func groupError(err error) error {
	switch {
	case isNotFound(err):
		return httpx.NotFound("group")
	case errors.Is(err, store.ErrBuiltinGroup):
		return httpx.Errorf(http.StatusConflict, "builtin_group", "built-in groups cannot be renamed, given criteria or deleted")
	}
	return err
}

// listGroups is operation 9.
func (a *API) listGroups(w http.ResponseWriter, r *http.Request) error {
	body, err := a.store.GroupListEncoded(r.Context(), principal(r).OrgID, time.Now(), func(list []store.Group) ([]byte, error) {
		return json.Marshal(listOf(list, groupOut))
	})
	if err != nil {
		return err
	}
	httpx.WriteEncoded(w, http.StatusOK, body)
	return nil
}

// getGroup answers one group with its criteria and member count (patchd
// addition).
func (a *API) getGroup(w http.ResponseWriter, r *http.Request) error {
	g, err := a.store.GetGroup(r.Context(), principal(r).OrgID, r.PathValue("id"), time.Now())
	if err != nil {
		return groupError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, groupOut(g))
	return nil
}

// createGroup is operation 10.
func (a *API) createGroup(w http.ResponseWriter, r *http.Request) error {
	var body groupBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	c, err := body.check(true)
	if err != nil {
		return err
	}
	e := a.auditEntry(r, "group.create", "group", "")
	e.Summary = groupSummary(c)
	g, err := a.store.CreateGroup(r.Context(), e, principal(r).OrgID, c, time.Now())
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.GroupResult{OK: true, Group: apiv1.Ref{ID: g.ID, Name: g.Name}})
	return nil
}

// patchGroup is operation 11.
func (a *API) patchGroup(w http.ResponseWriter, r *http.Request) error {
	var body groupBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	c, err := body.check(false)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	e := a.auditEntry(r, "group.update", "group", id)
	e.Summary = groupSummary(c)
	g, err := a.store.PatchGroup(r.Context(), e, principal(r).OrgID, id, c, time.Now())
	if err != nil {
		return groupError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.GroupResult{OK: true, Group: apiv1.Ref{ID: g.ID, Name: g.Name}})
	return nil
}

// deleteGroup is operation 12.
func (a *API) deleteGroup(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := a.store.DeleteGroup(r.Context(), a.auditEntry(r, "group.delete", "group", id), principal(r).OrgID, id); err != nil {
		return groupError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}

// groupSummary is the Audit Trail summary of a group write.
func groupSummary(c store.GroupChange) map[string]any {
	m := map[string]any{}
	if c.Name != nil {
		m["name"] = *c.Name
	}
	if c.Description != nil {
		m["description"] = *c.Description
	}
	if c.MatchAll != nil {
		m["matchAll"] = *c.MatchAll
	}
	if c.Rules != nil {
		m["rules"] = *c.Rules
	}
	if c.ExcludeRules != nil {
		m["excludeRules"] = *c.ExcludeRules
	}
	if c.MachineIDs != nil {
		m["machines"] = len(*c.MachineIDs)
	}
	if c.OfflineAlertSet {
		m["offlineAlertMinutes"] = c.OfflineAlertMinutes
	}
	if c.OnlineAlert != nil {
		m["onlineAlert"] = *c.OnlineAlert
	}
	return m
}
