package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/actions"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// Limits of ScriptBody values.
const (
	maxScriptName       = 200
	maxScriptParams     = 50
	maxScriptParamName  = 100
	maxScriptParamValue = 4096
	maxRebootExitCodes  = 50
)

// checkScript applies body to sc (a new script, or the stored one for an
// update) and answers every field problem at once.
func checkScript(body apiv1.ScriptBody, sc *store.Script) error {
	var errs valid.Errors
	if body.Name != nil {
		sc.Name = strings.TrimSpace(*body.Name)
		if utf8.RuneCountInString(sc.Name) > maxScriptName {
			errs.Add("name", "must have at most %d characters", maxScriptName)
		}
	}
	if sc.Name == "" {
		errs.Add("name", "is required")
	}
	if body.Language != nil {
		l, ok := actions.Language(*body.Language)
		if !ok {
			errs.Add("language", "must be sh, bash, powershell, python or cmd")
		}
		sc.Language = l
	} else if sc.Language == "" {
		errs.Add("language", "is required")
	}
	if body.Code != nil {
		sc.Code = *body.Code
	}
	switch {
	case strings.TrimSpace(sc.Code) == "":
		errs.Add("code", "is required")
	case len(sc.Code) > actions.MaxScriptBytes:
		errs.Add("code", "must be at most %d bytes", actions.MaxScriptBytes)
	}
	if body.Parameters != nil {
		params := *body.Parameters
		if len(params) > maxScriptParams {
			errs.Add("parameters", "at most %d parameters", maxScriptParams)
		}
		seen := map[string]bool{}
		sc.Parameters = make([]actions.ScriptParam, 0, len(params))
		for i, p := range params {
			field := fmt.Sprintf("parameters[%d]", i)
			name := strings.TrimSpace(p.Name)
			switch {
			case name == "":
				errs.Add(field+".name", "is required")
			case utf8.RuneCountInString(name) > maxScriptParamName:
				errs.Add(field+".name", "must have at most %d characters", maxScriptParamName)
			case seen[name]:
				errs.Add(field+".name", "%q is declared twice", name)
			}
			if len(p.Default) > maxScriptParamValue {
				errs.Add(field+".default", "must be at most %d bytes", maxScriptParamValue)
			}
			seen[name] = true
			sc.Parameters = append(sc.Parameters, actions.ScriptParam{Name: name, Default: p.Default, Required: p.Required})
		}
	}
	if body.RebootExitCodes != nil {
		codes := *body.RebootExitCodes
		if len(codes) > maxRebootExitCodes {
			errs.Add("rebootExitCodes", "at most %d exit codes", maxRebootExitCodes)
		}
		for i, c := range codes {
			if int64(c) < math.MinInt32 || int64(c) > math.MaxUint32 {
				errs.Add(fmt.Sprintf("rebootExitCodes[%d]", i), "is not a process exit code")
			}
		}
		sc.RebootExitCodes = append([]int{}, codes...)
	}
	if body.TimeoutSeconds != nil {
		if *body.TimeoutSeconds < 0 || *body.TimeoutSeconds > actions.MaxScriptTimeout {
			errs.Add("timeoutSeconds", "must be 0 (the agent's default) to %d", actions.MaxScriptTimeout)
		}
		sc.TimeoutSeconds = *body.TimeoutSeconds
	}
	return errs.Err()
}

func scriptOut(sc store.Script) apiv1.Script {
	out := apiv1.Script{ID: sc.ID, Name: sc.Name, Language: sc.Language, Code: sc.Code, Parameters: make([]apiv1.ScriptParameter, len(sc.Parameters)),
		RebootExitCodes: append([]int{}, sc.RebootExitCodes...), TimeoutSeconds: sc.TimeoutSeconds, CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt}
	for i, p := range sc.Parameters {
		out.Parameters[i] = apiv1.ScriptParameter{Name: p.Name, Default: p.Default, Required: p.Required}
	}
	return out
}

func scriptSummary(sc store.Script) map[string]any {
	return map[string]any{"name": sc.Name, "language": sc.Language, "parameters": len(sc.Parameters),
		"rebootExitCodes": sc.RebootExitCodes, "timeoutSeconds": sc.TimeoutSeconds}
}

func scriptError(err error) error {
	switch {
	case isNotFound(err):
		return httpx.NotFound("script")
	case errors.Is(err, dberr.ErrConflict):
		return httpx.Validation("name", "is taken by another script of the organization")
	}
	return err
}

// listScripts answers the organization's script library by name (patchd addition).
func (a *API) listScripts(w http.ResponseWriter, r *http.Request) error {
	list, err := a.store.ListScripts(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, listOf(list, scriptOut))
	return nil
}

// getScript answers one script, by id or by name (patchd addition).
func (a *API) getScript(w http.ResponseWriter, r *http.Request) error {
	sc, err := a.store.GetScript(r.Context(), principal(r).OrgID, r.PathValue("id"))
	if err != nil {
		return scriptError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, scriptOut(sc))
	return nil
}

// createScript adds a script to the library (patchd addition).
func (a *API) createScript(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.ScriptBody
	if err := httpx.DecodeJSONLimit(w, r, &body, 2*actions.MaxScriptBytes); err != nil {
		return err
	}
	sc := store.Script{OrgID: principal(r).OrgID}
	if err := checkScript(body, &sc); err != nil {
		return err
	}
	e := a.auditEntry(r, "script.create", "script", "")
	e.Summary = scriptSummary(sc)
	created, err := a.store.CreateScript(r.Context(), e, sc, time.Now())
	if err != nil {
		return scriptError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, scriptOut(created))
	return nil
}

// updateScript changes the fields the body gives (patchd addition); runs
// created before keep the code they were created with.
func (a *API) updateScript(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.ScriptBody
	if err := httpx.DecodeJSONLimit(w, r, &body, 2*actions.MaxScriptBytes); err != nil {
		return err
	}
	orgID := principal(r).OrgID
	sc, err := a.store.GetScript(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return scriptError(err)
	}
	if err := checkScript(body, &sc); err != nil {
		return err
	}
	e := a.auditEntry(r, "script.update", "script", sc.ID)
	e.Summary = scriptSummary(sc)
	updated, err := a.store.UpdateScript(r.Context(), e, sc, time.Now())
	if err != nil {
		return scriptError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, scriptOut(updated))
	return nil
}

// deleteScript removes a script (patchd addition); automations that name
// it fail to run afterwards, and say so.
func (a *API) deleteScript(w http.ResponseWriter, r *http.Request) error {
	orgID := principal(r).OrgID
	sc, err := a.store.GetScript(r.Context(), orgID, r.PathValue("id"))
	if err != nil {
		return scriptError(err)
	}
	e := a.auditEntry(r, "script.delete", "script", sc.ID)
	e.Summary = map[string]any{"name": sc.Name}
	if err := a.store.DeleteScript(r.Context(), e, orgID, sc.ID); err != nil {
		return scriptError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}
