/**
 * HTTP Digest (RFC 7616 with MD5 and qop=auth) as the device checks it: the simulator's side. The client's
 * headers come from digest-fetch (src/device/auth.ts).
 */
import { createHash, randomBytes } from 'node:crypto';

export interface DigestParams {
  username: string;
  password: string;
  method: string;
  /** The request target exactly as sent: path plus encoded query. */
  uri: string;
  realm: string;
  nonce: string;
  cnonce?: string;
  nc?: string;
  opaque?: string;
}

const md5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex');

export function digestResponse(p: Required<Omit<DigestParams, 'opaque'>>): string {
  const ha1 = md5(`${p.username}:${p.realm}:${p.password}`);
  const ha2 = md5(`${p.method}:${p.uri}`);
  return md5(`${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:auth:${ha2}`);
}

/** Parses the parameters of a `Digest` Authorization or WWW-Authenticate header. */
export function parseDigestHeader(header: string | undefined): Record<string, string> | undefined {
  if (!header) return undefined;
  const match = /^\s*Digest\s+(.*)$/is.exec(header);
  if (!match) return undefined;
  const fields: Record<string, string> = {};
  const pattern = /([a-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/gi;
  let field: RegExpExecArray | null;
  while ((field = pattern.exec(match[1] ?? '')) !== null) {
    const [, name = '', quoted, bare = ''] = field;
    fields[name.toLowerCase()] = quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : bare;
  }
  return fields;
}

/** A fresh nonce: the simulator's challenges and the client's own pre-emptive digest headers. */
export function randomNonce(): string {
  return randomBytes(8).toString('hex');
}
