/**
 * Rules of the client and the password change that need nothing of Node.js, so that the editor's browser build
 * (src/editor/editor-rules.ts) runs them as they are; src/device/client.ts and src/device/password-crypto.ts export them as before.
 */
import { ValidationError } from '../errors';

export const NAMESPACE_PATTERN = /^[A-Za-z][A-Za-z0-9_]*$/;

/** What the client takes for a number setting left empty (the editor shows them). */
export const NUMBER_DEFAULTS = { port: 8080, minIntervalMs: 1000, timeoutMs: 10000 } as const;

/** The specification's minimum request interval; the client never goes below it. */
export const MIN_INTERVAL_FLOOR_MS = 1000;

/** A device password is an AES-128 key: at most 16 bytes of UTF-8. */
export const MAX_PASSWORD_BYTES = 16;

/** Throws unless the password can serve as an AES-128 key: 1 to 16 bytes of UTF-8. */
export function checkPassword(password: unknown, field: string): asserts password is string {
  const allowed = `a text of 1 to ${MAX_PASSWORD_BYTES} bytes`;
  // The value itself is never put in the error: it is a password.
  if (typeof password !== 'string' || password.length === 0) throw new ValidationError(field, '(empty)', allowed);
  const length = new TextEncoder().encode(password).length;
  if (length > MAX_PASSWORD_BYTES) throw new ValidationError(field, `(${length} bytes)`, allowed);
}

/** Data-operation namespaces tried in order when none is configured: the specification's, then the maker's. */
export const NAMESPACES = ['Vendor', 'Indevolt'] as const;

/** A configured namespace, trimmed; empty (or none) gives undefined: detect it. */
export function checkNamespace(value: unknown, field = 'namespace'): string | undefined {
  if (value === undefined || value === null) return undefined;
  const namespace = typeof value === 'string' ? value.trim() : value;
  if (namespace === '') return undefined;
  if (typeof namespace !== 'string' || !NAMESPACE_PATTERN.test(namespace)) {
    throw new ValidationError(field, value, `empty (detect ${NAMESPACES.join(' or ')}) or a name of letters, digits and underscores`);
  }
  return namespace;
}

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);
/** An IPv6 zone (RFC 6874's unreserved characters), e.g. the interface of a link-local address. */
const ZONE = /^[A-Za-z0-9_.~-]+$/;
/** A host name's label: letters, digits, hyphens inside, and underscores (which resolvers take). */
const LABEL = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;

export function isIPv4(text: string): boolean {
  return IPV4.test(text);
}

/** The longest IPv6 address: six groups of four hex digits and a dotted IPv4 address. */
const MAX_IPV6_LENGTH = 45;
/** The longest host: a name of 253 characters and the root's trailing dot (every address is shorter). */
const MAX_HOST_LENGTH = 254;

/** An IPv6 address without zone: eight groups, or fewer around one `::`, the last two may be a dotted IPv4 address. */
export function isIPv6(text: string): boolean {
  if (text.length > MAX_IPV6_LENGTH) return false;
  // After the last colon a dot makes a dotted IPv4 address (found by index: a pattern for it backtracked quadratically).
  const lastColon = text.lastIndexOf(':');
  const dotted = lastColon >= 0 && text.includes('.', lastColon);
  if (dotted && !isIPv4(text.slice(lastColon + 1))) return false;
  const groups = dotted ? `${text.slice(0, lastColon)}:0:0` : text;
  const halves = groups.split('::');
  if (halves.length > 2) return false;
  const parts = halves.flatMap((half) => (half === '' ? [] : half.split(':')));
  if (!parts.every((group) => /^[0-9A-Fa-f]{1,4}$/.test(group))) return false;
  return halves.length === 2 ? parts.length <= 7 : parts.length === 8;
}

/** A host name: dot-separated labels, a trailing dot allowed, the last label not all digits (that is an address). */
function isHostName(text: string): boolean {
  const name = text.endsWith('.') ? text.slice(0, -1) : text;
  const labels = name.split('.');
  return name.length <= 253 && labels.every((label) => LABEL.test(label)) && !/^\d+$/.test(labels[labels.length - 1]!);
}

export const HOST_ALLOWED = 'an IPv4 or IPv6 address or a host name, without a port (the port has its own setting)';

/**
 * The device's host as node:http takes it: an IPv4 address, an IPv6 address (also in brackets, with a zone such as
 * `%eth0`) or a host name, trimmed. `192.168.1.5:8080` is refused here rather than at the first request.
 */
export function checkHost(value: unknown, field = 'host'): string {
  const text = typeof value === 'string' ? value.trim() : '';
  if (text.length > MAX_HOST_LENGTH) throw new ValidationError(field, value, HOST_ALLOWED);
  const bare = /^\[(.*)\]$/.exec(text)?.[1];
  const [address = '', zone] = (bare ?? text).split('%', 2) as [string, string | undefined];
  const v6 = isIPv6(address) && (zone === undefined || ZONE.test(zone)) && (bare ?? text).split('%').length <= 2;
  if (v6 || (bare === undefined && (isIPv4(text) || isHostName(text)))) return bare ?? text;
  throw new ValidationError(field, value, HOST_ALLOWED);
}
