/**
 * A simulated battery-storage device serving the local API (device-api.md, field notes) on its own
 * HTTP port and UDP discovery port: digest authentication with the default-password lock, GetData and
 * SetData driven by the point catalogue, a small battery model, fault injection, and a record of how
 * clients behave (request spacing, parallel calls, protocol details). Node built-ins only.
 */
import http from 'node:http';
import dgram from 'node:dgram';
import net from 'node:net';
import os from 'node:os';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  MAX_ADDRESSES_PER_READ,
  MODEL_1600_SPEC_ADDRESSES,
  MODEL_CLASSES,
  READ_POINTS,
  REAL_TIME,
  WRITE_POINTS,
  pointByName,
  validateWrite,
  validateWriteValue,
  writePointByAddress,
  type ModelClass,
  type ReadPoint,
  type WritePoint,
} from './catalogue';
import { digestResponse, parseDigestHeader, randomNonce } from './digest';
import { checkPassword, decryptPassword } from './password-crypto';
import { startMdnsResponder, type MdnsResponder } from './simulator-mdns';

/** 'digest': HTTP + Digest as the specification describes; 'none': the maker's HTTP mode, no authentication. */
export type SimulatorAuth = 'digest' | 'none';

export const SIMULATOR_AUTH_MODES: readonly SimulatorAuth[] = ['digest', 'none'];

export const SIMULATOR_MODELS: readonly ModelClass[] = ['2000', '1600'];

export type Fault = 'timeout' | 'slow' | 'reset' | 'malformed' | 'http500' | 'http503' | 'resultFalse' | 'offline';

export const FAULTS: readonly Fault[] = ['timeout', 'slow', 'reset', 'malformed', 'http500', 'http503', 'resultFalse', 'offline'];

/**
 * Options of the simulated device. `auth` 'digest' (default) checks every request's digest and keeps the
 * default-password lock; 'none' is the maker's HTTP mode: no Authorization header needed (one sent is
 * ignored), no lock, and `User.SetConfig` is refused with 403 (the maker documents the password change for
 * HTTP + Digest only). `namespace` names the data operations: 'Vendor' (specification, default) or the
 * maker's 'Indevolt' (`/rpc/Indevolt.GetData`). `model` picks the model class: '2000' (default) serves the
 * specification's points and the 2000 class's points beyond it; '1600' serves the 1600 class's points (its tab
 * of the maker's table and what its integrations read) and refuses real-time power beyond 1200 W charging or
 * 800 W discharging, and the settings that class does not list, with result false. `type` is the device type
 * string of Sys.GetConfig; `blankIdentity` answers Sys.GetConfig with empty `sn` and `hostname`, as the maker's
 * example does.
 */
export interface SimulatorOptions {
  auth?: SimulatorAuth;
  host?: string;
  port?: number;
  udpPort?: number | null;
  username?: string;
  defaultPassword?: string;
  password?: string;
  namespace?: string;
  minIntervalMs?: number;
  requireChallenge?: boolean;
  timeScale?: number;
  unsupported?: number[];
  serialNumber?: string;
  model?: ModelClass;
  type?: string;
  blankIdentity?: boolean;
  firmware?: string;
  advertisedIp?: string;
  /** Announce the device over mDNS as newer firmware does (src/simulator-mdns.ts). Multicast: off by default. */
  mdns?: boolean;
  slowDelayMs?: number;
  /**
   * Every request is carried out when it arrives and answered this long after (the specification's response time is
   * about 1 s): ms, or [min, max].
   */
  latencyMs?: number | readonly [number, number];
  /** A request that arrives under the minimum interval after the one before, or while one is answered, gets 503 and is not carried out. */
  rejectEarly?: boolean;
  /** Working mode at start (1, 4 or 5), default 1: 5 leaves the battery idle, so the meter shows the whole house. */
  workingMode?: number;
}

export interface Violation {
  kind: 'interval' | 'parallel';
  atMs: number;
  gapMs?: number;
  path: string;
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
  /** Smallest time between two arrivals, ms (undefined before the second request). */
  minGapMs?: number;
}

export const SIMULATOR_DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  udpPort: 8099,
  auth: 'digest' as SimulatorAuth,
  username: 'opend',
  defaultPassword: 'opendefault',
  namespace: 'Vendor',
  minIntervalMs: 1000,
  timeScale: 1,
  serialNumber: 'SIM0000000000001',
  model: '2000' as ModelClass,
  type: 'SIM-5120',
  firmware: 'V1.3.07_R003.001_SIM00_00000012',
  slowDelayMs: 2500,
} as const;

/** Pack2..Pack5 and the modular DCDC/BMS 2..5 firmware points: what a single-pack 2000-class model leaves out. */
export function defaultUnsupportedAddresses(): number[] {
  return READ_POINTS.filter((p) => !p.models || p.models.includes('2000'))
    .filter((p) => /^pack[2-5][A-Z]/.test(p.name) || /^(dcdc|bms)[2-5]Firmware$/.test(p.name))
    .map((p) => p.address);
}

/** Read addresses a model class serves: the sources' list for the 1600 class, every other specification point for the 2000 class. */
export function modelAddresses(model: ModelClass): number[] {
  return READ_POINTS.filter((p) =>
    p.beyondSpec ? p.models?.includes(model) : model === '2000' || MODEL_1600_SPEC_ADDRESSES.includes(p.address),
  ).map((p) => p.address);
}

/** Rated capacity by model class: the 1600 class's from the Home Assistant gen_1 fixture. */
const RATED_CAPACITY_KWH: Record<ModelClass, number> = { '2000': 5.12, '1600': 1.64 };
const MAX_RECORDS = 1000;
const MAX_OPERATION_KEYS = 50;
const MAX_BODY_BYTES = 64 * 1024;
const CHALLENGE_REALM = 'local-api';
/** Enumerated points that real firmware sends as numeric strings ("1001"). */
const STRING_ENUMS = new Set(['batteryState', 'meterStatus', 'masterSlave']);
/** Initial settings by read-point name; settings without an entry start at their write point's minimum. */
const INITIAL_SETTINGS: Record<string, number> = {
  workingMode: 1,
  gridCharging: 1001,
  inverterInputLimit: 1200,
  feedInPowerLimit: 800,
  maxAcOutputPower: 800,
  bypass: 0,
  backupSoc: 10,
  light: 1,
  loadSetting: 2,
};

const round = (value: number, decimals = 0) => {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
};

export interface ControlSettings {
  state: number;
  power: number;
  soc: number;
}

interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export class DeviceSimulator {
  private readonly auth: SimulatorAuth;
  private readonly host: string;
  private readonly requestedPort: number;
  private readonly requestedUdpPort: number | null;
  private readonly username: string;
  private readonly defaultPassword: string;
  private currentPassword: string;
  private defaultState: boolean;
  private readonly namespace: string;
  private readonly minIntervalMs: number;
  private readonly requireChallenge: boolean;
  private readonly timeScale: number;
  private readonly unsupported: Set<number>;
  private readonly serialNumber: string;
  private readonly modelClass: ModelClass;
  private readonly type: string;
  private readonly blankIdentity: boolean;
  private readonly capacityKwh: number;
  private readonly firmware: string;
  private readonly advertisedIp: string;
  private readonly mdnsWanted: boolean;
  private mdnsResponder: MdnsResponder | undefined;
  private readonly slowDelayMs: number;
  private readonly latency: readonly [number, number];
  private readonly rejectEarly: boolean;

  private server: http.Server | undefined;
  private udp: dgram.Socket | undefined;
  private listeningPort = 0;
  private listeningUdpPort: number | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Listener changes (start, offline, back online, stop) run one after another. */
  private listenerChain: Promise<void> = Promise.resolve();
  private started = false;
  private stopped = false;
  private stopPromise: Promise<void> | undefined;
  private startedAt = performance.now();

  private fault: Fault | null = null;
  private faultRemaining: number | undefined;
  private serverNonce = randomNonce();

  private inFlight = 0;
  private lastArrival: number | undefined;
  private record: SimulatorStats = DeviceSimulator.emptyStats();

  // Battery model, in simulated seconds since start.
  private simSeconds = 0;
  private lastAdvance = performance.now();
  private socExact = 50;
  private batteryPowerW = 0;
  private loadW = 0;
  private pvW = 0;
  private meterW = 0;
  private readonly settingsByName = new Map<string, number>();
  private controlSettings: ControlSettings;
  /** Energy counters by read-point name, in the unit the catalogue gives for the point. */
  private readonly energy = new Map<string, number>([
    ['acInputEnergyTotal', 402.4],
    ['acOutputEnergyTotal', 371.91],
    ['bypassMinvInputEnergyDaily', 1250.5],
    ['bypassMinvInputEnergyTotal', 845210.25],
    ['offGridBypassOutputEnergyDaily', 0],
    ['offGridBypassOutputEnergyTotal', 3.27],
    ['bypassOutputEnergyDaily', 980.12],
    ['bypassOutputEnergyTotal', 612345.6],
    ['pvEnergyDaily', 3.42],
    ['pvEnergyTotal', 1250340.5],
    ['batteryChargeEnergyDaily', 1.25],
    ['batteryDischargeEnergyDaily', 0.87],
    ['batteryChargeEnergyTotal', 380.58],
    ['batteryDischargeEnergyTotal', 352.17],
  ]);

  constructor(options: SimulatorOptions = {}) {
    this.auth = options.auth ?? SIMULATOR_DEFAULTS.auth;
    if (!SIMULATOR_AUTH_MODES.includes(this.auth)) throw new RangeError(`auth must be one of ${SIMULATOR_AUTH_MODES.join(', ')}`);
    this.host = options.host ?? SIMULATOR_DEFAULTS.host;
    this.requestedPort = options.port ?? SIMULATOR_DEFAULTS.port;
    this.requestedUdpPort = options.udpPort === undefined ? SIMULATOR_DEFAULTS.udpPort : options.udpPort;
    this.username = options.username ?? SIMULATOR_DEFAULTS.username;
    this.defaultPassword = options.defaultPassword ?? SIMULATOR_DEFAULTS.defaultPassword;
    checkPassword(this.defaultPassword, 'default password');
    if (options.password !== undefined) checkPassword(options.password, 'password');
    this.currentPassword = options.password ?? this.defaultPassword;
    this.defaultState = options.password === undefined;
    this.namespace = options.namespace ?? SIMULATOR_DEFAULTS.namespace;
    this.minIntervalMs = options.minIntervalMs ?? SIMULATOR_DEFAULTS.minIntervalMs;
    this.requireChallenge = options.requireChallenge ?? false;
    this.timeScale = options.timeScale ?? SIMULATOR_DEFAULTS.timeScale;
    if (!Number.isFinite(this.timeScale) || this.timeScale < 0) throw new RangeError('timeScale must be a number >= 0');
    this.modelClass = options.model ?? SIMULATOR_DEFAULTS.model;
    if (!SIMULATOR_MODELS.includes(this.modelClass)) throw new RangeError(`model must be one of ${SIMULATOR_MODELS.join(', ')}`);
    const served = new Set(modelAddresses(this.modelClass));
    this.unsupported = new Set([
      ...(options.unsupported ?? defaultUnsupportedAddresses()),
      ...READ_POINTS.map((p) => p.address).filter((a) => !served.has(a)),
    ]);
    this.capacityKwh = RATED_CAPACITY_KWH[this.modelClass];
    this.serialNumber = options.serialNumber ?? SIMULATOR_DEFAULTS.serialNumber;
    this.type = options.type ?? SIMULATOR_DEFAULTS.type;
    this.blankIdentity = options.blankIdentity ?? false;
    this.firmware = options.firmware ?? SIMULATOR_DEFAULTS.firmware;
    this.advertisedIp = options.advertisedIp ?? advertisableAddress(this.host);
    this.mdnsWanted = options.mdns ?? false;
    this.slowDelayMs = options.slowDelayMs ?? SIMULATOR_DEFAULTS.slowDelayMs;
    const latency = options.latencyMs ?? 0;
    this.latency = typeof latency === 'number' ? [latency, latency] : latency;
    if (!(this.latency[0] >= 0 && this.latency[1] >= this.latency[0]))
      throw new RangeError('latencyMs must be >= 0, or [min, max] with min <= max');
    this.rejectEarly = options.rejectEarly === true;

    for (const write of WRITE_POINTS) {
      if (write.realTimeOnly) continue;
      const name = write.readAs ?? write.name;
      const firstOption = write.enum?.[0];
      const initial = INITIAL_SETTINGS[name] ?? (firstOption ? firstOption.value + (write.readValueOffset ?? 0) : (write.min ?? 0));
      this.settingsByName.set(name, initial);
    }
    if (options.workingMode !== undefined) {
      const mode = pointByName('workingModeSetting') as WritePoint;
      this.settingsByName.set('workingMode', validateWriteValue(mode, options.workingMode, 'workingMode'));
    }
    this.controlSettings = this.standbyControl();
    this.step(0);
  }

  private static emptyStats(): SimulatorStats {
    return { requests: 0, byOperation: {}, violations: [], maxAddressesPerRead: 0, protocolErrors: [], udpQueries: 0, rejectedEarly: 0 };
  }

  // ---- lifecycle ----

  async start(): Promise<void> {
    if (this.started) throw new Error('The simulator was already started');
    this.started = true;
    this.startedAt = performance.now();
    this.lastAdvance = this.startedAt;
    try {
      await this.enqueue(() => this.listenHttp(this.requestedPort));
      if (this.fault === 'offline') await this.enqueue(() => this.closeHttp());
      if (this.requestedUdpPort !== null) await this.listenUdp(this.requestedUdpPort);
      if (this.mdnsWanted) {
        this.mdnsResponder = startMdnsResponder({ port: this.listeningPort, serialNumber: this.serialNumber, firmware: this.firmware });
      }
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  stop(): Promise<void> {
    if (!this.stopPromise) {
      this.stopped = true;
      this.stopPromise = (async () => {
        for (const timer of this.timers) clearTimeout(timer);
        this.timers.clear();
        await this.enqueue(() => this.closeHttp());
        const udp = this.udp;
        this.udp = undefined;
        if (udp) await new Promise<void>((resolve) => udp.close(() => resolve()));
        await this.mdnsResponder?.stop();
      })();
    }
    return this.stopPromise;
  }

  /** Resolves once pending listener changes (going offline, back online) have taken effect. */
  ready(): Promise<void> {
    return this.listenerChain;
  }

  get port(): number {
    return this.listeningPort;
  }

  get udpPort(): number | undefined {
    return this.listeningUdpPort;
  }

  get url(): string {
    const host = net.isIPv6(this.host) ? `[${this.host}]` : this.host;
    return `http://${host}:${this.listeningPort}`;
  }

  // ---- faults and records ----

  /** `count`: how many following requests get the fault (for 'resultFalse': SetData/User.SetConfig answers; ignored for 'offline'). */
  setFault(fault: Fault | null, count?: number): void {
    if (fault !== null && !FAULTS.includes(fault)) throw new RangeError(`Unknown fault ${String(fault)}; one of ${FAULTS.join(', ')}`);
    if (count !== undefined && (!Number.isInteger(count) || count < 1)) throw new RangeError('count must be a positive integer');
    const wasOffline = this.fault === 'offline';
    this.fault = fault;
    this.faultRemaining = fault === 'offline' ? undefined : count;
    if (!this.started || this.stopped) return;
    if (fault === 'offline' && !wasOffline) this.enqueue(() => this.closeHttp()).catch(() => undefined);
    if (fault !== 'offline' && wasOffline) this.enqueue(() => this.listenHttp(this.listeningPort)).catch(() => undefined);
  }

  get currentFault(): Fault | null {
    return this.fault;
  }

  get stats(): SimulatorStats {
    const r = this.record;
    return {
      ...r,
      byOperation: { ...r.byOperation },
      violations: r.violations.map((v) => ({ ...v })),
      protocolErrors: [...r.protocolErrors],
    };
  }

  resetStats(): void {
    this.record = DeviceSimulator.emptyStats();
    this.lastArrival = undefined;
  }

  // ---- model state ----

  get password(): string {
    return this.currentPassword;
  }

  get hasDefaultPassword(): boolean {
    return this.defaultState;
  }

  isUnsupported(address: number): boolean {
    return this.unsupported.has(address);
  }

  /** The current read value as the device would report it; undefined for unsupported or unknown addresses. */
  value(address: number): number | string | undefined {
    this.advance();
    if (this.unsupported.has(address)) return undefined;
    const point = READ_POINTS.find((p) => p.address === address);
    return point ? this.pointValue(point) : undefined;
  }

  get workingMode(): number {
    return this.settingsByName.get('workingMode')!;
  }

  /** The owner changes the working mode in the app: no request of the client's shows it. */
  changeWorkingMode(mode: number): void {
    const point = pointByName('workingModeSetting') as WritePoint;
    this.settingsByName.set('workingMode', validateWriteValue(point, mode, 'workingMode'));
  }

  /** Reported SOC (integer %). */
  get soc(): number {
    this.advance();
    return Math.round(this.socExact);
  }

  get exactSoc(): number {
    this.advance();
    return this.socExact;
  }

  /** W, positive = discharging. */
  get batteryPower(): number {
    this.advance();
    return Math.round(this.batteryPowerW);
  }

  /** W, positive = import. */
  get meterPower(): number {
    this.advance();
    return Math.round(this.meterW);
  }

  get pvPower(): number {
    this.advance();
    return Math.round(this.pvW);
  }

  /** The last real-time control write: state (0 standby, 1 charge, 2 discharge), power W, target SOC %. */
  get control(): ControlSettings {
    return { ...this.controlSettings };
  }

  get controlState(): number {
    return this.controlSettings.state;
  }

  get controlPower(): number {
    return this.controlSettings.power;
  }

  get controlSoc(): number {
    return this.controlSettings.soc;
  }

  get backupSoc(): number {
    return this.settingsByName.get('backupSoc')!;
  }

  get ratedCapacityKwh(): number {
    return this.capacityKwh;
  }

  get model(): ModelClass {
    return this.modelClass;
  }

  /** Settings by point name, as the paired read points report them (write-only settings by write-point name). */
  get settings(): Record<string, number> {
    return Object.fromEntries(this.settingsByName);
  }

  // ---- listeners ----

  private enqueue(operation: () => Promise<void>): Promise<void> {
    const next = this.listenerChain.then(operation);
    this.listenerChain = next.catch(() => undefined);
    return next;
  }

  private listenHttp(port: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
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
        this.listeningPort = (server.address() as net.AddressInfo).port;
        resolve();
      });
    });
  }

  private closeHttp(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (!server) return Promise.resolve();
    return new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private listenUdp(port: number): Promise<void> {
    const socket = dgram.createSocket(net.isIPv6(this.host) ? 'udp6' : 'udp4');
    this.udp = socket;
    socket.on('message', (message, remote) => this.onUdp(message, remote));
    return new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, this.host, () => {
        socket.off('error', reject);
        socket.on('error', () => undefined);
        this.listeningUdpPort = socket.address().port;
        resolve();
      });
    });
  }

  private onUdp(message: Buffer, remote: dgram.RemoteInfo): void {
    if (message.toString('utf8').trim() !== 'AT+IGDEVICEIP') return;
    this.record.udpQueries++;
    // An offline device does not answer discovery either.
    if (this.fault === 'offline' || !this.udp) return;
    const answer = JSON.stringify({ sn: this.serialNumber, fw: this.firmware, ip: this.advertisedIp, opendata_ver: 'V1.0.1' });
    this.udp.send(answer, remote.port, remote.address, () => undefined);
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
    const gap = this.lastArrival === undefined ? undefined : arrival - this.lastArrival;
    if (gap !== undefined) r.minGapMs = round(Math.min(r.minGapMs ?? Infinity, gap), 1);
    const atMs = round(arrival - this.startedAt, 1);
    const early = this.inFlight > 0 || (gap !== undefined && gap < this.minIntervalMs);
    // One violation per request: a parallel call is also too close, but that is the worse fault.
    if (this.inFlight > 0) push(r.violations, { kind: 'parallel', atMs, ...(gap !== undefined ? { gapMs: round(gap, 1) } : {}), path });
    else if (gap !== undefined && gap < this.minIntervalMs) push(r.violations, { kind: 'interval', atMs, gapMs: round(gap, 1), path });
    this.lastArrival = arrival;

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

    this.advance();
    if (operation === 'Sys.GetConfig') return { status: 200, body: { device: this.deviceInfo() } };

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
    const t = params.t;
    if (!Array.isArray(t) || !t.every((a) => typeof a === 'number' && Number.isInteger(a))) {
      return { status: 400, body: { code: 400, message: 'Bad Request' } };
    }
    if (t.length > MAX_ADDRESSES_PER_READ) return { status: 400, body: { code: 400, message: 'Bad Request' } };
    const answer: Record<string, number | string> = {};
    for (const address of t as number[]) {
      if (this.unsupported.has(address)) continue;
      const point = READ_POINTS.find((p) => p.address === address);
      if (!point) continue;
      const value = this.pointValue(point);
      if (value !== undefined) answer[String(address)] = value;
    }
    return { status: 200, body: answer };
  }

  private setData(params: Record<string, unknown>): Answer {
    const refused: Answer = { status: 200, body: { result: false } };
    if (this.takeResultFalse()) return refused;
    if (params.f !== undefined && params.f !== 16) return refused;
    const point = typeof params.t === 'number' ? writePointByAddress(params.t) : undefined;
    if (!point) return refused;
    const v = params.v;
    // Stricter than the client-side check: the device takes numbers only, in an array.
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'number')) return refused;
    let values: number[];
    try {
      values = validateWrite(point, v);
    } catch {
      return refused;
    }
    if (point.realTimeOnly && this.workingMode !== REAL_TIME.mode) return refused;
    if (!this.modelAccepts(point, values)) return refused;
    this.applyWrite(point, values);
    return { status: 200, body: { result: true } };
  }

  /** The 1600 class lists only the mode and real-time points, with its own power range (maker's BK1600 tab). */
  private modelAccepts(point: WritePoint, values: number[]): boolean {
    if (this.modelClass !== '1600') return true;
    if (point.address !== REAL_TIME.modeAddress && !point.realTimeOnly) return false;
    const state = point.address === REAL_TIME.stateAddress ? values[0] : this.controlSettings.state;
    const power = point.address === REAL_TIME.stateAddress ? values[1] : point.address === REAL_TIME.powerAddress ? values[0] : undefined;
    if (power === undefined) return true;
    const limits = MODEL_CLASSES['1600'];
    return state === 1 ? power <= limits.maxChargePower : state === 2 ? power <= limits.maxDischargePower : true;
  }

  /** `values` as validateWrite returns them: one value, or [state, power, SOC]. */
  private applyWrite(point: WritePoint, values: number[]): void {
    const [value, power, soc] = values as [number, number?, number?];
    if (point.address === REAL_TIME.modeAddress && value === REAL_TIME.mode && this.workingMode !== REAL_TIME.mode) {
      // Entering real-time control starts in standby until the first control write.
      this.controlSettings = this.standbyControl();
    }
    if (point.address === REAL_TIME.stateAddress) {
      this.controlSettings.state = value;
      if (power !== undefined && soc !== undefined) {
        this.controlSettings.power = power;
        this.controlSettings.soc = soc;
      }
    } else if (point.address === REAL_TIME.powerAddress) this.controlSettings.power = value;
    else if (point.address === REAL_TIME.socAddress) this.controlSettings.soc = value;
    else this.settingsByName.set(point.readAs ?? point.name, value + (point.readValueOffset ?? 0));
    // Let the new setting take effect in the reported flows at once.
    this.step(0);
  }

  private standbyControl(): ControlSettings {
    const power = writePointByAddress(REAL_TIME.powerAddress)!;
    const soc = writePointByAddress(REAL_TIME.socAddress)!;
    return { state: 0, power: power.min ?? 0, soc: soc.min ?? 0 };
  }

  /** Sys.GetConfig in the maker's example shape: timezone in minutes east of UTC, MAC as twelve hex digits. */
  private deviceInfo(): Record<string, string | number> {
    const now = new Date();
    const pad = (n: number) => String(n).padStart(2, '0');
    const time = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())} ${pad(now.getHours())}:${pad(now.getMinutes())}:${pad(now.getSeconds())}`;
    const hash = createHash('md5').update(this.serialNumber).digest();
    hash.writeUInt8((hash.readUInt8(0) & 0xfc) | 0x02, 0); // locally administered, unicast
    return {
      hostname: this.blankIdentity ? '' : `${this.type}-${this.serialNumber.slice(-4)}`,
      timezone: -now.getTimezoneOffset(),
      type: this.type,
      sn: this.blankIdentity ? '' : this.serialNumber,
      mac: hash.subarray(0, 6).toString('hex').toUpperCase(),
      fw: this.firmware,
      f_ver: 'CMS V1406.07.002E',
      p_ver: 'P1.0.3',
      time,
      time_stamp: Math.floor(now.getTime() / 1000),
      run_time: Math.floor((performance.now() - this.startedAt) / 1000),
    };
  }

  // ---- battery model ----

  /** Moves the model forward by the real time since the last call, times timeScale. */
  private advance(): void {
    const now = performance.now();
    let remaining = ((now - this.lastAdvance) / 1000) * this.timeScale;
    this.lastAdvance = now;
    // Steps of at least a simulated second, at most ~1000 of them per call.
    const stepSeconds = Math.max(1, remaining / 1000);
    while (remaining > 1e-9) {
      const dt = Math.min(stepSeconds, remaining);
      this.step(dt);
      remaining -= dt;
    }
  }

  private step(dt: number): void {
    this.simSeconds += dt;
    const t = this.simSeconds;
    this.loadW = 420 + 90 * Math.sin((2 * Math.PI * t) / 900) + 30 * Math.sin((2 * Math.PI * t) / 137);
    this.pvW = Math.max(0, 260 + 120 * Math.sin((2 * Math.PI * t) / 3600));

    const { power, floor, ceiling } = this.batteryDemand(this.loadW - this.pvW);
    const capacityWh = this.capacityKwh * 1000;
    const before = this.socExact;
    let after = before - ((power * dt) / 3600 / capacityWh) * 100;
    let actual = power;
    if (power < 0 && after >= ceiling) {
      after = Math.max(before, ceiling);
      actual = 0; // reached the target: the battery stops
    } else if (power > 0 && after <= floor) {
      after = Math.min(before, floor);
      actual = 0;
    }
    this.socExact = Math.min(100, Math.max(0, after));
    this.batteryPowerW = actual;
    this.meterW = this.loadW - this.pvW - actual;

    const movedWh = ((this.socExact - before) / 100) * capacityWh;
    if (movedWh > 0) this.addEnergy(['batteryChargeEnergyDaily', 'batteryChargeEnergyTotal'], movedWh);
    if (movedWh < 0) this.addEnergy(['batteryDischargeEnergyDaily', 'batteryDischargeEnergyTotal', 'acOutputEnergyTotal'], -movedWh);
    if (this.meterW > 0) this.addEnergy(['acInputEnergyTotal'], (this.meterW * dt) / 3600);
    this.addEnergy(['pvEnergyDaily', 'pvEnergyTotal'], (this.pvW * dt) / 3600);
  }

  /** Wanted battery power (positive = discharging) and the SOC limits it stops at. */
  private batteryDemand(netLoadW: number): { power: number; floor: number; ceiling: number } {
    const soc = this.socExact;
    const mode = this.workingMode;
    if (mode === REAL_TIME.mode) {
      const { state, power, soc: target } = this.controlSettings;
      if (state === 1 && soc < target) return { power: -power, floor: 0, ceiling: Math.min(100, target) };
      if (state === 2 && soc > target) return { power, floor: Math.max(0, target), ceiling: 100 };
      return { power: 0, floor: 0, ceiling: 100 };
    }
    if (mode === 1) {
      const backup = Math.min(100, Math.max(0, this.backupSoc));
      if (netLoadW > 0 && soc > backup) {
        return { power: Math.min(netLoadW, this.settingsByName.get('maxAcOutputPower') ?? netLoadW), floor: backup, ceiling: 100 };
      }
      if (netLoadW < 0 && soc < 100) {
        return { power: -Math.min(-netLoadW, this.settingsByName.get('inverterInputLimit') ?? -netLoadW), floor: 0, ceiling: 100 };
      }
    }
    return { power: 0, floor: 0, ceiling: 100 };
  }

  private addEnergy(names: string[], wh: number): void {
    for (const name of names) {
      const unit = (pointByName(name) as ReadPoint | undefined)?.unit?.toLowerCase();
      this.energy.set(name, (this.energy.get(name) ?? 0) + (unit === 'wh' ? wh : wh / 1000));
    }
  }

  /** A read point's value from the model, by catalogue name; string enums as real firmware sends them. */
  private pointValue(point: ReadPoint): number | string | undefined {
    const raw = this.rawValue(point);
    if (raw === undefined) return undefined;
    if (STRING_ENUMS.has(point.name)) return String(raw);
    if (point.type === 'string') return String(raw);
    return raw;
  }

  private rawValue(point: ReadPoint): number | string | undefined {
    const name = point.name;
    const setting = this.settingsByName.get(name);
    if (setting !== undefined) return setting;
    const energy = this.energy.get(name);
    if (energy !== undefined) return round(energy, 2);
    const bp = this.batteryPowerW;
    const soc = Math.round(this.socExact);
    const packVoltage = 48 + this.socExact * 0.06;
    switch (name) {
      case 'serialNumber':
        return this.serialNumber;
      case 'ratedCapacity':
        return this.capacityKwh;
      case 'acInputPower':
        return Math.round(Math.max(0, -bp));
      case 'acOutputPower':
        return Math.round(Math.max(0, bp));
      case 'bypassMode':
        return 0;
      case 'calibrationCycle':
        return 30;
      case 'calibrationStartTime':
        return (2 << 8) | 0; // 02:00
      case 'calibrationChargePower':
        return 800;
      case 'masterSlave':
        return 1002;
      case 'maxChargePower':
        return MODEL_CLASSES[this.modelClass].maxChargePower;
      case 'maxDischargePower':
        return MODEL_CLASSES[this.modelClass].maxDischargePower;
      case 'bypassPower':
        return 0;
      case 'meterStatus':
        return 1000;
      case 'meterPower':
      case 'meterPower1600':
        return Math.round(this.meterW);
      case 'controlStateReadback':
        return 1000 + this.controlSettings.state; // The encoding is not published: an assumption.
      case 'controlSocReadback':
        return this.controlSettings.soc;
      case 'controlPowerReadback':
        return this.controlSettings.power;
      case 'inverterTemperature':
        return round(35 + Math.abs(bp) / 200, 1);
      case 'pack1Temperature1600':
      case 'pack2Temperature1600':
      case 'pack3Temperature1600':
        return 27.4;
      case 'gridVoltage':
        return round(230 + 2 * Math.sin(this.simSeconds / 97), 1);
      case 'gridFrequency':
        return round(50 + 0.02 * Math.sin(this.simSeconds / 53), 2);
      case 'batteryState':
        return bp < 0 ? 1001 : bp > 0 ? 1002 : 1000;
      case 'batteryPower':
        return Math.round(bp);
      case 'batterySoc':
        return soc;
      case 'pvPower':
        return Math.round(this.pvW);
    }
    const firmware = /Firmware$/.exec(name);
    if (firmware) return `V1.${(READ_POINTS.indexOf(point) % 7) + 1}.0${(point.address % 9) + 1}`;
    const unit = /^(mb|pack[1-5])(SerialNumber|Soc|Voltage|Current|Temperature|Cell1Voltage|Cell2Voltage)$/.exec(name);
    if (unit) {
      switch (unit[2]) {
        case 'SerialNumber':
          return `${this.serialNumber}-${(unit[1] ?? '').toUpperCase()}`;
        case 'Soc':
          return soc;
        case 'Voltage':
          return round(packVoltage, 2);
        case 'Current':
          return round(bp / packVoltage, 2);
        case 'Temperature':
          return 25;
        default:
          return round(packVoltage / 16, 3);
      }
    }
    const pv = /^pv([1-4])(Current|Voltage|Power)$/.exec(name);
    if (pv) {
      const share = [0.55, 0.45, 0, 0][Number(pv[1]) - 1] ?? 0;
      const power = Math.round(this.pvW * share);
      const voltage = power > 0 ? 38.5 - Number(pv[1]) * 0.6 : 0;
      if (pv[2] === 'Power') return power;
      if (pv[2] === 'Voltage') return round(voltage, 1);
      return voltage > 0 ? round(power / voltage, 2) : 0;
    }
    // A point added to the catalogue later still gets a value of its type.
    if (point.type === 'string') return '';
    return point.enum?.[0]?.value ?? 0;
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

/** The address discovery answers with: the host itself, or for a wildcard host the first external IPv4 address. */
function advertisableAddress(host: string): string {
  if (host !== '0.0.0.0' && host !== '::') return host;
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) return address.address;
    }
  }
  return '127.0.0.1';
}
