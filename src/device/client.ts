/**
 * The device client: the four HTTP operations of the local API with one configuration's credentials, run through
 * the device's one queue (src/device/scheduler.ts). Flow nodes each open a session on it, so that closing a node drops
 * that node's waiting work. Knows nothing of Node-RED.
 */
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  MAX_ADDRESSES_PER_READ,
  MODEL_CLASSES,
  MODEL_READ_POINTS,
  POWER_LIMIT,
  REAL_TIME,
  decodeValue,
  modelClassOf,
  REPORTED_LIMIT_ADDRESSES,
  modelsTakingText,
  servingAddresses,
  resolveWritePoint,
  validatePowerLimit,
  validateWrite,
  isValidAddress,
  writePointByAddress,
  type ModelClass,
  type PowerLimits,
  type WritePoint,
} from '../points/catalogue';
import { AUTH_MODES, answerChallenge, clientNonce, digestAuthorization, isHeaderSafe, type AuthMode, type DigestSeed } from './auth';
import type { DeviceState } from './device-state';
import {
  BadResponseError,
  ClientClosedError,
  DeviceError,
  HttpStatusError,
  RefusedError,
  UnauthorizedError,
  UnreachableError,
  ValidationError,
} from '../errors';
import { plainMembers } from '../numbers';
import { checkPassword, encryptPassword } from './password-crypto';
import { MIN_INTERVAL_FLOOR_MS, NAMESPACES, NUMBER_DEFAULTS, checkHost, checkNamespace } from './rules';
import { canonicalAddress, canonicalHost, resolveAddress } from './address';
import {
  DeviceQueue,
  deviceQueue,
  type JobOptions,
  type KnownValue,
  type QueueMember,
  type RequestContext,
  type WriteStatus,
} from './scheduler';
import { exchange, type HttpAnswer } from './transport';

export const DEFAULTS = {
  ...NUMBER_DEFAULTS,
  username: 'opend',
  auth: 'digest' as AuthMode,
  /** Empty: detect, trying NAMESPACES in order. */
  namespace: '',
  maxQueue: 1000,
} as const;

export { NAMESPACE_PATTERN, MIN_INTERVAL_FLOOR_MS, NAMESPACES } from './rules';

export interface ClientOptions {
  host: string;
  port?: number;
  username?: string;
  /** Not used with auth 'none'. */
  password?: string;
  /** 'digest' (HTTP + Digest, the specification's) or 'none' (the maker's HTTP mode). */
  auth?: AuthMode;
  /** Name of the data-operation namespace (`Vendor`, `Indevolt`); empty: detect it on the first data request. */
  namespace?: string;
  minIntervalMs?: number;
  timeoutMs?: number;
  maxQueue?: number;
  /** Largest power of a charge in W (POWER_LIMIT): the specification's 2400 W unless the model differs. */
  chargeLimit?: number;
  /** Largest power of a discharge in W (POWER_LIMIT); the 1600 class: 800 W. */
  dischargeLimit?: number;
}

export type ConnectionState = 'unknown' | 'ok' | 'unauthorized' | 'default-password' | 'digest-required' | 'unreachable' | 'error';

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

/** What Test connection found out. */
export interface ConnectionReport {
  auth: AuthMode;
  /** The namespace that answered this test's read; `detected` when it was not configured. */
  namespace: string;
  detected: boolean;
  device: DeviceInfo;
  /** The maximum charge and discharge power the device reports (points 114 and 115), where it does: a suggestion for the limits. */
  reported: Partial<PowerLimits>;
  /** The model class, told by the meter point the device serves (see modelClassOf), with what that class takes. */
  model?: { modelClass: ModelClass; label: string } & PowerLimits;
}

/** The addresses that tell the model class (the meter points of gridPower), read with the serial number in Test connection. */
const MODEL_PROBE = MODEL_READ_POINTS.flatMap(servingAddresses);

/** The points that report the device's own limits, read with the serial number in Test connection. */

/** A value of 114 or 115 that could serve as a limit, else undefined. */
function asLimit(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= POWER_LIMIT.min && value <= POWER_LIMIT.max ? value : undefined;
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

/** Who a job belongs to, and a call when its request is about to go out. */
export type OperationOptions = Omit<JobOptions, 'owner'>;

/** The operations a flow node uses: a client, or a session on one. */
export interface DeviceOperations {
  /** The charge and discharge limits every write is checked against. */
  readonly limits: PowerLimits;
  read(addresses: readonly number[], options?: OperationOptions): Promise<ReadResult>;
  write(point: string | number | WritePoint, values: unknown, options?: OperationOptions): Promise<WriteResult>;
  setRealTime(state: number, power: number, soc: number, options?: OperationOptions): Promise<WriteResult>;
  getDeviceInfo(options?: OperationOptions): Promise<DeviceInfo>;
  changePassword(newPassword: string, options?: OperationOptions): Promise<void>;
  /** The last value read from or accepted at `address` by anyone in this process, if not older than `maxAgeMs`. */
  knownValue(address: number, maxAgeMs?: number): KnownValue | undefined;
  /** What this process knows of the device (shared by every client of it). */
  readonly deviceState: DeviceState;
}

export class DeviceClient extends EventEmitter implements QueueMember, DeviceOperations {
  readonly host: string;
  readonly port: number;
  readonly auth: AuthMode;
  /** The configured namespace; undefined: detect. */
  readonly configuredNamespace: string | undefined;
  readonly minIntervalMs: number;
  readonly timeoutMs: number;
  /** The charge and discharge limits the configuration sets; one left empty is the specification's, as reported. */
  private readonly configuredLimits: Partial<PowerLimits>;
  readonly maxQueue: number;
  readonly maxAddressesPerRead = MAX_ADDRESSES_PER_READ;
  private readonly username: string;
  private password: string;
  /** The device's queue; for a host name, until the name is resolved, a stand-in that no request goes through. */
  private queue: DeviceQueue;
  /** `address:port` of the device once known (at once for an address, after the first lookup for a host name). */
  private device: string | undefined;
  private joining: Promise<DeviceQueue> | undefined;
  /** Owners (sessions) closed while their work waited for the host name's lookup. */
  private readonly closedOwners = new WeakSet<object>();
  /** Computed once, and again when the password changes: the queue asks for it on every merge. */
  private credentialsKey: string;
  private closed = false;
  private authorizedOnce = false;
  private currentState: ConnectionState = 'unknown';

  constructor(options: ClientOptions) {
    super();
    // An IPv6 address may come as in a URL ([::1]); node:http wants it bare. One spelling of each address and name.
    const host = checkHost(options.host);
    const address = canonicalAddress(host);
    this.host = address ?? canonicalHost(host);
    this.port = options.port ?? DEFAULTS.port;
    if (!Number.isInteger(this.port) || this.port < 1 || this.port > 65535) {
      throw new ValidationError('port', options.port, 'an integer from 1 to 65535');
    }
    this.username = options.username || DEFAULTS.username;
    if (!isHeaderSafe(this.username))
      throw new ValidationError('username', this.username, 'a name without quotes, backslashes or line breaks');
    this.password = options.password ?? '';
    this.auth = options.auth ?? DEFAULTS.auth;
    if (!AUTH_MODES.includes(this.auth)) throw new ValidationError('authentication', options.auth, `one of ${AUTH_MODES.join(', ')}`);
    this.configuredNamespace = checkNamespace(options.namespace);
    this.minIntervalMs = options.minIntervalMs ?? DEFAULTS.minIntervalMs;
    if (!Number.isFinite(this.minIntervalMs) || this.minIntervalMs < MIN_INTERVAL_FLOOR_MS) {
      throw new ValidationError('minimum interval', options.minIntervalMs, `at least ${MIN_INTERVAL_FLOOR_MS} ms`);
    }
    this.timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
    if (!Number.isFinite(this.timeoutMs) || this.timeoutMs < 100 || this.timeoutMs > 120000) {
      throw new ValidationError('time-out', options.timeoutMs, 'from 100 to 120000 ms');
    }
    this.configuredLimits = {
      chargeLimit: options.chargeLimit === undefined ? undefined : validatePowerLimit(options.chargeLimit, 'charge limit'),
      dischargeLimit: options.dischargeLimit === undefined ? undefined : validatePowerLimit(options.dischargeLimit, 'discharge limit'),
    };
    this.maxQueue = options.maxQueue ?? DEFAULTS.maxQueue;
    this.credentialsKey = this.keyOfCredentials();
    this.queue = new DeviceQueue();
    if (address !== undefined) this.joinQueue(address);
  }

  /**
   * `address:port` of the device this client reaches (one queue per device address, whatever the host's spelling),
   * or undefined while a host name waits for its first lookup; 'device' is emitted with it when it becomes known.
   */
  get deviceAddress(): string | undefined {
    return this.device;
  }

  private joinQueue(address: string): DeviceQueue {
    this.queue = deviceQueue(address, this.port);
    this.queue.attach(this);
    this.device = `${address.includes(':') ? `[${address}]` : address}:${this.port}`;
    this.emit('device', this.device);
    return this.queue;
  }

  /**
   * Runs `use` on the device's queue: at once when the address is known, else after the host name's lookup (again
   * after a failed one), so that every spelling of one device shares its queue.
   */
  private onQueue<T>(options: JobOptions, use: (queue: DeviceQueue) => Promise<T>): Promise<T> {
    if (this.device !== undefined) return use(this.queue);
    this.joining ??= resolveAddress(this.host).then(
      (address) => (this.closed ? this.queue : this.joinQueue(address)),
      (error: NodeJS.ErrnoException) => {
        this.joining = undefined;
        const unreachable = new UnreachableError(`${this.host}:${this.port}`, error);
        this.setState('unreachable', unreachable);
        throw unreachable;
      },
    );
    return this.joining.then((queue) => {
      if (this.closed || (options.owner !== undefined && this.closedOwners.has(options.owner))) throw new ClientClosedError();
      return use(queue);
    });
  }

  /**
   * Reads of clients with the same key share requests (a digest of the credentials, never the password itself). It
   * follows a password change.
   */
  get mergeKey(): string {
    return this.credentialsKey;
  }

  private keyOfCredentials(): string {
    return createHash('sha256')
      .update(JSON.stringify([this.auth, this.username, this.auth === 'digest' ? this.password : '', this.configuredNamespace ?? '']))
      .digest('hex');
  }

  /** What this process knows of the device, shared by every client of it. */
  get deviceState(): DeviceState {
    return this.queue.state;
  }

  /** Last known connection state: 'ok' after a success, otherwise what the last failure says. */
  get state(): ConnectionState {
    return this.currentState;
  }

  /**
   * The namespace in use: the configured one, or the one detected for the device by any client of this process
   * (undefined until a data request detects it).
   */
  get namespace(): string | undefined {
    return this.configuredNamespace ?? this.queue.state.namespace;
  }

  /** Requests sent to the device so far, by every client of this process. */
  get requestCount(): number {
    return this.queue.requestCount;
  }

  /** Operations waiting for the device, of every client of this process. */
  get queueSize(): number {
    return this.queue.size;
  }

  /** A handle for one user (a flow node): closing it drops what that user still has waiting, and nothing else. */
  session(): ClientSession {
    return new ClientSession(this);
  }

  knownValue(address: number, maxAgeMs?: number): KnownValue | undefined {
    return this.queue.knownValue(address, maxAgeMs);
  }

  /** Reads point addresses; merged with other waiting reads, split into requests of at most 50. */
  async read(addresses: readonly number[], options: JobOptions = {}): Promise<ReadResult> {
    if (!Array.isArray(addresses) || addresses.length === 0) {
      throw new ValidationError('addresses', addresses, 'a non-empty list of point addresses');
    }
    for (const address of addresses) {
      if (!isValidAddress(address)) throw new ValidationError('address', address, 'an integer from 0 to 65535');
    }
    const outcome = await this.onQueue(options, (queue) => queue.read(this, [...new Set(addresses)], options));
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
  async write(point: string | number | WritePoint, values: unknown, options: JobOptions = {}): Promise<WriteResult> {
    const target = typeof point === 'object' ? point : resolveWritePoint(point);
    const checked = validateWrite(target, values, this.limits);
    const status = await this.onQueue(options, (queue) => queue.write(this, target.address, checked, options));
    return { status, point: target.name, address: target.address, values: checked };
  }

  /** The real-time control write: state (0 standby, 1 charge, 2 discharge), power in W, target SOC in %. */
  setRealTime(state: number, power: number, soc: number, options: JobOptions = {}): Promise<WriteResult> {
    return this.write(REAL_TIME.stateAddress, [state, power, soc], options);
  }

  getDeviceInfo(options: JobOptions = {}): Promise<DeviceInfo> {
    return this.onQueue(options, (queue) =>
      queue.command(
        this,
        async (context) => {
          const body = await this.call({ operation: 'Sys.GetConfig', method: 'GET' }, context);
          const device = (body as { device?: unknown }).device;
          if (!device || typeof device !== 'object') throw new BadResponseError('Sys.GetConfig', 'no device object');
          // What reaches msg.payload: plain members only (no __proto__, no megabyte of text).
          return plainMembers(device);
        },
        options,
      ),
    );
  }

  /**
   * The charge and discharge limits every write is checked against: the configuration's; one left empty is the
   * specification's 2400 W, lowered to what the device reports (114, 115) once anything read it (a BK1600 takes
   * 1200 / 800 W). A limit set in the configuration stands (a cluster takes more than its master may report).
   */
  get limits(): PowerLimits {
    const limit = (name: keyof PowerLimits) =>
      this.configuredLimits[name] ??
      Math.min(POWER_LIMIT.default, asLimit(this.knownValue(REPORTED_LIMIT_ADDRESSES[name])?.value) ?? POWER_LIMIT.default);
    return { chargeLimit: limit('chargeLimit'), dischargeLimit: limit('dischargeLimit') };
  }

  /**
   * Device info plus one read of the serial number: shows that the mode and the namespace work, and which namespace
   * answered (the read may share a request with another flow's: the device state knows the namespace either way). The
   * same request asks for the limits the device reports (points 114 and 115; a model without them leaves them out).
   */
  async testConnection(): Promise<ConnectionReport> {
    const device = await this.getDeviceInfo();
    const { values } = await this.read([0, REPORTED_LIMIT_ADDRESSES.chargeLimit, REPORTED_LIMIT_ADDRESSES.dischargeLimit, ...MODEL_PROBE]);
    const namespace = this.namespace;
    if (namespace === undefined) throw new BadResponseError('GetData', 'no namespace answered');
    const reported: Partial<PowerLimits> = {};
    for (const [name, address] of Object.entries(REPORTED_LIMIT_ADDRESSES) as [keyof PowerLimits, number][]) {
      const value = asLimit(values.get(address));
      if (value !== undefined) reported[name] = value;
    }
    const modelClass = modelClassOf(new Set(MODEL_PROBE.filter((address) => values.has(address))));
    const model = modelClass && {
      modelClass,
      label: MODEL_CLASSES[modelClass].label,
      chargeLimit: MODEL_CLASSES[modelClass].maxChargePower,
      dischargeLimit: MODEL_CLASSES[modelClass].maxDischargePower,
    };
    return { auth: this.auth, namespace, detected: this.configuredNamespace === undefined, device, reported, ...(model ? { model } : {}) };
  }

  /** Checks one write from `address` as it will go out (two writes folded into one), for the queue. */
  validateRange(address: number, values: number[]): void {
    const point = writePointByAddress(address);
    if (!point) throw new ValidationError('address', address, 'a write point address');
    validateWrite(point, values, this.limits);
  }

  /**
   * Changes the device password (User.SetConfig) from the current one to `newPassword`. On success the
   * client uses the new password for everything that follows.
   */
  async changePassword(newPassword: string, options: JobOptions = {}): Promise<void> {
    if (this.auth !== 'digest') {
      throw new ValidationError('authentication', 'none (HTTP mode)', 'HTTP + Digest: a device password exists only in that mode');
    }
    checkPassword(newPassword, 'new password');
    checkPassword(this.password, 'current password');
    return this.onQueue(options, (queue) =>
      queue.command(
        this,
        async (context) => {
          const encrypted = encryptPassword(this.password, newPassword);
          const body = await this.call(
            {
              operation: 'User.SetConfig',
              method: 'POST',
              config: { Password: encrypted.ciphertext },
              realm: encrypted.tag,
              nonce: encrypted.nonce,
            },
            context,
          );
          if ((body as { result?: unknown }).result !== true)
            throw new RefusedError('the password change', 'the current password may be wrong');
          this.password = newPassword;
          this.credentialsKey = this.keyOfCredentials();
          this.authorizedOnce = true;
        },
        options,
      ),
    );
  }

  /**
   * Rejects whatever of this client waits; what is in flight is aborted when no other client uses the device (else
   * it runs to its end, so that the next request cannot reach a device still busy with it).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.detach(this);
    this.removeAllListeners();
  }

  /** Drops the waiting work of `owner` (a session). */
  closeOwner(owner: object): void {
    this.closedOwners.add(owner);
    this.queue.close(owner);
  }

  /** One GetData request (for the queue, which merges the callers' reads into it). */
  async readBatch(addresses: number[], context: RequestContext): Promise<Record<string, unknown>> {
    const { operation, body } = await this.dataCall('GetData', { t: addresses }, context);
    if (Array.isArray(body)) throw new BadResponseError(operation, 'an array instead of an object');
    return body as Record<string, unknown>;
  }

  /** One SetData request (for the queue). */
  async writeRange(address: number, values: number[], context: RequestContext): Promise<void> {
    const { operation, body } = await this.dataCall('SetData', { f: 16, t: address, v: values }, context);
    const result = (body as { result?: unknown }).result;
    if (result === true) return;
    const detail = `write of ${JSON.stringify(values)} to address ${address}`;
    if (result === false) {
      const point = writePointByAddress(address);
      const models = point && modelsTakingText(point);
      const hint =
        address >= REAL_TIME.stateAddress && address <= REAL_TIME.socAddress
          ? ' (is the working mode real-time control?)'
          : models
            ? ` (${models})`
            : '';
      throw new RefusedError(detail + hint, '', address, values);
    }
    throw new BadResponseError(operation, `no result in ${JSON.stringify(body).slice(0, 200)}`);
  }

  /**
   * A GetData or SetData request in the configured namespace, or while none is known for the device, in each of
   * NAMESPACES until one exists: a 404 or 400 means "no such operation" (field notes); any other answer settles the
   * namespace for every client of the device, so a model that lacks some points (a 200 without them) is never taken
   * for a wrong namespace. A 400 to a write may be about its values: a read of the serial number in that namespace
   * tells, and where it is answered the namespace is settled and the write's 400 stands.
   */
  private async dataCall(
    kind: 'GetData' | 'SetData',
    config: unknown,
    context: RequestContext,
  ): Promise<{ operation: string; body: unknown }> {
    const known = this.namespace;
    let status = 0;
    for (const namespace of known !== undefined ? [known] : NAMESPACES) {
      const operation = `${namespace}.${kind}`;
      try {
        const body = await this.call({ operation, method: 'POST', config }, context);
        if (known === undefined) this.detected(namespace);
        return { operation, body };
      } catch (error) {
        const noSuchOperation = error instanceof HttpStatusError && (error.status === 404 || error.status === 400);
        if (!noSuchOperation || known !== undefined) throw error;
        if (kind === 'SetData' && error.status === 400 && (await this.answers(namespace, context))) throw error;
        status = error.status;
      }
    }
    throw new HttpStatusError(NAMESPACES.map((n) => `${n}.${kind}`).join(' and '), status, 'no namespace');
  }

  /** Whether `namespace` exists on the device (its GetData of the serial number is answered); settles it if so. */
  private async answers(namespace: string, context: RequestContext): Promise<boolean> {
    try {
      await this.call({ operation: `${namespace}.GetData`, method: 'POST', config: { t: [0] } }, context);
    } catch (error) {
      if (error instanceof HttpStatusError && (error.status === 404 || error.status === 400)) return false;
      throw error;
    }
    this.detected(namespace);
    return true;
  }

  /** Emits 'namespace' once: this client's request found the namespace, for every client of the device. */
  private detected(namespace: string): void {
    if (this.queue.state.namespace === namespace) return;
    this.queue.state.namespaceAnswered(namespace);
    this.emit('namespace', namespace);
  }

  /**
   * One operation: a pre-emptive digest request (or none in HTTP mode), once more if a digest challenge comes, and
   * once more after the next interval if the device answers 503 (it was busy, or the request came too early: it has
   * not been carried out).
   */
  private async call(call: Call, context: RequestContext): Promise<unknown> {
    try {
      const target =
        `/rpc/${call.operation}` + (call.config === undefined ? '' : `?config=${encodeURIComponent(JSON.stringify(call.config))}`);
      // An empty opaque, as in the vendor's own worked example (field notes).
      const seed = () => ({ realm: call.realm ?? CLIENT_REALM, nonce: call.nonce ?? clientNonce(), opaque: '' });
      let answer = await this.send(call, target, seed(), context);
      if (answer.status === 503) {
        context.tooEarly();
        answer = await this.send(call, target, seed(), context);
      }
      const challenge = answer.headers['www-authenticate'];
      // User.SetConfig's realm carries the GCM tag: a server realm cannot replace it.
      if (
        answer.status === 401 &&
        this.auth === 'digest' &&
        call.realm === undefined &&
        typeof challenge === 'string' &&
        /^\s*Digest\s/i.test(challenge)
      ) {
        answer = await this.send(call, target, challenge, context);
      }
      const body = this.interpret(call, answer);
      this.authorizedOnce = true;
      this.setState('ok');
      return body;
    } catch (error) {
      const state = stateOf(error);
      if (state) this.setState(state, error as Error);
      throw error;
    }
  }

  /** `digest`: the client's own realm and nonce, or a server's challenge to answer. */
  private async send(call: Call, target: string, digest: DigestSeed | string, context: RequestContext): Promise<HttpAnswer> {
    const headers: Record<string, string> = {};
    if (this.auth === 'digest') {
      const request = { username: this.username, password: this.password, method: call.method, target };
      headers.Authorization =
        typeof digest === 'string' ? await answerChallenge(request, digest) : await digestAuthorization(request, digest);
    }
    await context.gate();
    const answer = await exchange({
      host: this.host,
      port: this.port,
      method: call.method,
      target,
      headers,
      timeoutMs: this.timeoutMs,
      operation: call.operation,
      signal: context.signal,
      onConnected: context.connected,
      onSent: context.sent,
    });
    context.answered();
    return answer;
  }

  private interpret(call: Call, answer: HttpAnswer): unknown {
    const operation = call.operation;
    if (answer.status === 401) {
      if (this.auth === 'none') throw new UnauthorizedError('digest-required');
      throw new UnauthorizedError(
        operation === 'User.SetConfig' ? 'wrong-current-password' : this.authorizedOnce ? 'no-longer-accepted' : 'wrong-or-default',
      );
    }
    if (answer.status !== 200) {
      const namespaced = call.config !== undefined && operation !== 'User.SetConfig';
      throw new HttpStatusError(
        operation,
        answer.status,
        namespaced && this.configuredNamespace !== undefined ? 'configured namespace' : undefined,
      );
    }
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
  if (error instanceof UnauthorizedError) {
    if (error.reason === 'digest-required') return 'digest-required';
    return error.mayBeDefaultPassword ? 'default-password' : 'unauthorized';
  }
  if (error instanceof DeviceError) {
    if (error.code === 'TIMEOUT' || error.code === 'UNREACHABLE') return 'unreachable';
    // Closing says nothing about the device.
    if (error.code === 'CLOSED') return undefined;
  }
  return 'error';
}

/** One user's handle on a client: the same operations, and close() drops this user's waiting work only. */
export class ClientSession implements DeviceOperations {
  private closed = false;

  constructor(readonly client: DeviceClient) {}

  get limits(): PowerLimits {
    return this.client.limits;
  }

  read(addresses: readonly number[], options?: OperationOptions): Promise<ReadResult> {
    return this.run(() => this.client.read(addresses, this.own(options)));
  }

  write(point: string | number | WritePoint, values: unknown, options?: OperationOptions): Promise<WriteResult> {
    return this.run(() => this.client.write(point, values, this.own(options)));
  }

  setRealTime(state: number, power: number, soc: number, options?: OperationOptions): Promise<WriteResult> {
    return this.run(() => this.client.setRealTime(state, power, soc, this.own(options)));
  }

  getDeviceInfo(options?: OperationOptions): Promise<DeviceInfo> {
    return this.run(() => this.client.getDeviceInfo(this.own(options)));
  }

  changePassword(newPassword: string, options?: OperationOptions): Promise<void> {
    return this.run(() => this.client.changePassword(newPassword, this.own(options)));
  }

  knownValue(address: number, maxAgeMs?: number): KnownValue | undefined {
    return this.client.knownValue(address, maxAgeMs);
  }

  get deviceState(): DeviceState {
    return this.client.deviceState;
  }

  /** Settles this user's waiting work with CLOSED; later calls fail with CLOSED. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.closeOwner(this);
  }

  private own(options: OperationOptions = {}): JobOptions {
    return { ...options, owner: this };
  }

  private run<T>(operation: () => Promise<T>): Promise<T> {
    return this.closed ? Promise.reject(new ClientClosedError()) : operation();
  }
}
