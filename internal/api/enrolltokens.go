package api

import (
	"net/http"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// maxEnrollTokenHours bounds expiresInHours: ten years.
const maxEnrollTokenHours = 10 * 365 * 24

// listEnrollTokens answers the organization's enrollment tokens with how
// many enrollments each made; never a secret (patchd addition).
func (a *API) listEnrollTokens(w http.ResponseWriter, r *http.Request) error {
	list, err := a.store.ListEnrollTokens(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, listOf(list, func(t store.EnrollToken) apiv1.EnrollToken {
		return apiv1.EnrollToken{ID: t.ID, ExpiresAt: t.ExpiresAt, Revoked: t.Revoked, Uses: t.Uses, CreatedAt: t.CreatedAt}
	}))
	return nil
}

// createEnrollToken makes an enrollment token with the code of patchd
// admin enroll-token create: the answer is the only place the token is
// shown, pinned ("<secret>.<caSha256>") when the server has a CA for agents
// to pin (patchd addition).
func (a *API) createEnrollToken(w http.ResponseWriter, r *http.Request) error {
	noStore(w)
	var body apiv1.EnrollTokenBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	var errs valid.Errors
	if body.ExpiresInHours < 0 || body.ExpiresInHours > maxEnrollTokenHours {
		errs.Add("expiresInHours", "must be 0 (never expires) to %d", maxEnrollTokenHours)
	}
	if err := errs.Err(); err != nil {
		return err
	}
	p := principal(r)
	t, err := admin.CreateEnrollToken(r.Context(), a.store, p.Actor(), p.OrgID, time.Duration(body.ExpiresInHours)*time.Hour)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, t.NewEnrollToken)
	return nil
}

// revokeEnrollToken revokes an enrollment token: it enrolls nothing more;
// agents enrolled with it stay enrolled (patchd addition).
func (a *API) revokeEnrollToken(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := a.store.RevokeEnrollToken(r.Context(), a.auditEntry(r, "enroll_token.revoke", "enroll_token", id), principal(r).OrgID, id); err != nil {
		if isNotFound(err) {
			return httpx.NotFound("enrollment token")
		}
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}
