/**
 * What the set-password node does, without Node-RED: where the new password comes from (the node's credential or
 * msg.payload, which it leaves before anything can fail) and the check that names that source.
 */
import { ValidationError } from '../errors';
import { checkPassword, MAX_PASSWORD_BYTES } from '../device/password-crypto';
import { describeInputs, oneOf } from '../editor/inputs';

/** Where the new password comes from: the node's credential or msg.payload. */
const passwordInputs = describeInputs({
  source: { setting: 'source', fallback: 'field', parse: oneOf(['field', 'payload'] as const) },
});

export class PasswordSource {
  readonly configError: Error | undefined;
  /** An unknown source strips msg.payload too: it may hold a password. */
  readonly fromPayload: boolean;

  constructor(def: { source?: unknown }) {
    const deployed = passwordInputs.deploy(def);
    this.configError = deployed.error;
    this.fromPayload = deployed.values.source !== 'field';
  }

  /** The candidate, taken out of `msg` where it comes from the payload (a Catch node gets a copy of the msg). */
  take(msg: { payload?: unknown }, credential: string | undefined): unknown {
    const candidate: unknown = this.fromPayload ? msg.payload : credential;
    if (this.fromPayload) delete msg.payload;
    return candidate;
  }

  /** The new password, checked here as well as in the client so that the error names where it came from. */
  check(candidate: unknown): string {
    if (this.configError) throw this.configError;
    const field = this.fromPayload ? 'new password (msg.payload)' : 'new password';
    if (candidate !== undefined && typeof candidate !== 'string') {
      throw new ValidationError(field, `(${typeof candidate})`, `a text of 1 to ${MAX_PASSWORD_BYTES} bytes`);
    }
    checkPassword(candidate, field);
    return candidate;
  }
}
