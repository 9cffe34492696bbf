/**
 * What the zero feed-in controller (src/control/zero-feed-in.ts) steers: a plant that takes a total setpoint, gives
 * back battery power and SOC, hands back to the device's own self-consumption, and says what other writers did. One
 * device (DevicePlant, here: a session, its RealTimeController and the shared queue) or several behind one meter
 * (GroupPlant, src/control/group-plant.ts). The controller's regulator steers the plant's total either way.
 */
import {
  REAL_TIME,
  REPORTED_LIMIT_ADDRESSES,
  WORKING_MODE_READ_ADDRESS,
  pointByName,
  writePointByAddress,
  type PowerLimits,
} from '../points/catalogue';
import type { ClientSession } from '../device/client';
import {
  CONTROL_DEFAULTS,
  CONTROL_LIMITS,
  RealTimeController,
  STATE_CODES,
  parseControl,
  type ControlCommand,
  type ControllerSettings,
} from './control';
import { gridReading, type RegulatorSettings } from './regulator';

/** A setpoint's outcome: superseded by a newer one, or the signed watts (6000's sign) now in force. */
export interface PlantOutcome {
  superseded: boolean;
  watts: number;
  /** The device had left real-time control since the plant's last command (refused it): switched back for this one. */
  modeRestored?: boolean;
}

/** One read of the plant: battery power (W, positive discharging), SOC (%) and the device's meter, where read. */
export interface PlantReading {
  battery?: number;
  soc?: number;
  meter?: number;
  /** The discharge floor in force (%): Discharge to, or above it the device's backup SOC + BACKUP_MARGIN. */
  dischargeSoc?: number;
  /** What the battery may still move by itself under the leash (Wh), where its capacity is known. */
  leashWh?: number;
}

/** Another writer's last change (when): it handed back (a working mode other than real-time), or the setpoint now. */
export interface OthersWrite {
  at: number;
  handedBack: boolean;
  /** W, signed like 6000, where known. */
  watts?: number;
}

export interface SendOptions {
  /** Ahead of waiting reads (an overdrive's next step). */
  urgent: boolean;
  /** Called once the first request of it goes out. */
  onStart: () => void;
  /** The SOC a charge or discharge stops at, where not the settings' (the charge mode's). */
  soc?: number;
  /** An overdrive's setpoint: the one it heads to (a group stages its units by that, not by the pulse). */
  steady?: number;
  /** Sent even where the device acknowledged the same command lately (it dropped it since). */
  force?: boolean;
}

export interface ReadOptions {
  signal?: AbortSignal;
  onStart?: () => void;
}

export interface BatteryPlant {
  /** The shortest time between two requests to one device (ms): an overdrive's halves are that far apart. */
  readonly minIntervalMs: number;
  /** The most the plant charges and discharges, W. */
  readonly limits: PowerLimits;
  /** Reads what the working mode is (an earlier deployment's knowledge may be stale). */
  learn(): Promise<void>;
  /** Sends a total setpoint (W, signed like 6000). Rejects on a failure of the whole plant. */
  apply(watts: number, options: SendOptions): Promise<PlantOutcome>;
  /** `signal` withdraws the read while it waits (a write needs the slot); `onStart` when its request goes out. */
  read(withMeter: boolean, options?: ReadOptions): Promise<PlantReading>;
  /** Hands the battery back to the device's own self-consumption. */
  selfConsumption(): Promise<void>;
  /**
   * Grid charging (1143) on for the charge mode where it is off; off: back to what it was before. False where a device
   * has no such setting (it answers no 2618: the 1600 class, which refuses 1143): nothing is written there.
   */
  gridCharging(on: boolean): Promise<boolean>;
  /** A change by another writer in this process after `since` (performance.now()), if any. */
  othersWrote(since: number): OthersWrite | undefined;
  /** Whether the command in force would carry another SOC field now (the leash moves with the SOC). */
  leashMoved?(): boolean;
  /**
   * Whether the device still holds the plant's last command: false where it dropped it (a working mode other than
   * real-time control, or a read-back of another command); undefined where nothing tells (no read-back points).
   */
  holdsCommand?(): Promise<boolean | undefined>;
  /** Stops the plant's own timers (the controller closes; a hand-back may still follow). */
  close?(): void;
  /** Its battery's power at `at` (ms) where it knows it better than the regulator's models (a group), else undefined. */
  estimate?(at: number): number | undefined;
  /** With estimate(): the units that make up the plant now (a group's, in its split), named in one string. */
  members?(): string;
  /**
   * A group: `total` gives the total to split over the units left when one leaves (undefined: the total in force), as
   * the controller's regulator reads the last reading now.
   */
  whenUnitLeaves?(total: () => number | undefined): void;
  /** A group: what the controller says as it goes (see PlantSteering). */
  steeredBy?(steering: PlantSteering): void;
  /** An exit that keeps the battery as it is: a group's own pulses end on the setpoints they lead to. */
  keep?(): Promise<void>;
  /** Whether the device's own meter is connected (7120; a group: its first unit's, whose meter it reads), if known. */
  meterConnected?(): Promise<boolean | undefined>;
}

/** What a group plant asks its controller between the controller's setpoints. */
export interface PlantSteering {
  /**
   * Whether the controller steers now: not closed, disabled, handing back or timed out. Only then does the plant
   * split the total again by itself (a unit out or back, a reversal's second half, the SOCs moved).
   */
  steering(): boolean;
  /** The grid-charging floor (W, signed like 6000): no setpoint of the plant's, its pulses neither, below it. */
  floor(): number;
}

const address = (name: string) => pointByName(name)!.address;
const METER = address('meterPower');
const METER_1600 = address('meterPower1600');
const METER_STATUS = address('meterStatus');
/** 7120: 1000 the meter is enabled, 1001 disabled (the meter accessory missing or not set up). */
const METER_DISABLED = 1001;
const BATTERY = address('batteryPower');
const SOC = address('batterySoc');
const BACKUP_SOC = address('backupSoc');
const RATED_CAPACITY = address('ratedCapacity');
const STATE_READ_BACK = address('controlStateReadback');
const READ_BACK = [STATE_READ_BACK, address('controlSocReadback'), address('controlPowerReadback')];
/**
 * The device recharges itself below its backup SOC less this and discharges again above it plus this (field notes): a
 * discharge floor under backup + this fights the device.
 */
export const BACKUP_MARGIN = 2;
/**
 * A SOC known for longer than this (ms) is read again before a command's SOC field is taken from it: a little more
 * than the controller's reads of 6000 and 6002 while it does not steer (30 s).
 */
const SOC_FRESH_MS = 35000;
const SELF_CONSUMPTION = 1;
const GRID_CHARGING = address('gridCharging');
const GRID_CHARGING_SETTING = address('gridChargingSetting');
/** 2618 reads 1000/1001 where 1143 takes 0/1. */
const GRID_CHARGING_READ_OFFSET = writePointByAddress(GRID_CHARGING_SETTING)!.readValueOffset ?? 0;

/** The signed watts a command gives the battery (6000's sign): what the device acknowledged. */
function signedPower(command: ControlCommand): number {
  return command.state === 'charge' ? -command.power : command.state === 'discharge' ? command.power : 0;
}

/** One device: its session (the shared queue), its own RealTimeController and limits. */
export class DevicePlant implements BatteryPlant {
  private readonly controller: RealTimeController;
  private readonly controlOptions: ControllerSettings;
  /** What 1143 goes back to when the charge mode ends, where it switched grid charging on. */
  private gridChargingRestore: number | undefined;
  /** The device's backup SOC (6105) and rated capacity (142), as last read. */
  private backupSoc: number | undefined;
  private capacityWh: number | undefined;
  /** The command this plant's last setpoint gave the device; `leashed`: its SOC field is the leash's. */
  private inForce: { watts: number; code: number; soc: number; leashed: boolean } | undefined;

  constructor(
    readonly session: ClientSession,
    private readonly settings: Pick<RegulatorSettings, 'minPower' | 'chargeSoc' | 'dischargeSoc' | 'leash'>,
  ) {
    this.controlOptions = {
      power: settings.minPower,
      chargeSoc: settings.chargeSoc,
      dischargeSoc: settings.dischargeSoc,
      clamp: true,
      // The regulator keeps within its own maximum powers; the device's limits are the last check.
      limits: session.limits,
      switchMode: true,
      repeatMs: CONTROL_DEFAULTS.repeatSeconds * 1000,
      modeCheckMs: CONTROL_DEFAULTS.modeCheckSeconds * 1000,
    };
    this.controller = new RealTimeController(session, this.controlOptions);
  }

  get minIntervalMs(): number {
    return this.session.client.minIntervalMs;
  }

  get limits(): PowerLimits {
    return this.session.limits;
  }

  async learn(): Promise<void> {
    await this.controller.learnMode();
  }

  async apply(watts: number, options: SendOptions): Promise<PlantOutcome> {
    const leashed = options.soc === undefined && this.settings.leash !== undefined && Math.abs(watts) >= CONTROL_LIMITS.power.min;
    const socNow = leashed ? await this.socNow() : undefined;
    const soc = options.soc ?? (socNow === undefined ? undefined : this.leashSoc(watts, socNow));
    const command = parseControl(soc === undefined ? watts : { power: watts, soc }, this.controlOptions);
    const outcome = await this.controller.apply(command, options.force === true, undefined, options);
    const superseded = outcome.status === 'superseded';
    const modeRestored = outcome.modeChanged && this.inForce !== undefined;
    if (!superseded) this.inForce = { watts: signedPower(command), code: command.code, soc: command.soc, leashed: socNow !== undefined };
    return { superseded, watts: signedPower(command), modeRestored };
  }

  /**
   * The discharge floor: Discharge to, raised to the device's backup SOC + BACKUP_MARGIN where that is higher (under it
   * the device recharges itself against the discharge).
   */
  get dischargeSoc(): number {
    const backup = this.backupSoc;
    const { dischargeSoc } = this.settings;
    return backup === undefined ? dischargeSoc : Math.max(dischargeSoc, Math.min(CONTROL_LIMITS.soc.max, backup + BACKUP_MARGIN));
  }

  /**
   * A command's SOC field under the leash: a discharge stops `leash` points under the SOC now (not under the floor), a
   * charge `leash` over it (not over Charge to); within what 47017 takes.
   */
  private leashSoc(watts: number, soc: number): number {
    const leash = this.settings.leash ?? 0;
    const field =
      watts > 0 ? Math.max(this.dischargeSoc, Math.round(soc - leash)) : Math.min(this.settings.chargeSoc, Math.round(soc + leash));
    return Math.min(CONTROL_LIMITS.soc.max, Math.max(CONTROL_LIMITS.soc.min, field));
  }

  /** The SOC as the device reports it: known within SOC_FRESH_MS, else read again; undefined where the read fails. */
  private async socNow(): Promise<number | undefined> {
    const known = this.session.knownValue(SOC, SOC_FRESH_MS)?.value;
    if (typeof known === 'number') return known;
    const read = await this.session.read([SOC]).then(
      ({ values }) => values.get(SOC),
      () => undefined,
    );
    return typeof read === 'number' ? read : undefined;
  }

  leashMoved(): boolean {
    const inForce = this.inForce;
    if (!inForce?.leashed || inForce.watts === 0) return false;
    const soc = this.session.knownValue(SOC, SOC_FRESH_MS)?.value;
    return typeof soc === 'number' && this.leashSoc(inForce.watts, soc) !== inForce.soc;
  }

  async holdsCommand(): Promise<boolean | undefined> {
    const inForce = this.inForce;
    const { values } = await this.session.read([WORKING_MODE_READ_ADDRESS, ...READ_BACK]);
    const mode = values.get(WORKING_MODE_READ_ADDRESS);
    if (mode !== undefined && Number(mode) !== REAL_TIME.mode) return false;
    const state = values.get(STATE_READ_BACK);
    if (state === undefined || !inForce) return undefined;
    // The maker's table gives 0 to 2, a 1600-class device reported 1000 for standby.
    return Number(state) % 1000 === inForce.code;
  }

  async read(withMeter: boolean, options: ReadOptions = {}): Promise<PlantReading> {
    // The device's own limits come along: they lower the session's limits (DeviceClient.limits).
    const own = [BATTERY, SOC, BACKUP_SOC, RATED_CAPACITY, ...Object.values(REPORTED_LIMIT_ADDRESSES)];
    const { values } = await this.session.read(withMeter ? [METER, METER_1600, ...own] : own, options);
    // The device's own limits, now known to the session, are the last check of every command.
    this.controlOptions.limits = this.session.limits;
    const number = (a: number) => (typeof values.get(a) === 'number' ? (values.get(a) as number) : undefined);
    const backup = number(BACKUP_SOC);
    if (backup !== undefined) this.backupSoc = backup;
    // Commands without a SOC of their own (standby, no leash) stop at the floor.
    this.controlOptions.dischargeSoc = this.dischargeSoc;
    const kwh = number(RATED_CAPACITY);
    if (kwh !== undefined && kwh > 0) this.capacityWh = kwh * 1000;
    const { leash } = this.settings;
    return {
      battery: number(BATTERY),
      soc: number(SOC),
      meter: withMeter ? gridReading(values.get(METER) ?? values.get(METER_1600)) : undefined,
      dischargeSoc: this.dischargeSoc,
      leashWh: this.capacityWh === undefined || leash === undefined ? undefined : (this.capacityWh * leash) / 100,
    };
  }

  async meterConnected(): Promise<boolean | undefined> {
    const { values } = await this.session.read([METER_STATUS]);
    const status = Number(values.get(METER_STATUS));
    return Number.isFinite(status) && values.get(METER_STATUS) !== undefined ? status !== METER_DISABLED : undefined;
  }

  async selfConsumption(): Promise<void> {
    // Out of real-time control by this plant's own hand: no command of it stands.
    this.inForce = undefined;
    await this.session.write(REAL_TIME.modeAddress, SELF_CONSUMPTION);
  }

  async gridCharging(on: boolean): Promise<boolean> {
    if (!on) {
      const restore = this.gridChargingRestore;
      this.gridChargingRestore = undefined;
      if (restore !== undefined) await this.session.write(GRID_CHARGING_SETTING, restore);
      return true;
    }
    if (this.gridChargingRestore !== undefined) return true;
    const before = await this.gridChargingSetting();
    if (before === undefined) return false;
    if (before === 1) return true;
    this.gridChargingRestore = before;
    await this.session.write(GRID_CHARGING_SETTING, 1);
    return true;
  }

  /**
   * Grid charging as the device has it (0/1): the newest known of 2618 and 1143, else a read of 2618; undefined where
   * the device answers none.
   */
  private async gridChargingSetting(): Promise<number | undefined> {
    const read = this.session.knownValue(GRID_CHARGING);
    const written = this.session.knownValue(GRID_CHARGING_SETTING);
    if (written && (!read || written.at >= read.at)) return Number(written.value);
    if (read) return Number(read.value) - GRID_CHARGING_READ_OFFSET;
    const { values } = await this.session.read([GRID_CHARGING]);
    const value = values.get(GRID_CHARGING);
    return typeof value === 'number' || typeof value === 'string' ? Number(value) - GRID_CHARGING_READ_OFFSET : undefined;
  }

  othersWrote(since: number): OthersWrite | undefined {
    const mode = this.session.knownValue(REAL_TIME.modeAddress);
    const state = this.session.knownValue(REAL_TIME.stateAddress);
    const power = this.session.knownValue(REAL_TIME.powerAddress);
    // A write of the power (47016) alone changes the setpoint as well.
    const newest = Math.max(mode?.at ?? -Infinity, state?.at ?? -Infinity, power?.at ?? -Infinity);
    if (newest <= since) return undefined;
    if (mode && mode.at === newest && mode.value !== REAL_TIME.mode) return { at: newest, handedBack: true };
    if (!state || !power || typeof power.value !== 'number') return { at: newest, handedBack: false };
    const watts = state.value === STATE_CODES.charge ? -power.value : state.value === STATE_CODES.discharge ? power.value : 0;
    return { at: newest, handedBack: false, watts };
  }
}
