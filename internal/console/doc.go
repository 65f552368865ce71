// # Store or API: which one a console handler uses
//
// Reads go to the store (c.store). A page often shows what no single API
// operation answers (several resources on one page, joins, tallies), and a
// read changes nothing, so it needs no more than the page's own permission
// and leaves no Audit Trail entry.
//
// Changes go through the REST API in the process: c.callAPI, and c.deleted
// for a delete button. The call runs the same decoding, validation,
// permission check, store code and Audit Trail entry as a patchctl or REST
// client's call, so each rule is written once and an action reads alike in
// the Audit Trail wherever it came from; the console only words a refusal
// for its form.
//
// A read goes through the API as well when the page shows what the API
// computes, so both show the same (agent versions with their rollout and
// the groups to stage it on, role use, the audit page, runs with their
// filters, the remediation policy, the script library, enrollment tokens),
// or when a form reads a document, changes it and puts it back (the
// approval policy, an alert rule).
//
// The store is written directly only where the API has no operation: sign-in
// and sign-out, console sessions, the signed-in user's own account, second
// factors and passkeys, invitations and the single sign-on flow. Each such
// write carries its Audit Trail entry (s.audit, c.userAudit). Administering
// another user (role, disabling, password, second factor) calls package
// admin, as the API's user operations do; an uploaded vulnerability feed is
// imported by package vulndb, as patchd vulndb import does. Two changes still call the store
// with their own audit entry although the API has the operation: deleting a
// user (the API goes through admin.DeletePerson) and sending a failed alert
// delivery again.
package console
