/**
 * Password change encryption (User.SetConfig), as the field notes give it: AES-128-GCM without additional
 * data, key = current password zero-padded to 16 bytes, IV = a random string zero-padded to 12 bytes,
 * plaintext = the new password. The tag travels as the digest realm and the IV string as the digest nonce.
 */
import { createCipheriv, createDecipheriv, randomInt } from 'node:crypto';
import { ValidationError } from '../errors';
import { checkPassword } from './rules';

export { MAX_PASSWORD_BYTES, checkPassword } from './rules';

const IV_BYTES = 12;

function padded(text: string, size: number): Buffer {
  const bytes = Buffer.alloc(size);
  Buffer.from(text, 'utf8').copy(bytes);
  return bytes;
}

export interface EncryptedPassword {
  /** base64 ciphertext, sent as config.Password */
  ciphertext: string;
  /** base64 GCM tag, sent as the digest realm */
  tag: string;
  /** the IV string unpadded, sent as the digest nonce */
  nonce: string;
}

/** A random IV string of decimal digits: printable, so it can serve as the digest nonce as it is. */
export function randomIvString(): string {
  let text = '';
  for (let i = 0; i < IV_BYTES; i++) text += String(randomInt(10));
  return text;
}

export function encryptPassword(currentPassword: string, newPassword: string, ivString: string = randomIvString()): EncryptedPassword {
  checkPassword(currentPassword, 'current password');
  checkPassword(newPassword, 'new password');
  if (Buffer.byteLength(ivString, 'utf8') > IV_BYTES) throw new ValidationError('IV string', ivString, `at most ${IV_BYTES} bytes`);
  const cipher = createCipheriv('aes-128-gcm', padded(currentPassword, 16), padded(ivString, IV_BYTES));
  const ciphertext = Buffer.concat([cipher.update(newPassword, 'utf8'), cipher.final()]);
  return { ciphertext: ciphertext.toString('base64'), tag: cipher.getAuthTag().toString('base64'), nonce: ivString };
}

/** The device side: returns the new password, or undefined when the tag does not verify. */
export function decryptPassword(currentPassword: string, encrypted: EncryptedPassword): string | undefined {
  try {
    const decipher = createDecipheriv('aes-128-gcm', padded(currentPassword, 16), padded(encrypted.nonce, IV_BYTES));
    decipher.setAuthTag(Buffer.from(encrypted.tag, 'base64'));
    const plain = Buffer.concat([decipher.update(Buffer.from(encrypted.ciphertext, 'base64')), decipher.final()]);
    return plain.toString('utf8');
  } catch {
    return undefined;
  }
}
