// A real OpenID provider for the console's single sign-on tests:
// oidc-provider (OpenID Certified), pinned in package.json and
// package-lock.json. It listens on a free port of 127.0.0.1 and prints one
// JSON line {"issuer": …} once it serves.
//
// Environment:
//   REDIRECT_URI    patchd's callback (client "patchd")
//   CLIENT_SECRET   the secret of client "patchd" (and of "other-app")
//   ACCOUNTS        JSON {"e-mail": {"groups": [...], "email_verified": bool or "omit",
//                   "id_token_aud": [...], "id_token_azp": "..."}}: "omit" leaves
//                   email_verified out of the claims, as providers built on
//                   zitadel/oidc do for an unverified address (omitempty);
//                   id_token_aud makes the account's ID tokens for these
//                   audiences, id_token_azp gives them that azp claim
//   CLAIMS_IN_ID_TOKEN  "1": the scopes' claims go in the ID token too (as
//                   Keycloak and Entra ID do); otherwise only in the UserInfo
//                   answer, the OpenID Connect default for the code flow
//
// There is no login form: the interaction signs in the account the
// authorization request names in login_hint, and consents to what it asks.
// Clients: "patchd" (the server under test) and "other-app" (another
// application of the same provider, for ID tokens with another audience).
// PKCE is required of every client; ID tokens live 60 seconds.
import http from 'node:http';
import Provider from 'oidc-provider';

const redirectURI = process.env.REDIRECT_URI;
const secret = process.env.CLIENT_SECRET;
const accounts = JSON.parse(process.env.ACCOUNTS || '{}');
if (!redirectURI || !secret) {
  console.error('provider.mjs needs REDIRECT_URI and CLIENT_SECRET');
  process.exit(2);
}

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      { client_id: 'patchd', client_secret: secret, redirect_uris: [redirectURI],
        grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic' },
      { client_id: 'other-app', client_secret: secret, redirect_uris: ['http://127.0.0.1:9/other-app/callback'],
        grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic' },
    ],
    pkce: { required: () => true },
    conformIdTokenClaims: process.env.CLAIMS_IN_ID_TOKEN !== '1',
    scopes: ['openid', 'email', 'profile', 'groups'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    cookies: { keys: ['patchd-test-cookie-key-0123456789abcdef'] },
    ttl: { IdToken: 60, AccessToken: 600, AuthorizationCode: 600, Interaction: 600, Session: 600, Grant: 600 },
    async findAccount(ctx, id) {
      const a = accounts[id] || {};
      return {
        accountId: id,
        async claims() {
          const c = { sub: 'acct-' + id, email: id, email_verified: a.email_verified ?? true, name: id.split('@')[0], groups: a.groups || [] };
          if (a.email_verified === 'omit') delete c.email_verified;
          return c;
        },
      };
    },
  });
  // ID tokens for several audiences, or with an azp claim, for the accounts
  // that ask for them: oidc-provider makes an ID token for its client
  // alone, so the audience is given here as the client's id when it signs.
  const issue = provider.IdToken.prototype.issue;
  provider.IdToken.prototype.issue = function (opts) {
    const a = accounts[String(this.available.sub || '').replace(/^acct-/, '')] || {};
    if (opts && opts.use === 'idtoken') {
      if (a.id_token_azp) this.set('azp', a.id_token_azp);
      if (a.id_token_aud) {
        const client = this.client;
        this.client = new Proxy(client, { get: (t, k) => (k === 'clientId' ? a.id_token_aud : Reflect.get(t, k, t)) });
        return issue.call(this, opts).finally(() => { this.client = client; });
      }
    }
    return issue.call(this, opts);
  };
  const callback = provider.callback();
  server.on('request', async (req, res) => {
    if (!req.url.startsWith('/interaction/')) {
      callback(req, res);
      return;
    }
    try {
      const { prompt, params, session, grantId } = await provider.interactionDetails(req, res);
      if (prompt.name === 'login') {
        if (!params.login_hint) {
          res.statusCode = 400;
          res.end('the test provider signs in the login_hint account; none was given');
          return;
        }
        await provider.interactionFinished(req, res, { login: { accountId: params.login_hint } }, { mergeWithLastSubmission: false });
        return;
      }
      const grant = grantId ? await provider.Grant.find(grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      const d = prompt.details;
      if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
      if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(d.missingResourceScopes || {})) grant.addResourceScope(indicator, scopes.join(' '));
      await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
    } catch (err) {
      res.statusCode = 500;
      res.end(String(err));
    }
  });
  console.log(JSON.stringify({ issuer }));
});
