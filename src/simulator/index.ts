/**
 * A simulated battery-storage device serving the local API (device-api.md, field notes) on its own HTTP port and UDP
 * discovery port. This class puts the parts together: the device's state and battery (simulator-device.ts), the HTTP
 * and authentication server (simulator-server.ts), discovery (simulator-discovery.ts) and its mDNS announcement
 * (simulator-mdns.ts).
 */
import { type ModelClass } from '../points/catalogue';
import { checkPassword } from '../device/password-crypto';
import { DeviceModel, defaultUnsupportedAddresses, type ControlSettings, type PlantOptions } from './device';
import type { FeedReading } from './meter-feed';
import type { SharedHouse } from './shared-house';
import { DiscoveryResponder, advertisableAddress } from './discovery';
import { startMdnsResponder, type MdnsResponder } from './mdns';
import { FAULTS, SimulatorHttp, type Fault, type SimulatorAuth, type SimulatorStats } from './server';
import net from 'node:net';

export { defaultUnsupportedAddresses, modelAddresses, type ControlSettings, type Derating, type PlantOptions } from './device';
export { MeterFeed, type FeedReading, type MeterFeedOptions } from './meter-feed';
export { SharedHouse, type HouseUnit, type SharedHouseOptions } from './shared-house';
export { DEMO_HOUSE, HOUSE_PRESETS, House, seededRandom, type ApplianceCycle, type HouseEvent, type HouseScenario } from './house';
export { FAULTS, type Fault, type SimulatorAuth, type SimulatorStats, type Violation } from './server';

export const SIMULATOR_AUTH_MODES: readonly SimulatorAuth[] = ['digest', 'none'];

export const SIMULATOR_MODELS: readonly ModelClass[] = ['2000', '1600'];

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
export interface SimulatorOptions extends PlantOptions {
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
  /** Announce the device over mDNS as newer firmware does (src/simulator/mdns.ts). Multicast: off by default. */
  mdns?: boolean;
  slowDelayMs?: number;
  /**
   * Every request is carried out when it arrives and answered this long after (the specification's response time is
   * about 1 s): ms, or [min, max].
   */
  latencyMs?: number | readonly [number, number];
  /** A request that arrives under the minimum interval after the one before, or while one is answered, gets 503 and is not carried out. */
  rejectEarly?: boolean;
}

/** Options that belong to the house when several devices share one. */
const HOUSE_OPTIONS = ['house', 'timeScale', 'meterDelayS', 'meterRefreshS', 'meterFeed'] as const;

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
  deadTimeS: 0,
  lagS: 0,
  meterDelayS: 0,
} as const;

export class DeviceSimulator {
  private readonly host: string;
  private readonly requestedPort: number;
  private readonly requestedUdpPort: number | null;
  private readonly device: DeviceModel;
  private readonly http: SimulatorHttp;
  private readonly discovery: DiscoveryResponder;
  private readonly mdnsWanted: boolean;
  private mdnsResponder: MdnsResponder | undefined;

  /** Listener changes (start, offline, back online, stop) run one after another. */
  private listenerChain: Promise<void> = Promise.resolve();
  private started = false;
  private stopped = false;
  private stopPromise: Promise<void> | undefined;

  constructor(options: SimulatorOptions = {}) {
    const auth = options.auth ?? SIMULATOR_DEFAULTS.auth;
    if (!SIMULATOR_AUTH_MODES.includes(auth)) throw new RangeError(`auth must be one of ${SIMULATOR_AUTH_MODES.join(', ')}`);
    this.host = options.host ?? SIMULATOR_DEFAULTS.host;
    this.requestedPort = options.port ?? SIMULATOR_DEFAULTS.port;
    this.requestedUdpPort = options.udpPort === undefined ? SIMULATOR_DEFAULTS.udpPort : options.udpPort;
    const defaultPassword = options.defaultPassword ?? SIMULATOR_DEFAULTS.defaultPassword;
    checkPassword(defaultPassword, 'default password');
    if (options.password !== undefined) checkPassword(options.password, 'password');
    if (options.sharedHouse) {
      const clash = HOUSE_OPTIONS.filter((name) => options[name] !== undefined);
      if (clash.length > 0) throw new RangeError(`${clash.join(', ')}: set on the shared house, not on a device that joins it`);
    }
    const timeScale = options.sharedHouse ? options.sharedHouse.timeScale : (options.timeScale ?? SIMULATOR_DEFAULTS.timeScale);
    if (!Number.isFinite(timeScale) || timeScale < 0) throw new RangeError('timeScale must be a number >= 0');
    const model = options.model ?? SIMULATOR_DEFAULTS.model;
    if (!SIMULATOR_MODELS.includes(model)) throw new RangeError(`model must be one of ${SIMULATOR_MODELS.join(', ')}`);
    const latency = options.latencyMs ?? 0;
    const latencyRange: readonly [number, number] = typeof latency === 'number' ? [latency, latency] : latency;
    if (!(latencyRange[0] >= 0 && latencyRange[1] >= latencyRange[0]))
      throw new RangeError('latencyMs must be >= 0, or [min, max] with min <= max');

    this.device = new DeviceModel({
      model,
      unsupported: options.unsupported ?? defaultUnsupportedAddresses(),
      serialNumber: options.serialNumber ?? SIMULATOR_DEFAULTS.serialNumber,
      type: options.type ?? SIMULATOR_DEFAULTS.type,
      blankIdentity: options.blankIdentity ?? false,
      firmware: options.firmware ?? SIMULATOR_DEFAULTS.firmware,
      timeScale,
      workingMode: options.workingMode,
      house: options.house,
      deadTimeS: options.deadTimeS,
      lagS: options.lagS,
      meterDelayS: options.meterDelayS,
      meterRefreshS: options.meterRefreshS,
      derating: options.derating,
      meterConnected: options.meterConnected,
      capacityKwh: options.capacityKwh,
      initialSoc: options.initialSoc,
      meterFeed: options.meterFeed,
      sharedHouse: options.sharedHouse,
      selfUseW: options.selfUseW,
      efficiency: options.efficiency,
    });
    this.http = new SimulatorHttp(
      {
        auth,
        host: this.host,
        username: options.username ?? SIMULATOR_DEFAULTS.username,
        password: options.password ?? defaultPassword,
        defaultState: options.password === undefined,
        namespace: options.namespace ?? SIMULATOR_DEFAULTS.namespace,
        minIntervalMs: options.minIntervalMs ?? SIMULATOR_DEFAULTS.minIntervalMs,
        requireChallenge: options.requireChallenge ?? false,
        slowDelayMs: options.slowDelayMs ?? SIMULATOR_DEFAULTS.slowDelayMs,
        latency: latencyRange,
        rejectEarly: options.rejectEarly === true,
      },
      this.device,
    );
    this.mdnsWanted = options.mdns ?? false;
    this.discovery = new DiscoveryResponder(
      {
        serialNumber: this.device.serialNumber,
        firmware: this.device.firmware,
        advertisedIp: options.advertisedIp ?? advertisableAddress(this.host),
      },
      () => this.http.fault !== 'offline',
      () => this.http.record.udpQueries++,
    );
  }

  // ---- lifecycle ----

  async start(): Promise<void> {
    if (this.started) throw new Error('The simulator was already started');
    this.started = true;
    this.device.start();
    try {
      await this.enqueue(() => this.listenHttp(this.requestedPort));
      if (this.http.fault === 'offline') await this.enqueue(() => this.http.close());
      if (this.requestedUdpPort !== null) await this.discovery.listen(this.host, this.requestedUdpPort);
      if (this.mdnsWanted) {
        const { serialNumber, firmware } = this.device;
        this.mdnsResponder = startMdnsResponder({ port: this.http.listeningPort, serialNumber, firmware });
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
        this.http.clearTimers();
        await this.enqueue(() => this.http.close());
        await this.discovery.close();
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
    return this.http.listeningPort;
  }

  get udpPort(): number | undefined {
    return this.discovery.port;
  }

  get url(): string {
    const host = net.isIPv6(this.host) ? `[${this.host}]` : this.host;
    return `http://${host}:${this.http.listeningPort}`;
  }

  // ---- faults and records ----

  /** `count`: how many following requests get the fault (for 'resultFalse': SetData/User.SetConfig answers; ignored for 'offline'). */
  setFault(fault: Fault | null, count?: number): void {
    if (fault !== null && !FAULTS.includes(fault)) throw new RangeError(`Unknown fault ${String(fault)}; one of ${FAULTS.join(', ')}`);
    if (count !== undefined && (!Number.isInteger(count) || count < 1)) throw new RangeError('count must be a positive integer');
    const wasOffline = this.http.fault === 'offline';
    this.http.fault = fault;
    this.http.faultRemaining = fault === 'offline' ? undefined : count;
    if (!this.started || this.stopped) return;
    if (fault === 'offline' && !wasOffline) this.enqueue(() => this.http.close()).catch(() => undefined);
    if (fault !== 'offline' && wasOffline) this.enqueue(() => this.listenHttp(this.http.listeningPort)).catch(() => undefined);
  }

  /** The unit is switched off: its battery stops at once and it answers nothing (offline) until the simulator stops. */
  switchOff(): void {
    this.device.advance();
    this.device.switchedOff = true;
    this.setFault('offline');
  }

  get currentFault(): Fault | null {
    return this.http.fault;
  }

  get stats(): SimulatorStats {
    const r = this.http.record;
    return {
      ...r,
      byOperation: { ...r.byOperation },
      violations: r.violations.map((v) => ({ ...v })),
      protocolErrors: [...r.protocolErrors],
    };
  }

  resetStats(): void {
    this.http.resetStats();
  }

  // ---- model state ----

  get password(): string {
    return this.http.currentPassword;
  }

  get hasDefaultPassword(): boolean {
    return this.http.defaultState;
  }

  isUnsupported(address: number): boolean {
    return this.device.unsupported.has(address);
  }

  /** The current read value as the device would report it; undefined for unsupported or unknown addresses. */
  value(address: number): number | string | undefined {
    return this.device.value(address);
  }

  get workingMode(): number {
    return this.device.workingMode;
  }

  /** The owner changes the working mode in the app: no request of the client's shows it. */
  changeWorkingMode(mode: number): void {
    this.device.changeWorkingMode(mode);
  }

  /**
   * The device restarts or reconnects mid-run and drops its real-time command: back in self-consumption (working mode
   * 1), or still in real-time control but in standby. No request of the client's shows it.
   */
  restart(to: 'self-consumption' | 'standby'): void {
    this.device.advance();
    this.device.dropCommand(to);
  }

  /** Reported SOC (integer %). */
  get soc(): number {
    this.device.advance();
    return Math.round(this.device.socExact);
  }

  get exactSoc(): number {
    this.device.advance();
    return this.device.socExact;
  }

  /** W, positive = discharging. */
  get batteryPower(): number {
    this.device.advance();
    return Math.round(this.device.batteryPowerW);
  }

  /** The meter's reading, W, positive = import (meterDelayS behind the true grid power). */
  get meterPower(): number {
    this.device.advance();
    return Math.round(this.device.house.meterW);
  }

  /** The simulated second the meter's reading shows (its delay and refresh). */
  get meterSampledSeconds(): number {
    this.device.advance();
    return this.device.house.meterSampledS;
  }

  /** The meter feed's readings delivered since the last call, oldest first (none without `meterFeed`). */
  takeMeterReadings(): FeedReading[] {
    this.device.advance();
    return this.device.takeFeed();
  }

  /** The true grid power now: house load - PV - battery power (every unit's, with their self-use), W, positive = import (unrounded). */
  get gridPower(): number {
    this.device.advance();
    return this.device.house.gridW;
  }

  /** The house and meter this device is in (shared with the other units behind the meter, if any). */
  get sharedHouse(): SharedHouse {
    return this.device.house;
  }

  /** True while the converter runs (commanded to move power, or its power not yet died away): it draws its self-use. */
  get active(): boolean {
    this.device.advance();
    return this.device.active;
  }

  /** The house's load now, W (without the units' self-use). */
  get houseLoad(): number {
    this.device.advance();
    return this.device.house.loadW;
  }

  /** Simulated seconds since the simulator was made. */
  get simulatedSeconds(): number {
    this.device.advance();
    return this.device.house.simSeconds;
  }

  /** Simulated seconds per real second; 0 freezes the model (then `tick` moves it). Shared: the whole house's clock. */
  get timeScale(): number {
    return this.device.house.timeScale;
  }

  set timeScale(scale: number) {
    if (!Number.isFinite(scale) || scale < 0) throw new RangeError('timeScale must be a number >= 0');
    this.device.advance();
    this.device.house.timeScale = scale;
  }

  /** Moves the model forward by `seconds` of simulated time at once (for a frozen simulator, timeScale 0). */
  tick(seconds: number): void {
    if (!Number.isFinite(seconds) || seconds < 0) throw new RangeError('seconds must be a number >= 0');
    this.device.advance();
    this.device.run(seconds);
  }

  /**
   * A SetData in process, as the device would carry it out over HTTP (same checks, true when accepted), without a
   * request: for benchmarks and tests that steer the model directly. Not recorded in the stats.
   */
  setData(address: number, values: readonly number[]): boolean {
    this.device.advance();
    return this.device.setData({ f: 16, t: address, v: [...values] });
  }

  get pvPower(): number {
    this.device.advance();
    return Math.round(this.device.house.pvW);
  }

  /** The last real-time control write: state (0 standby, 1 charge, 2 discharge), power W, target SOC %. */
  get control(): ControlSettings {
    return { ...this.device.controlSettings };
  }

  get controlState(): number {
    return this.device.controlSettings.state;
  }

  get controlPower(): number {
    return this.device.controlSettings.power;
  }

  get controlSoc(): number {
    return this.device.controlSettings.soc;
  }

  get backupSoc(): number {
    return this.device.backupSoc;
  }

  get ratedCapacityKwh(): number {
    return this.device.capacityKwh;
  }

  get model(): ModelClass {
    return this.device.modelClass;
  }

  /** Settings by point name, as the paired read points report them (write-only settings by write-point name). */
  get settings(): Record<string, number> {
    return Object.fromEntries(this.device.settingsByName);
  }

  // ---- listeners ----

  private enqueue(operation: () => Promise<void>): Promise<void> {
    const next = this.listenerChain.then(operation);
    this.listenerChain = next.catch(() => undefined);
    return next;
  }

  private listenHttp(port: number): Promise<void> {
    return this.stopped ? Promise.resolve() : this.http.listen(port);
  }
}
