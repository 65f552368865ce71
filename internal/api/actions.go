package api

import (
	"context"
	"errors"
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

// Limits of an ActionBody.
const (
	maxActionEndpoints = 100_000
	maxLabel           = 255
)

var errNothingToInstall = httpx.Errorf(http.StatusUnprocessableEntity, "nothing_to_install",
	"no endpoint has an update to install for this selection (no matching, allowed update with a package source)")

// createAction is operation 18: one run with a command per valid endpoint.
func (a *API) createAction(w http.ResponseWriter, r *http.Request) error {
	var body apiv1.ActionBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	var errs valid.Errors
	body.Type = strings.ToUpper(strings.TrimSpace(body.Type))
	if body.Type == "" {
		errs.Add("type", "is required: RUN_SCRIPT, DEPLOY_UPDATES, REBOOT, DEPLOY_SOFTWARE or UNINSTALL_SOFTWARE")
	}
	if len(body.EndpointIDs) == 0 {
		errs.Add("endpointIds", "must list at least one endpoint id")
	} else if len(body.EndpointIDs) > maxActionEndpoints {
		errs.Add("endpointIds", "must list at most %d endpoint ids", maxActionEndpoints)
	}
	label := strings.TrimSpace(body.Label)
	if utf8.RuneCountInString(label) > maxLabel {
		errs.Add("label", "must have at most %d characters", maxLabel)
	}
	var act actions.Action
	if body.Type != "" {
		var err error
		if act, err = actions.Parse(body.Type, body.Payload, "payload."); err != nil {
			var v *valid.Error
			if !errors.As(err, &v) {
				return err
			}
			errs.Problems = append(errs.Problems, v.Problems...)
		}
	}
	if err := errs.Err(); err != nil {
		return err
	}
	if label == "" {
		label = actions.Label(act.Type)
	}
	p := principal(r)
	e := a.auditEntry(r, "action.run", "run", "")
	e.Summary = map[string]any{"type": act.Type, "label": label, "endpoints": len(body.EndpointIDs)}
	run, err := a.launch(r.Context(), e, store.Launch{
		Run:         store.NewRun{OrgID: p.OrgID, Name: label, CreatedBy: p.Actor()},
		Action:      act,
		EndpointIDs: body.EndpointIDs,
	})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.RunStarted{OK: true, RunID: run.RunID, Queued: run.Queued})
	return nil
}

// launch starts a run, maps its refusals to the spec's statuses, and wakes
// the agents that got commands.
func (a *API) launch(ctx context.Context, e *store.AuditEntry, l store.Launch) (store.CreatedRun, error) {
	run, err := a.store.LaunchRun(ctx, e, l, time.Now())
	switch {
	case errors.Is(err, store.ErrNoEndpoints):
		return run, httpx.Errorf(http.StatusNotFound, "not_found", "no valid endpoints: none of the listed ids is an endpoint of the organization")
	case errors.Is(err, store.ErrNothingToInstall):
		return run, errNothingToInstall
	case errors.Is(err, dberr.ErrNotFound):
		// The stored script went away between validation and the run.
		return run, valid.One("payload.scriptId", "no such script")
	case err != nil:
		return run, err
	}
	a.queued(ctx, run.Endpoints)
	return run, nil
}

func (a *API) queued(ctx context.Context, endpoints []string) {
	if a.cfg.Queued != nil && len(endpoints) > 0 {
		a.cfg.Queued(ctx, endpoints)
	}
}

// checkScript tells whether a RUN_SCRIPT action names a stored script of
// the organization with the parameters it declares.
func (a *API) checkScript(ctx context.Context, orgID string, act actions.Action) error {
	if act.ScriptID == "" {
		return nil
	}
	sc, err := a.store.GetScript(ctx, orgID, act.ScriptID)
	if isNotFound(err) {
		return valid.One("payload.scriptId", "no such script in the organization")
	}
	if err != nil {
		return err
	}
	_, err = actions.ResolveScript(sc.Stored(), act.Parameters, 0, "payload.")
	return err
}
