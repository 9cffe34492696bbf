/**
 * Authorization headers for the device's two modes. HTTP + Digest headers come from digest-fetch: the device
 * checks the digest against the realm and nonce the client itself puts in its header (field notes), so the client
 * writes that challenge, lets digest-fetch parse it, and sends the header pre-emptively in one round trip. A real
 * `WWW-Authenticate` challenge goes through the same digest-fetch calls.
 */
import { randomBytes } from 'node:crypto';
import type { DigestClient } from 'digest-fetch' with { 'resolution-mode': 'import' };

/** HTTP + Digest (the specification's mode) or none (the maker's HTTP mode, which other integrations use). */
export type AuthMode = 'digest' | 'none';

export const AUTH_MODES: readonly AuthMode[] = ['digest', 'none'];

export interface DigestSeed {
  realm: string;
  nonce: string;
  /** The vendor's worked example sends an empty opaque. */
  opaque?: string;
}

/** The nonce the client puts in its own challenge (the device takes any; fresh per request as a server's would be). */
export function clientNonce(): string {
  return randomBytes(8).toString('hex');
}

export interface DigestRequest {
  username: string;
  password: string;
  method: 'GET' | 'POST';
  /** The request target exactly as sent (path plus encoded query): the digest `uri`. */
  target: string;
}

type DigestClientClass = typeof DigestClient;

/** A load done once when it succeeds; a failed one is tried again on the next call, not remembered. */
export class RetriedLoad<T> {
  private loading: Promise<T> | undefined;

  constructor(private readonly load: () => Promise<T>) {}

  get(): Promise<T> {
    this.loading ??= this.load().catch((error: unknown) => {
      this.loading = undefined;
      throw error;
    });
    return this.loading;
  }
}

/**
 * digest-fetch is an ES module; a real dynamic import (tsconfig module node16 keeps it one) loads it from this
 * CommonJS package on every Node version `engines` admits. Loaded on the first digest request.
 */
const digestClient = new RetriedLoad<DigestClientClass>(() => import('digest-fetch').then((module) => module.DigestClient));

const quote = (value: string) => `"${value}"`;

/** The challenge the device would send, with the client's own realm and nonce. */
function ownChallenge(seed: DigestSeed): string {
  const fields = [`realm=${quote(seed.realm)}`, `nonce=${quote(seed.nonce)}`, 'qop="auth"', 'algorithm=MD5'];
  if (seed.opaque !== undefined) fields.push(`opaque=${quote(seed.opaque)}`);
  return `Digest ${fields.join(', ')}`;
}

/** The Authorization header answering `challenge` (a `WWW-Authenticate` value) for this request. */
export async function answerChallenge(request: DigestRequest, challenge: string): Promise<string> {
  const Client = await digestClient.get();
  const client = new Client(request.username, request.password, { algorithm: 'MD5' });
  client.parseAuth(challenge);
  if (!client.hasAuth) throw new Error('not a digest challenge');
  const options = client.addAuth(request.target, { method: request.method }) as { headers: { Authorization: string } };
  return options.headers.Authorization;
}

/** The pre-emptive Authorization header: the client picks realm and nonce, the device checks against them. */
export function digestAuthorization(request: DigestRequest, seed: DigestSeed): Promise<string> {
  return answerChallenge(request, ownChallenge(seed));
}

/** Realm and nonce chars that would break the quoted header (digest-fetch does not escape). */
export function isHeaderSafe(text: string): boolean {
  return !/["\\\r\n]/.test(text);
}
