// A real OAuth 2 authorization server for the resource server's tests (tests/oauth/main.rs):
// npm `oauth2-mock-server`, installed by host/sluice-mcp/clients/install.sh under
// target/mcp-clients/oauth.
//
// Usage: node oauth_mock_server.mjs NODE_MODULES_DIR [--rfc8414] [--authorization-code]
//
// Listens on 127.0.0.1, a free port, and prints one JSON line: {"issuer": "http://127.0.0.1:PORT"}.
// It has three signing keys: RS256 `rsa-1`, ES256 `ec-1`, EdDSA `ed-1`. With --rfc8414 its
// metadata is served at /.well-known/oauth-authorization-server and the OpenID document
// answers 500.
//
// With --authorization-code, the access token of an authorization-code grant (GET /authorize,
// then POST /token) is one for the resource the client asked for: `aud` is the token request's
// `resource` form parameter (RFC 8707; else the one sent to /authorize), `scope` the scope sent
// to /authorize for that code (also the token response's `scope`), `sub` the mock's user
// `johndoe`. Without it the package's defaults hold (no `aud`, the scope `dummy`). Each such
// grant is recorded for GET /test/grants.
//
// Besides the standard endpoints (/jwks, /token, /authorize, /introspect, …) it answers:
//
//   POST /test/token  {"kid", "claims": {…}, "expires_in", "foreign", "alg"} -> {"token"}
//       A token of the issuer signed with key `kid` (default `rsa-1`); `claims` are merged
//       into the default ones (iss, iat, exp, nbf; a null value removes the claim);
//       `expires_in` seconds (default 3600). With "foreign": true it is signed by a key the
//       issuer does not publish, with the same kid. With "alg": "none" it is unsigned; with
//       "alg": "HS256" it is an HMAC signed with the issuer's RSA modulus as the secret (the
//       algorithm-confusion forgery).
//   POST /test/keys   {"alg", "kid"} -> the new public JWK (added to /jwks: a key rotation)
//   POST /test/introspection {...} -> {} : the body every later introspection answers
//   GET  /test/introspection -> {"authorization": the last introspection's header, "count"}
//   GET  /test/grants -> [{"authorize": {…}, "token": {…}, "claims": {…}}]
//       With --authorization-code (else []), each authorization-code grant: the /authorize
//       query's response_type, client_id, redirect_uri, resource, scope,
//       code_challenge_method; the /token form's grant_type, client_id, redirect_uri, resource
//       and `pkce` (a code_verifier was sent and matched the challenge: the package refuses
//       the request otherwise); the access token's sub, aud, scope
//
// It stops when its standard input closes (the test's Drop kills it too).

import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.argv[2];
const rfc8414 = process.argv.includes('--rfc8414');
const authorizationCode = process.argv.includes('--authorization-code');
if (!modules) {
  console.error('usage: node oauth_mock_server.mjs NODE_MODULES_DIR [--rfc8414] [--authorization-code]');
  process.exit(2);
}
const require = createRequire(path.join(modules, 'noop.js'));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
const { OAuth2Server, OAuth2Issuer, Events } = await load('oauth2-mock-server');
const jose = await load('jose');

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256', { kid: 'rsa-1' });
await server.issuer.keys.generate('ES256', { kid: 'ec-1' });
await server.issuer.keys.generate('EdDSA', { kid: 'ed-1', crv: 'Ed25519' });

// Keys nobody publishes, with the kids of the published ones.
const foreign = new OAuth2Issuer();
await foreign.keys.generate('RS256', { kid: 'rsa-1' });
await foreign.keys.generate('ES256', { kid: 'ec-1' });
await foreign.keys.generate('EdDSA', { kid: 'ed-1', crv: 'Ed25519' });

let introspection = { active: true };
let lastIntrospection = { authorization: null, count: 0 };
server.service.on(Events.BeforeIntrospect, (response, req) => {
  response.body = introspection;
  lastIntrospection = {
    authorization: req.headers.authorization ?? null,
    count: lastIntrospection.count + 1,
  };
});
if (rfc8414) {
  server.service.on(Events.BeforeWellKnownOpenIdConfiguration, (response) => {
    response.statusCode = 500;
    response.body = { error: 'server_error' };
  });
}

// --authorization-code: what /authorize was asked, by code, and each grant completed.
const asked = new Map();
const grants = [];
const pick = (from, names) => Object.fromEntries(names.map((n) => [n, from[n] ?? null]));
if (authorizationCode) {
  server.service.on(Events.BeforeAuthorizeRedirect, ({ url }, req) => {
    const code = url.searchParams.get('code');
    if (code === null) return;
    const query = Object.fromEntries(new URL(req.url, 'http://localhost').searchParams);
    const names = ['response_type', 'client_id', 'redirect_uri', 'resource', 'scope'];
    asked.set(code, pick(query, [...names, 'code_challenge_method']));
  });
  server.service.on(Events.BeforeTokenSigning, (token, req) => {
    const body = req.body ?? {};
    // The id token of the same response already names its audience (the client id).
    if (body.grant_type !== 'authorization_code' || 'aud' in token.payload) return;
    const authorize = asked.get(body.code) ?? null;
    const resource = body.resource ?? authorize?.resource;
    if (resource) token.payload.aud = resource;
    if (authorize?.scope) token.payload.scope = authorize.scope;
    grants.push({
      authorize,
      token: {
        ...pick(body, ['grant_type', 'client_id', 'redirect_uri', 'resource']),
        pkce: typeof body.code_verifier === 'string',
      },
      claims: pick(token.payload, ['sub', 'aud', 'scope']),
    });
  });
  server.service.on(Events.BeforeResponse, (response, req) => {
    const body = req.body ?? {};
    const scope = asked.get(body.code)?.scope;
    if (body.grant_type === 'authorization_code' && scope && response.statusCode === 200) {
      response.body.scope = scope;
    }
  });
}

const send = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
const apply = (claims) => (_header, payload) => {
  for (const [name, value] of Object.entries(claims ?? {})) {
    if (value === null) delete payload[name];
    else payload[name] = value;
  }
};

server.service.addRoute('POST', '/test/token', async (req, res) => {
  const { kid = 'rsa-1', claims, expires_in: expiresIn, foreign: isForeign, alg } = req.body ?? {};
  const transform = apply(claims);
  if (alg === 'none' || alg === 'HS256') {
    const now = Math.floor(Date.now() / 1000);
    const payload = { iss: server.issuer.url, iat: now, exp: now + (expiresIn ?? 3600), nbf: now - 10 };
    const header = { kid };
    transform(header, payload);
    let token;
    if (alg === 'none') {
      token = new jose.UnsecuredJWT(payload).encode();
    } else {
      const rsa = server.issuer.keys.toJSON().find((k) => k.kid === 'rsa-1');
      const secret = new TextEncoder().encode(rsa.n);
      token = await new jose.SignJWT(payload)
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid })
        .sign(secret);
    }
    send(res, 200, { token });
    return;
  }
  const issuer = isForeign ? foreign : server.issuer;
  if (isForeign) foreign.url = server.issuer.url;
  const token = await issuer.buildToken({ kid, expiresIn, scopesOrTransform: transform });
  send(res, 200, { token });
});

server.service.addRoute('POST', '/test/keys', async (req, res) => {
  const { alg, kid } = req.body ?? {};
  const opts = alg === 'EdDSA' ? { kid, crv: 'Ed25519' } : { kid };
  const jwk = await server.issuer.keys.generate(alg, opts);
  const published = server.issuer.keys.toJSON().find((k) => k.kid === jwk.kid);
  send(res, 200, published);
});

server.service.addRoute('POST', '/test/introspection', (req, res) => {
  introspection = req.body ?? { active: false };
  send(res, 200, {});
});
server.service.addRoute('GET', '/test/introspection', (_req, res) => {
  send(res, 200, lastIntrospection);
});

server.service.addRoute('GET', '/test/grants', (_req, res) => {
  send(res, 200, grants);
});

if (rfc8414) {
  server.service.addRoute('GET', '/.well-known/oauth-authorization-server', (_req, res) => {
    send(res, 200, {
      issuer: server.issuer.url,
      jwks_uri: `${server.issuer.url}/jwks`,
      token_endpoint: `${server.issuer.url}/token`,
      introspection_endpoint: `${server.issuer.url}/introspect`,
    });
  });
}

await server.start(0, '127.0.0.1');
const port = server.address().port;
server.issuer.url = `http://127.0.0.1:${port}`;
process.stdout.write(`${JSON.stringify({ issuer: server.issuer.url })}\n`);

const stop = async () => {
  await server.stop();
  process.exit(0);
};
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.resume();
process.on('SIGTERM', stop);
