/**
 * The device client: the four HTTP operations of the local API behind one per-device scheduler.
 * Knows nothing of Node-RED.
 */
import { EventEmitter } from 'node:events';
import {
  MAX_ADDRESSES_PER_READ,
  REAL_TIME,
  decodeValue,
  resolveWritePoint,
  validateWrite,
  isValidAddress,
  type WritePoint,
} from './catalogue';
import { buildAuthorization, parseDigestHeader, randomNonce } from './digest';
import {
  BadResponseError,
  DeviceError,
  HttpStatusError,
  RefusedError,
  UnauthorizedError,
  ValidationError,
} from './errors';
import { checkPassword, encryptPassword } from './password-crypto';
import { RequestScheduler, deviceLine, type RequestContext, type WriteStatus } from './scheduler';
import { exchange, type HttpAnswer } from './transport';

export const DEFAULTS = {
  port: 8080,
  username: 'opend',
  namespace: 'Vendor',
  minIntervalMs: 1000,
  timeoutMs: 10000,
  maxQueue: 1000,
} as const;

/** The specification's minimum request interval; the client never goes below it. */
export const MIN_INTERVAL_FLOOR_MS = 1000;

export interface ClientOptions {
  host: string;
  port?: number;
  username?: string;
  password: string;
  /** Name of the data-operation namespace: firmware builds name it after their maker. */
  namespace?: string;
  minIntervalMs?: number;
  timeoutMs?: number;
  maxQueue?: number;
}

export type ConnectionState = 'unknown' | 'ok' | 'unauthorized' | 'default-password' | 'unreachable' | 'error';

export interface ReadResult {
  /** Decoded values by address (numeric strings of numeric points become numbers). */
  values: Map<number, number | string>;
  /** Requested addresses the device left out: the model does not support them. */
  missing: number[];
}

export interface WriteResult {
  status: WriteStatus;
  point: string;
  address: number;
  values: number[];
}

export interface DeviceInfo {
  hostname?: string;
  timezone?: number;
  type?: string;
  sn?: string;
  mac?: string;
  fw?: string;
  f_ver?: string;
  p_ver?: string;
  time?: string;
  time_stamp?: number;
  run_time?: number;
  [member: string]: unknown;
}

/** Realm for operations other than User.SetConfig: the device accepts any value there. */
const CLIENT_REALM = 'opend';

interface Call {
  operation: string;
  method: 'GET' | 'POST';
  config?: unknown;
  /** Digest realm and nonce fixed by the operation (User.SetConfig); otherwise chosen per request. */
  realm?: string;
  nonce?: string;
}

export class DeviceClient extends EventEmitter {
  readonly host: string;
  readonly port: number;
  readonly namespace: string;
  readonly minIntervalMs: number;
  readonly timeoutMs: number;
  private username: string;
  private password: string;
  private readonly scheduler: RequestScheduler;
  private authorizedOnce = false;
  private currentState: ConnectionState = 'unknown';

  constructor(options: ClientOptions) {
    super();
    if (!options.host || typeof options.host !== 'string') throw new ValidationError('host', options.host, 'an IP address or host name');
    // An IPv6 address may come as in a URL ([::1]); node:http wants it bare.
    this.host = options.host.trim().replace(/^\[(.*)\]$/, '$1');
    this.port = options.port ?? DEFAULTS.port;
    if (!Number.isInteger(this.port) || this.port < 1 || this.port > 65535) {
      throw new ValidationError('port', options.port, 'an integer from 1 to 65535');
    }
    this.username = options.username || DEFAULTS.username;
    this.password = options.password ?? '';
    this.namespace = options.namespace || DEFAULTS.namespace;
    if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(this.namespace)) {
      throw new ValidationError('namespace', this.namespace, 'a name of letters, digits and underscores, e.g. Vendor');
    }
    this.minIntervalMs = options.minIntervalMs ?? DEFAULTS.minIntervalMs;
    if (!Number.isFinite(this.minIntervalMs) || this.minIntervalMs < MIN_INTERVAL_FLOOR_MS) {
      throw new ValidationError('minimum interval', options.minIntervalMs, `at least ${MIN_INTERVAL_FLOOR_MS} ms`);
    }
    this.timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
    if (!Number.isFinite(this.timeoutMs) || this.timeoutMs < 100 || this.timeoutMs > 120000) {
      throw new ValidationError('time-out', options.timeoutMs, 'from 100 to 120000 ms');
    }
    this.scheduler = new RequestScheduler({
      minIntervalMs: this.minIntervalMs,
      line: deviceLine(this.host, this.port),
      maxQueue: options.maxQueue ?? DEFAULTS.maxQueue,
      maxAddressesPerRead: MAX_ADDRESSES_PER_READ,
      readBatch: (addresses, context) => this.getData(addresses, context),
      write: (address, values, context) => this.setData(address, values, context),
    });
  }

  /** Last known connection state: 'ok' after a success, otherwise what the last failure says. */
  get state(): ConnectionState {
    return this.currentState;
  }

  /** Requests sent to the device so far. */
  get requestCount(): number {
    return this.scheduler.requestCount;
  }

  /** Operations waiting in the queue. */
  get queueSize(): number {
    return this.scheduler.size;
  }

  /** New credentials for the requests that follow (e.g. after a password change elsewhere). */
  setCredentials(username: string | undefined, password: string): void {
    this.username = username || DEFAULTS.username;
    this.password = password;
    this.authorizedOnce = false;
  }

  /** Reads point addresses; merged with other waiting reads, split into requests of at most 50. */
  async read(addresses: readonly number[]): Promise<ReadResult> {
    if (!Array.isArray(addresses) || addresses.length === 0) {
      throw new ValidationError('addresses', addresses, 'a non-empty list of point addresses');
    }
    for (const address of addresses) {
      if (!isValidAddress(address)) throw new ValidationError('address', address, 'an integer from 0 to 65535');
    }
    const outcome = await this.scheduler.read([...new Set(addresses)]);
    const values = new Map<number, number | string>();
    const missing = [...outcome.missing];
    for (const [address, raw] of outcome.values) {
      const value = decodeValue(address, raw);
      if (value === undefined) missing.push(address);
      else values.set(address, value);
    }
    return { values, missing };
  }

  /**
   * Writes one point after checking the value(s) against the catalogue; nothing invalid is sent.
   * `controlState` (47015) also takes [state, power, SOC] in one request.
   */
  async write(point: string | number | WritePoint, values: unknown): Promise<WriteResult> {
    const target = typeof point === 'object' ? point : resolveWritePoint(point);
    const checked = validateWrite(target, values);
    const status = await this.scheduler.write(target.address, checked);
    return { status, point: target.name, address: target.address, values: checked };
  }

  /** The real-time control write: state (0 standby, 1 charge, 2 discharge), power in W, target SOC in %. */
  setRealTime(state: number, power: number, soc: number): Promise<WriteResult> {
    return this.write(REAL_TIME.stateAddress, [state, power, soc]);
  }

  getDeviceInfo(): Promise<DeviceInfo> {
    return this.scheduler.command(async (context) => {
      const body = await this.call({ operation: 'Sys.GetConfig', method: 'GET' }, context);
      const device = (body as { device?: unknown }).device;
      if (!device || typeof device !== 'object') throw new BadResponseError('Sys.GetConfig', 'no device object');
      return device as DeviceInfo;
    });
  }

  /**
   * Changes the device password (User.SetConfig) from the current one to `newPassword`. On success the
   * client uses the new password for everything that follows.
   */
  async changePassword(newPassword: string): Promise<void> {
    checkPassword(newPassword, 'new password');
    checkPassword(this.password, 'current password');
    return this.scheduler.command(async (context) => {
      const encrypted = encryptPassword(this.password, newPassword);
      const body = await this.call(
        { operation: 'User.SetConfig', method: 'POST', config: { Password: encrypted.ciphertext }, realm: encrypted.tag, nonce: encrypted.nonce },
        context,
      );
      if ((body as { result?: unknown }).result !== true) throw new RefusedError('the password change', 'the current password may be wrong');
      this.password = newPassword;
      this.authorizedOnce = true;
    });
  }

  /** Rejects whatever waits, aborts what is in flight and stops every timer. */
  close(): void {
    this.scheduler.close();
    this.removeAllListeners();
  }

  private async getData(addresses: number[], context: RequestContext): Promise<Record<string, unknown>> {
    const operation = `${this.namespace}.GetData`;
    const body = await this.call({ operation, method: 'POST', config: { t: addresses } }, context);
    if (Array.isArray(body)) throw new BadResponseError(operation, 'an array instead of an object');
    return body as Record<string, unknown>;
  }

  private async setData(address: number, values: number[], context: RequestContext): Promise<void> {
    const operation = `${this.namespace}.SetData`;
    const body = await this.call({ operation, method: 'POST', config: { f: 16, t: address, v: values } }, context);
    const result = (body as { result?: unknown }).result;
    if (result === true) return;
    const detail = `write of ${JSON.stringify(values)} to address ${address}`;
    if (result === false) {
      const hint = address >= REAL_TIME.stateAddress && address <= REAL_TIME.socAddress ? ' (is the working mode real-time control?)' : '';
      throw new RefusedError(detail + hint, '', address, values);
    }
    throw new BadResponseError(operation, `no result in ${JSON.stringify(body).slice(0, 200)}`);
  }

  /** One operation: a pre-emptive digest request, and once more if the device answers with a challenge. */
  private async call(call: Call, context: RequestContext): Promise<unknown> {
    try {
      const target = `/rpc/${call.operation}` + (call.config === undefined ? '' : `?config=${encodeURIComponent(JSON.stringify(call.config))}`);
      // An empty opaque, as in the vendor's own worked example (field notes).
      let answer = await this.send(call, target, { realm: call.realm ?? CLIENT_REALM, nonce: call.nonce ?? randomNonce(), opaque: '' }, context);
      const challenge = answer.status === 401 && call.realm === undefined ? parseDigestHeader(String(answer.headers['www-authenticate'] ?? '')) : undefined;
      if (challenge?.nonce !== undefined) {
        answer = await this.send(call, target, { realm: challenge.realm ?? CLIENT_REALM, nonce: challenge.nonce, opaque: challenge.opaque }, context);
      }
      const body = this.interpret(call.operation, answer);
      this.authorizedOnce = true;
      this.setState('ok');
      return body;
    } catch (error) {
      const state = stateOf(error);
      if (state) this.setState(state, error as Error);
      throw error;
    }
  }

  private async send(call: Call, target: string, digest: { realm: string; nonce: string; opaque?: string }, context: RequestContext): Promise<HttpAnswer> {
    await context.gate();
    const authorization = buildAuthorization({ username: this.username, password: this.password, method: call.method, uri: target, ...digest });
    return exchange({
      host: this.host,
      port: this.port,
      method: call.method,
      target,
      headers: { Authorization: authorization },
      timeoutMs: this.timeoutMs,
      operation: call.operation,
      signal: context.signal,
      onConnected: context.connected,
    });
  }

  private interpret(operation: string, answer: HttpAnswer): unknown {
    if (answer.status === 401) {
      throw new UnauthorizedError(operation === 'User.SetConfig' ? 'wrong-current-password' : this.authorizedOnce ? 'no-longer-accepted' : 'wrong-or-default');
    }
    if (answer.status !== 200) throw new HttpStatusError(operation, answer.status);
    let body: unknown;
    try {
      body = JSON.parse(answer.body);
    } catch {
      throw new BadResponseError(operation, `not JSON: ${JSON.stringify(answer.body.slice(0, 80))}`);
    }
    if (!body || typeof body !== 'object') throw new BadResponseError(operation, `not a JSON object: ${answer.body.slice(0, 80)}`);
    return body;
  }

  private setState(state: ConnectionState, error?: Error): void {
    if (state === this.currentState && state === 'ok') return;
    this.currentState = state;
    this.emit('state', state, error);
  }
}

function stateOf(error: unknown): ConnectionState | undefined {
  if (error instanceof UnauthorizedError) return error.mayBeDefaultPassword ? 'default-password' : 'unauthorized';
  if (error instanceof DeviceError) {
    if (error.code === 'TIMEOUT' || error.code === 'UNREACHABLE') return 'unreachable';
    // Closing says nothing about the device.
    if (error.code === 'CLOSED') return undefined;
  }
  return 'error';
}
