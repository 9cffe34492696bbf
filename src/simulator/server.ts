/**
 * The simulated device's HTTP side: listening, digest authentication with the default-password lock, the password
 * change, fault injection, answer latency, and the record of how clients behave (request spacing, parallel calls,
 * protocol details). The data operations are the device model's.
 */
import http from 'node:http';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { digestResponse, parseDigestHeader, randomNonce } from './digest';
import { checkPassword, decryptPassword } from '../device/password-crypto';
import { round, type DeviceModel } from './device';
import { loopStalls } from './loop-stalls';

/** 'digest': HTTP + Digest as the specification describes; 'none': the maker's HTTP mode, no authentication. */
export type SimulatorAuth = 'digest' | 'none';

export type Fault = 'timeout' | 'slow' | 'reset' | 'malformed' | 'http500' | 'http503' | 'resultFalse' | 'offline';

export const FAULTS: readonly Fault[] = ['timeout', 'slow', 'reset', 'malformed', 'http500', 'http503', 'resultFalse', 'offline'];

export interface Violation {
  kind: 'interval' | 'parallel';
  atMs: number;
  gapMs?: number;
  path: string;
  /** The request before it: its path, and when it came (ms since the start), as the gap counts it. */
  after?: { path: string; atMs: number };
}

export interface SimulatorStats {
  requests: number;
  byOperation: Record<string, number>;
  violations: Violation[];
  maxAddressesPerRead: number;
  protocolErrors: string[];
  udpQueries: number;
  /** Requests answered 503 as too early (rejectEarly). */
  rejectedEarly: number;
  /** Writes the device refused for their values or its model class: "address [values]". */
  refusedWrites: string[];
  /** Smallest time between two arrivals, ms (undefined before the second request). */
  minGapMs?: number;
}

export interface HttpOptions {
  auth: SimulatorAuth;
  host: string;
  username: string;
  password: string;
  defaultState: boolean;
  namespace: string;
  minIntervalMs: number;
  requireChallenge: boolean;
  slowDelayMs: number;
  latency: readonly [number, number];
  rejectEarly: boolean;
}

const MAX_RECORDS = 1000;
const MAX_OPERATION_KEYS = 50;
const MAX_BODY_BYTES = 64 * 1024;
const CHALLENGE_REALM = 'local-api';

interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export function emptyStats(): SimulatorStats {
  return {
    requests: 0,
    byOperation: {},
    violations: [],
    maxAddressesPerRead: 0,
    protocolErrors: [],
    udpQueries: 0,
    rejectedEarly: 0,
    refusedWrites: [],
  };
}

export class SimulatorHttp {
  private readonly auth: SimulatorAuth;
  private readonly host: string;
  private readonly username: string;
  currentPassword: string;
  defaultState: boolean;
  private readonly namespace: string;
  private readonly minIntervalMs: number;
  private readonly requireChallenge: boolean;
  private readonly slowDelayMs: number;
  private readonly latency: readonly [number, number];
  private readonly rejectEarly: boolean;

  private server: http.Server | undefined;
  listeningPort = 0;
  private readonly sockets = new Set<net.Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();

  fault: Fault | null = null;
  faultRemaining: number | undefined;
  private serverNonce = randomNonce();

  private inFlight = 0;
  /** The last request: the earliest moment it can have come (see loop-stalls.ts), and its path. */
  private last: { arrival: number; path: string } | undefined;
  record: SimulatorStats = emptyStats();

  constructor(
    options: HttpOptions,
    private readonly model: DeviceModel,
  ) {
    this.auth = options.auth;
    this.host = options.host;
    this.username = options.username;
    this.currentPassword = options.password;
    this.defaultState = options.defaultState;
    this.namespace = options.namespace;
    this.minIntervalMs = options.minIntervalMs;
    this.requireChallenge = options.requireChallenge;
    this.slowDelayMs = options.slowDelayMs;
    this.latency = options.latency;
    this.rejectEarly = options.rejectEarly;
  }

  resetStats(): void {
    this.record = emptyStats();
    this.last = undefined;
  }

  /** Cancels the answers still waiting for their latency. */
  clearTimers(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  listen(port: number): Promise<void> {
    const server = http.createServer((req, res) => this.onRequest(req, res));
    server.on('connection', (socket: net.Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.host, () => {
        server.off('error', reject);
        server.on('error', () => undefined);
        this.server = server;
        loopStalls.start();
        this.listeningPort = (server.address() as net.AddressInfo).port;
        resolve();
      });
    });
  }

  close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (!server) return Promise.resolve();
    loopStalls.stop();
    return new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  // ---- HTTP ----

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const arrival = performance.now();
    const target = req.url ?? '/';
    const queryStart = target.indexOf('?');
    const path = queryStart < 0 ? target : target.slice(0, queryStart);
    const query = queryStart < 0 ? '' : target.slice(queryStart + 1);
    const operation = path.startsWith('/rpc/') ? path.slice(5) : '';
    const early = this.recordArrival(arrival, path, operation, req, query);

    this.inFlight++;
    let finished = false;
    res.on('close', () => {
      if (!finished) {
        finished = true;
        this.inFlight--;
      }
    });
    let bodyBytes = 0;
    req.on('data', (chunk: Buffer) => {
      bodyBytes += chunk.length;
      if (bodyBytes > MAX_BODY_BYTES) req.socket.destroy();
    });
    req.on('error', () => undefined);
    req.on('end', () => {
      if (bodyBytes > 0 && req.method === 'POST')
        this.protocolError(`${operation || path}: POST with a non-empty body (${bodyBytes} bytes)`);
      if (early && this.rejectEarly) {
        this.record.rejectedEarly++;
        this.write(res, { status: 503, body: { code: 503, message: 'Service Unavailable' } });
      } else this.dispatch(req, res, path, operation, query);
    });
  }

  /** Records the request; true when it came too early (under the interval, or while another is answered). */
  private recordArrival(arrival: number, path: string, operation: string, req: http.IncomingMessage, query: string): boolean {
    const r = this.record;
    r.requests++;
    const key = operation && (operation in r.byOperation || Object.keys(r.byOperation).length < MAX_OPERATION_KEYS) ? operation : 'other';
    r.byOperation[key] = (r.byOperation[key] ?? 0) + 1;
    // One this process held back looks late: the gap counts from when it can have come.
    const gap = this.last === undefined ? undefined : arrival - this.last.arrival;
    if (gap !== undefined) r.minGapMs = round(Math.min(r.minGapMs ?? Infinity, gap), 1);
    const atMs = round(arrival - this.model.startedAt, 1);
    const early = this.inFlight > 0 || (gap !== undefined && gap < this.minIntervalMs);
    // One violation per request: a parallel call is also too close, but that is the worse fault.
    const after =
      this.last === undefined ? {} : { after: { path: this.last.path, atMs: round(this.last.arrival - this.model.startedAt, 1) } };
    if (this.inFlight > 0)
      push(r.violations, { kind: 'parallel', atMs, ...(gap !== undefined ? { gapMs: round(gap, 1) } : {}), path, ...after });
    else if (gap !== undefined && gap < this.minIntervalMs)
      push(r.violations, { kind: 'interval', atMs, gapMs: round(gap, 1), path, ...after });
    this.last = { arrival: loopStalls.earliest(arrival), path };

    const name = operation || path;
    if (String(req.headers.connection ?? '').toLowerCase() !== 'close') this.protocolError(`${name}: no "Connection: close" header`);
    const contentType = String(req.headers['content-type'] ?? '').toLowerCase();
    if (!contentType.startsWith('application/json')) this.protocolError(`${name}: no "Content-Type: application/json" header`);
    const config = decodeConfig(query);
    if (typeof config === 'string') {
      if (/\s/.test(config)) this.protocolError(`${name}: whitespace in the config JSON`);
      else if (operation === `${this.namespace}.GetData`) {
        try {
          const t = (JSON.parse(config) as { t?: unknown }).t;
          if (Array.isArray(t)) r.maxAddressesPerRead = Math.max(r.maxAddressesPerRead, t.length);
        } catch {
          // Not JSON: answered with 400 later.
        }
      }
    }
    return early;
  }

  private protocolError(text: string): void {
    push(this.record.protocolErrors, text.length > 300 ? text.slice(0, 300) + '…' : text);
  }

  private takeFault(): Fault | null {
    const fault = this.fault;
    if (fault === null || fault === 'offline' || fault === 'resultFalse') return null;
    this.consumeFault();
    return fault;
  }

  private consumeFault(): void {
    if (this.faultRemaining === undefined) return;
    this.faultRemaining--;
    if (this.faultRemaining <= 0) {
      this.fault = null;
      this.faultRemaining = undefined;
    }
  }

  private dispatch(req: http.IncomingMessage, res: http.ServerResponse, path: string, operation: string, query: string): void {
    const fault = this.takeFault();
    switch (fault) {
      case 'timeout':
        return; // Held until the client gives up or stop() destroys the socket.
      case 'reset': {
        const socket = req.socket as net.Socket & { resetAndDestroy?: () => void };
        if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
        else socket.destroy();
        return;
      }
      case 'malformed':
        this.write(res, { status: 200, body: '{"result":tru<html>' });
        return;
      case 'http500':
        this.write(res, { status: 500, body: { code: 500, message: 'Internal Server Error' } });
        return;
      case 'http503':
        this.write(res, { status: 503, body: { code: 503, message: 'Service Unavailable' } });
        return;
      case 'slow':
        this.later(this.slowDelayMs, res, () => this.write(res, this.outcome(req, path, operation, query)));
        return;
      default: {
        const [min, max] = this.latency;
        if (max === 0) {
          this.write(res, this.outcome(req, path, operation, query));
          return;
        }
        // Carried out on arrival, answered after the latency.
        const answer = this.outcome(req, path, operation, query);
        this.later(min + Math.random() * (max - min), res, () => this.write(res, answer));
      }
    }
  }

  /** Runs `action` after `delayMs` unless the connection is gone by then. */
  private later(delayMs: number, res: http.ServerResponse, action: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!res.destroyed && !res.writableEnded) action();
    }, delayMs);
    this.timers.add(timer);
    res.on('close', () => {
      clearTimeout(timer);
      this.timers.delete(timer);
    });
  }

  private outcome(req: http.IncomingMessage, path: string, operation: string, query: string): Answer {
    try {
      return this.handle(req, path, operation, query);
    } catch {
      return { status: 500, body: { code: 500, message: 'Internal Server Error' } };
    }
  }

  private write(res: http.ServerResponse, answer: Answer): void {
    const body = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
    res.writeHead(answer.status, {
      ...answer.headers,
      'Content-Type': 'application/json',
      'Content-Length': String(Buffer.byteLength(body)),
      Connection: 'close',
    });
    res.end(body);
  }

  private handle(req: http.IncomingMessage, path: string, operation: string, query: string): Answer {
    const routes: Record<string, string> = {
      [`${this.namespace}.GetData`]: 'POST',
      [`${this.namespace}.SetData`]: 'POST',
      'Sys.GetConfig': 'GET',
      'User.SetConfig': 'POST',
    };
    const method = path.startsWith('/rpc/') ? routes[operation] : undefined;
    if (method === undefined || !Object.prototype.hasOwnProperty.call(routes, operation)) {
      return { status: 404, body: { code: 404, message: 'Not Found' } };
    }
    if (req.method !== method) return { status: 405, body: { code: 405, message: 'Method Not Allowed' }, headers: { Allow: method } };

    let digest: { realm: string; nonce: string } | undefined;
    if (this.auth === 'digest') {
      digest = this.checkDigest(req, operation);
      if (!digest) return this.challenge();
      // A device with its default password accepts nothing but the password change.
      if (this.defaultState && operation !== 'User.SetConfig') return this.challenge();
    } else if (operation === 'User.SetConfig') {
      // The password exists for HTTP + Digest only: without a digest there is no realm (tag) or nonce (IV).
      return { status: 403, body: { code: 403, message: 'Forbidden' } };
    }

    this.model.advance();
    if (operation === 'Sys.GetConfig') return { status: 200, body: { device: this.model.deviceInfo() } };

    const config = decodeConfig(query);
    if (config === undefined || config === null) return { status: 400, body: { code: 400, message: 'Bad Request' } };
    // Real firmware answers {} to JSON with spaces in it.
    if (/\s/.test(config)) return { status: 200, body: {} };
    let parsed: unknown;
    try {
      parsed = JSON.parse(config);
    } catch {
      return { status: 400, body: { code: 400, message: 'Bad Request' } };
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return { status: 400, body: { code: 400, message: 'Bad Request' } };
    const params = parsed as Record<string, unknown>;

    if (operation === 'User.SetConfig') return this.setPassword(params, digest!);
    if (operation === `${this.namespace}.GetData`) return this.getData(params);
    return this.setData(params);
  }

  /** Checks the client's digest against its own realm, nonce, nc and cnonce (field notes). */
  private checkDigest(req: http.IncomingMessage, operation: string): { realm: string; nonce: string } | undefined {
    const fields = parseDigestHeader(req.headers.authorization);
    if (!fields) return undefined;
    const { username, realm, nonce, uri, response, qop, nc, cnonce, algorithm } = fields;
    if (username !== this.username || !uri || uri !== req.url || realm === undefined || !nonce || !response || !nc || !cnonce)
      return undefined;
    if (qop !== 'auth' || (algorithm !== undefined && algorithm.toUpperCase() !== 'MD5')) return undefined;
    // For User.SetConfig realm and nonce are the GCM tag and IV, so no server nonce can apply.
    if (this.requireChallenge && operation !== 'User.SetConfig' && nonce !== this.serverNonce) return undefined;
    const expected = digestResponse({ username, password: this.currentPassword, method: req.method ?? '', uri, realm, nonce, nc, cnonce });
    return expected === response.toLowerCase() ? { realm, nonce } : undefined;
  }

  private challenge(): Answer {
    this.serverNonce = randomNonce();
    return {
      status: 401,
      body: { code: 401, message: 'Unauthorized' },
      headers: { 'WWW-Authenticate': `Digest realm="${CHALLENGE_REALM}", nonce="${this.serverNonce}", qop="auth", algorithm=MD5` },
    };
  }

  private takeResultFalse(): boolean {
    if (this.fault !== 'resultFalse') return false;
    this.consumeFault();
    return true;
  }

  private setPassword(params: Record<string, unknown>, digest: { realm: string; nonce: string }): Answer {
    if (this.takeResultFalse()) return { status: 200, body: { result: false } };
    const ciphertext = params.Password;
    if (typeof ciphertext !== 'string' || ciphertext === '') return { status: 200, body: { result: false } };
    // The realm carries the GCM tag and the nonce the IV string (field notes).
    const plain = decryptPassword(this.currentPassword, { ciphertext, tag: digest.realm, nonce: digest.nonce });
    try {
      checkPassword(plain, 'new password');
    } catch {
      return { status: 200, body: { result: false } };
    }
    this.currentPassword = plain;
    this.defaultState = false;
    return { status: 200, body: { result: true } };
  }

  private getData(params: Record<string, unknown>): Answer {
    const answer = this.model.getData(params);
    return answer ? { status: 200, body: answer } : { status: 400, body: { code: 400, message: 'Bad Request' } };
  }

  private setData(params: Record<string, unknown>): Answer {
    if (this.takeResultFalse()) return { status: 200, body: { result: false } };
    const result = this.model.setData(params);
    if (!result) push(this.record.refusedWrites, `${JSON.stringify(params.t)} ${JSON.stringify(params.v)}`);
    return { status: 200, body: { result } };
  }
}

function push<T>(list: T[], item: T): void {
  list.push(item);
  if (list.length > MAX_RECORDS) list.splice(0, list.length - MAX_RECORDS);
}

/** The decoded `config` query value: undefined when absent, null when its percent-encoding is broken. */
function decodeConfig(query: string): string | undefined | null {
  for (const part of query.split('&')) {
    if (!part.startsWith('config=')) continue;
    try {
      // Not URLSearchParams: '+' is a literal plus (base64) in unescaped JSON, not a space.
      return decodeURIComponent(part.slice('config='.length));
    } catch {
      return null;
    }
  }
  return undefined;
}
