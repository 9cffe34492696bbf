/**
 * The simulated device's state: identity, settings, real-time control, energy counters and the battery model, and
 * the data operations (GetData, SetData) on them. No network here: the HTTP server and discovery call in.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  MAX_ADDRESSES_PER_READ,
  MODEL_CLASSES,
  READ_POINTS,
  REAL_TIME,
  WRITE_POINTS,
  modelAcceptsWrite,
  modelServes,
  pointByName,
  validateWrite,
  validateWriteValue,
  writePointByAddress,
  type ModelClass,
  type ReadPoint,
  type WritePoint,
} from '../points/catalogue';
import type { HouseScenario } from './house';
import type { FeedReading, MeterFeedOptions } from './meter-feed';
import { SharedHouse, type HouseUnit } from './shared-house';

export interface ControlSettings {
  state: number;
  power: number;
  soc: number;
}

/** Pack2..Pack5 and the modular DCDC/BMS 2..5 firmware points: what a single-pack 2000-class model leaves out. */
export function defaultUnsupportedAddresses(): number[] {
  return READ_POINTS.filter((p) => !p.models || p.models.includes('2000'))
    .filter((p) => /^pack[2-5][A-Z]/.test(p.name) || /^(dcdc|bms)[2-5]Firmware$/.test(p.name))
    .map((p) => p.address);
}

/** Read addresses a model class serves: the sources' list for the 1600 class, every other specification point for the 2000 class. */
export function modelAddresses(model: ModelClass): number[] {
  return READ_POINTS.filter((p) => modelServes(model, p)).map((p) => p.address);
}

/** Rated capacity by model class: the 1600 class's from the Home Assistant gen_1 fixture. */
const RATED_CAPACITY_KWH: Record<ModelClass, number> = { '2000': 5.12, '1600': 1.64 };
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

export const round = (value: number, decimals = 0) => {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
};

export interface DeviceModelOptions extends PlantOptions {
  model: ModelClass;
  unsupported: readonly number[];
  serialNumber: string;
  type: string;
  blankIdentity: boolean;
  firmware: string;
  /** The house's options: only without `sharedHouse`. */
  timeScale?: number;
}

/** How the simulated battery and its house behave (SimulatorOptions takes them as they are). */
export interface PlantOptions {
  /** Working mode at start (1, 4 or 5), default 1: 5 leaves the battery idle, so the meter shows the whole house. */
  workingMode?: number;
  /** The house behind the meter; default: a smooth load of 330-540 W and PV of 140-380 W. */
  house?: HouseScenario;
  /** Simulated seconds before the battery starts to follow a new setpoint (or, in self-consumption, the load). */
  deadTimeS?: number;
  /** Time constant of the battery's first-order lag towards its setpoint, simulated s (0: at once). */
  lagS?: number;
  /** The meter's reading (11016, 21028) is the true grid power this many simulated seconds ago. */
  meterDelayS?: number;
  /** The device's meter (11016, 21028) takes a new reading only every this many simulated seconds (0: always new). */
  meterRefreshS?: number;
  /** The device's own meter accessory is set up (7120 reads 1000; false: 1001, disabled). Default true. */
  meterConnected?: boolean;
  /** Windows in which the battery delivers at most maxW, whatever its setpoint. */
  derating?: readonly Derating[];
  /** The battery's capacity (default: the model class's rated capacity). */
  capacityKwh?: number;
  /** SOC at start, % (default 50). */
  initialSoc?: number;
  /** A grid meter outside the device, for a bench to deliver by message (takeMeterReadings). */
  meterFeed?: MeterFeedOptions;
  /**
   * The house and meter this battery shares with others (several units behind one meter): it then owns the house, the
   * clock (timeScale) and the meter's options, which this device must not set. Without one it gets its own.
   */
  sharedHouse?: SharedHouse;
  /** W the unit draws from the house while active (default: the shared house's, 30; alone 0). */
  selfUseW?: number;
  /**
   * One-way efficiency between the AC side and the cells, 0 to 1 (default 1, lossless): a charge stores power ×
   * efficiency, a discharge takes power ÷ efficiency from the cells (field notes: about 0.91 at 1000 W).
   */
  efficiency?: number;
}

/** A window in which the battery accepts any setpoint but delivers at most `maxW` either way (cold, SOC stop, a smaller unit). */
export interface Derating {
  atS: number;
  durationS: number;
  maxW: number;
}

interface Demand {
  power: number;
  floor: number;
  ceiling: number;
}

const IDLE: Demand = { power: 0, floor: 0, ceiling: 100 };
/** In standby a unit still moving at least this much (its lag) counts as active. */
const ACTIVE_W = 20;

/** The house of a battery alone behind its meter: no self-use, so a single device's figures are what they always were. */
function ownHouse(options: DeviceModelOptions): SharedHouse {
  return new SharedHouse({
    house: options.house,
    timeScale: options.timeScale,
    meterDelayS: options.meterDelayS,
    meterRefreshS: options.meterRefreshS,
    meterFeed: options.meterFeed,
    selfUseW: 0,
  });
}

export class DeviceModel implements HouseUnit {
  readonly modelClass: ModelClass;
  readonly unsupported: Set<number>;
  readonly serialNumber: string;
  readonly capacityKwh: number;
  private readonly type: string;
  private readonly blankIdentity: boolean;
  readonly firmware: string;
  /** The house, its meter and clock: shared with the other batteries behind the same meter, if any. */
  readonly house: SharedHouse;
  readonly selfUseW: number;
  private readonly efficiency: number;
  private readonly deadTimeS: number;
  private readonly lagS: number;
  private readonly derating: readonly Derating[];
  private readonly meterConnected: boolean;
  /** Wanted battery power by simulated time, kept for the dead time. */
  private readonly demands: { t: number; v: Demand }[] = [];
  startedAt = performance.now();

  // Battery model, in simulated seconds since start.
  socExact = 50;
  batteryPowerW = 0;
  /** The converter runs: it acts on a command to move power, or its power has not yet died away (ACTIVE_W). */
  active = false;
  /** Switched off (DeviceSimulator.switchOff): moves no power and answers nothing. */
  switchedOff = false;
  /** Wh into the battery over the last step (negative: out of it). */
  private movedWh = 0;
  readonly settingsByName = new Map<string, number>();
  controlSettings: ControlSettings;
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

  constructor(options: DeviceModelOptions) {
    this.modelClass = options.model;
    const served = new Set(modelAddresses(this.modelClass));
    this.unsupported = new Set([...options.unsupported, ...READ_POINTS.map((p) => p.address).filter((a) => !served.has(a))]);
    this.capacityKwh = options.capacityKwh ?? RATED_CAPACITY_KWH[this.modelClass];
    this.serialNumber = options.serialNumber;
    this.type = options.type;
    this.blankIdentity = options.blankIdentity;
    this.firmware = options.firmware;
    this.house = options.sharedHouse ?? ownHouse(options);
    this.selfUseW = options.selfUseW ?? this.house.selfUseW;
    this.efficiency = options.efficiency ?? 1;
    if (!(this.efficiency > 0 && this.efficiency <= 1)) throw new RangeError('efficiency must be in (0, 1]');
    this.deadTimeS = options.deadTimeS ?? 0;
    this.lagS = options.lagS ?? 0;
    this.derating = options.derating ?? [];
    this.meterConnected = options.meterConnected ?? true;
    for (const [name, value] of [
      ['deadTimeS', this.deadTimeS],
      ['lagS', this.lagS],
      ['selfUseW', this.selfUseW],
    ] as const)
      if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a number >= 0`);
    if (!(this.capacityKwh > 0)) throw new RangeError('capacityKwh must be a number > 0');
    if (options.initialSoc !== undefined) {
      if (!(options.initialSoc >= 0 && options.initialSoc <= 100)) throw new RangeError('initialSoc must be 0 to 100');
      this.socExact = options.initialSoc;
    }
    for (const d of this.derating)
      if (!(d.atS >= 0 && d.durationS > 0 && d.maxW >= 0)) throw new RangeError('derating: atS >= 0, durationS > 0, maxW >= 0');
    for (const write of WRITE_POINTS) {
      if (write.realTimeOnly) continue;
      const name = write.readAs ?? write.name;
      const firstOption = write.enum?.[0];
      const initial = INITIAL_SETTINGS[name] ?? (firstOption ? firstOption.value + (write.readValueOffset ?? 0) : (write.min ?? 0));
      this.settingsByName.set(name, initial);
    }
    if (options.workingMode !== undefined) this.changeWorkingMode(options.workingMode);
    this.controlSettings = this.standbyControl();
    this.house.join(this);
    this.house.step(0);
  }

  /** The device starts; the house's clock with the first of its devices. */
  start(): void {
    this.startedAt = performance.now();
    this.house.start();
  }

  get workingMode(): number {
    return this.settingsByName.get('workingMode')!;
  }

  changeWorkingMode(mode: number): void {
    const point = pointByName('workingModeSetting') as WritePoint;
    this.settingsByName.set('workingMode', validateWriteValue(point, mode, 'workingMode'));
  }

  /** A restart's loss of the real-time command: self-consumption (mode 1), or standby in real-time control. */
  dropCommand(to: 'self-consumption' | 'standby'): void {
    if (to === 'self-consumption') this.changeWorkingMode(1);
    else this.controlSettings = this.standbyControl();
    this.house.step(0);
  }

  get backupSoc(): number {
    return this.settingsByName.get('backupSoc')!;
  }

  /** The current read value as the device would report it; undefined for unsupported or unknown addresses. */
  value(address: number): number | string | undefined {
    this.advance();
    if (this.unsupported.has(address)) return undefined;
    const point = READ_POINTS.find((p) => p.address === address);
    return point ? this.pointValue(point) : undefined;
  }

  // ---- data operations ----

  /** GetData's answer, or undefined for a bad request (400). */
  getData(params: Record<string, unknown>): Record<string, number | string> | undefined {
    const t = params.t;
    if (!Array.isArray(t) || !t.every((a) => typeof a === 'number' && Number.isInteger(a))) return undefined;
    if (t.length > MAX_ADDRESSES_PER_READ) return undefined;
    const answer: Record<string, number | string> = {};
    for (const address of t as number[]) {
      if (this.unsupported.has(address)) continue;
      const point = READ_POINTS.find((p) => p.address === address);
      if (!point) continue;
      const value = this.pointValue(point);
      if (value !== undefined) answer[String(address)] = value;
    }
    return answer;
  }

  /** SetData: true when carried out (result true). */
  setData(params: Record<string, unknown>): boolean {
    if (params.f !== undefined && params.f !== 16) return false;
    const point = typeof params.t === 'number' ? writePointByAddress(params.t) : undefined;
    if (!point) return false;
    const v = params.v;
    // Stricter than the client-side check: the device takes numbers only, in an array.
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'number')) return false;
    let values: number[];
    try {
      values = validateWrite(point, v);
    } catch {
      return false;
    }
    if (point.realTimeOnly && this.workingMode !== REAL_TIME.mode) return false;
    if (!this.modelAccepts(point, values)) return false;
    this.applyWrite(point, values);
    return true;
  }

  /** The 1600 class lists only the mode and real-time points, with its own power range (maker's BK1600 tab). */
  private modelAccepts(point: WritePoint, values: number[]): boolean {
    if (!modelAcceptsWrite(this.modelClass, point)) return false;
    if (this.modelClass !== '1600') return true;
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
    this.house.step(0);
  }

  private standbyControl(): ControlSettings {
    const power = writePointByAddress(REAL_TIME.powerAddress)!;
    const soc = writePointByAddress(REAL_TIME.socAddress)!;
    return { state: 0, power: power.min ?? 0, soc: soc.min ?? 0 };
  }

  /** Sys.GetConfig in the maker's example shape: timezone in minutes east of UTC, MAC as twelve hex digits. */
  deviceInfo(): Record<string, string | number> {
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

  /** Moves the model (the whole house) forward by the real time since the last call, times timeScale. */
  advance(): void {
    this.house.advance();
  }

  /** Moves the model (the whole house) forward by `seconds` of simulated time. */
  run(seconds: number): void {
    this.house.run(seconds);
  }

  /** The house steps the battery: it acts on what it was asked dead-time ago (over this step: at its start), with a first-order lag. */
  stepBattery(t: number, dt: number, netLoadW: number): number {
    if (this.switchedOff) {
      // Switched off: no power, no self-use, the SOC stays.
      this.batteryPowerW = 0;
      this.active = false;
      this.movedWh = 0;
      return 0;
    }
    const demand = this.classLimited(this.batteryDemand(netLoadW));
    const { power: wanted, floor, ceiling } = this.delayed(this.demands, t, this.deadTimeS > 0 ? this.deadTimeS + dt : 0, demand, IDLE);
    const cap = this.deliverable(t);
    const target = Math.max(-cap, Math.min(cap, wanted));
    let power = this.lagS > 0 ? this.batteryPowerW + (target - this.batteryPowerW) * (1 - Math.exp(-dt / this.lagS)) : target;
    const capacityWh = this.capacityKwh * 1000;
    const before = this.socExact;
    const cells = power > 0 ? power / this.efficiency : power * this.efficiency;
    let after = before - ((cells * dt) / 3600 / capacityWh) * 100;
    if (power < 0 && after >= ceiling) {
      after = Math.max(before, ceiling);
      power = 0; // reached the target: the battery stops
    } else if (power > 0 && after <= floor) {
      after = Math.min(before, floor);
      power = 0;
    }
    this.socExact = Math.min(100, Math.max(0, after));
    this.batteryPowerW = power;
    // A lag's tail below a few watts is the model's, not a running converter's.
    this.active = wanted !== 0 || Math.abs(power) >= ACTIVE_W;
    this.movedWh = ((this.socExact - before) / 100) * capacityWh;
    return power;
  }

  /** Energy of the last step into the counters, with the house's grid and PV. */
  account(dt: number): void {
    const movedWh = this.movedWh;
    if (movedWh > 0) this.addEnergy(['batteryChargeEnergyDaily', 'batteryChargeEnergyTotal'], movedWh);
    if (movedWh < 0) this.addEnergy(['batteryDischargeEnergyDaily', 'batteryDischargeEnergyTotal', 'acOutputEnergyTotal'], -movedWh);
    if (this.house.gridW > 0) this.addEnergy(['acInputEnergyTotal'], (this.house.gridW * dt) / 3600);
    this.addEnergy(['pvEnergyDaily', 'pvEnergyTotal'], (this.house.pvW * dt) / 3600);
  }

  /** The most the battery delivers at `t`, W, either way. */
  private deliverable(t: number): number {
    let cap = Infinity;
    for (const d of this.derating) if (t >= d.atS && t < d.atS + d.durationS) cap = Math.min(cap, d.maxW);
    return cap;
  }

  /** The meter feed's readings delivered by now (none without a feed). */
  takeFeed(): FeedReading[] {
    return this.house.takeFeed();
  }

  /** Records `value` at `t` and gives the one in force `delay` before: `initial` while nothing is that old. */
  private delayed<T>(entries: { t: number; v: T }[], t: number, delay: number, value: T, initial: T): T {
    if (delay === 0) return value;
    if (entries.length > 0 && entries[entries.length - 1]!.t === t) entries[entries.length - 1]!.v = value;
    else entries.push({ t, v: value });
    // Times are sums of steps: a nanosecond's tolerance.
    const then = t - delay + 1e-9;
    while (entries.length > 1 && entries[1]!.t <= then) entries.shift();
    return entries[0]!.t <= then ? entries[0]!.v : initial;
  }

  /** The model class's charge and discharge limits. */
  private classLimited(demand: Demand): Demand {
    const limits = MODEL_CLASSES[this.modelClass];
    return { ...demand, power: Math.min(limits.maxDischargePower, Math.max(-limits.maxChargePower, demand.power)) };
  }

  /** Wanted battery power (positive = discharging) and the SOC limits it stops at. */
  private batteryDemand(netLoadW: number): Demand {
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
  pointValue(point: ReadPoint): number | string | undefined {
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
        return this.meterConnected ? 1000 : 1001;
      case 'meterPower':
      case 'meterPower1600':
        return Math.round(this.house.meterW);
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
        return round(230 + 2 * Math.sin(this.house.simSeconds / 97), 1);
      case 'gridFrequency':
        return round(50 + 0.02 * Math.sin(this.house.simSeconds / 53), 2);
      case 'batteryState':
        return bp < 0 ? 1001 : bp > 0 ? 1002 : 1000;
      case 'batteryPower':
        return Math.round(bp);
      case 'batterySoc':
        return soc;
      case 'pvPower':
        return Math.round(this.house.pvW);
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
      const power = Math.round(this.house.pvW * share);
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
