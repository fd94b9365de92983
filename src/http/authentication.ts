/**
 * Who is calling. Clients: `x-api-key` (their API key), `User-Agent`, and `Authorization: Bearer <token>`
 * issued to the same client by POST /auth. Operators: `x-operator-key` equal to OPERATOR_API_KEY, compared in
 * constant time; with no operator key configured, operator routes are closed (403).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import type { ClientDirectory } from '../clients/directory.ts';
import type { TokenSigner } from '../clients/tokens.ts';
import type { ClientView } from '../clients/ports.ts';
import { forbidden, HttpError, unauthorized } from './errors.ts';
import type { Access } from './route.ts';

export interface AuthenticationDeps {
  clients: ClientDirectory;
  tokens: TokenSigner;
  operatorApiKey: string | null;
}

function requireUserAgent(req: Request): void {
  if (!req.get('user-agent')?.trim()) {
    throw new HttpError(400, 'missingParam', 'header User-Agent is required: name the calling application');
  }
}

async function clientOfApiKey(req: Request, deps: AuthenticationDeps, beforeVerifying?: () => void): Promise<ClientView> {
  const apiKey = req.get('x-api-key');
  if (!apiKey) throw unauthorized('header x-api-key is required');
  const client = await deps.clients.byApiKey(apiKey, beforeVerifying);
  if (!client) throw unauthorized('x-api-key is not valid');
  return client;
}

function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * Sets `req.caller` or throws 400/401/403. `beforeVerifying` runs before an API key's slow verification (a
 * key not verified recently) and may refuse the request by throwing. Provider routes are authenticated later,
 * by their signature, once the body is validated (see the router).
 */
export async function authenticate(req: Request, access: Access, deps: AuthenticationDeps, beforeVerifying?: () => void): Promise<void> {
  switch (access) {
    case 'public':
    case 'provider':
      return;
    case 'operator': {
      if (!deps.operatorApiKey) throw forbidden('operator routes are disabled: OPERATOR_API_KEY is not set');
      const given = req.get('x-operator-key');
      if (!given) throw unauthorized('header x-operator-key is required');
      if (!sameSecret(given, deps.operatorApiKey)) throw unauthorized('x-operator-key is not valid');
      req.caller = { kind: 'operator' };
      return;
    }
    case 'apiKey': {
      const client = await clientOfApiKey(req, deps, beforeVerifying);
      req.caller = { kind: 'client', clientId: client.client_id };
      return;
    }
    case 'client': {
      requireUserAgent(req);
      const client = await clientOfApiKey(req, deps, beforeVerifying);
      const header = req.get('authorization');
      const match = header ? /^Bearer ([A-Za-z0-9_\-.]+)$/.exec(header) : null;
      if (!match) throw unauthorized('header Authorization: Bearer <token> is required');
      const claims = deps.tokens.verify(match[1]!);
      if (!claims) throw unauthorized('the bearer token is invalid or expired');
      if (claims.sub !== client.client_id) throw unauthorized('the bearer token was not issued to this API key’s client');
      req.caller = { kind: 'client', clientId: client.client_id };
      return;
    }
  }
}
