/**
 * Rules of the client and the password change that need nothing of Node.js, so that the editor's browser build
 * (src/editor/editor-rules.ts) runs them as they are; src/device/client.ts and src/device/password-crypto.ts export them as before.
 */
import { ValidationError } from '../errors';

export const NAMESPACE_PATTERN = /^[A-Za-z][A-Za-z0-9_]*$/;

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
