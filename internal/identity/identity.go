// Package identity decides who a sign-in becomes: for an OpenID Connect
// sign-in, which console account the provider account signs in as (the
// linked one, the organization's account with its e-mail address, or a new
// one created just in time), under which rules (a verified address in an
// allowed domain, no instance operator, no account whose second factor the
// link would skip) and with which role (the role mapping); for passkeys,
// the WebAuthn ceremonies (package identity/passkey).
//
// It is a package of its own, not a part of internal/sso: internal/sso
// holds what an organization's provider configuration must be, which the
// API, the command line and the console's settings page check, and knows
// nothing of accounts. identity uses those rules (allowed domains, role
// claims) and the store, and knows nothing of HTTP: the console parses
// the request, runs the OpenID Connect protocol, asks identity, and
// renders, redirects and sets cookies by what it answers.
package identity
