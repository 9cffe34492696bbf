/**
 * What the zero feed-in controller (src/control/zero-feed-in.ts) steers: a plant that takes a total setpoint, gives
 * back battery power and SOC, hands back to the device's own self-consumption, and says what other writers did. One
 * device (DevicePlant, here: a session, its RealTimeController and the shared queue) or several behind one meter
 * (GroupPlant, src/control/group-plant.ts). The controller's regulator steers the plant's total either way.
 */
import { REAL_TIME, pointByName, writePointByAddress, type PowerLimits } from '../points/catalogue';
import type { ClientSession } from '../device/client';
import { CONTROL_DEFAULTS, RealTimeController, STATE_CODES, parseControl, type ControlCommand, type ControllerSettings } from './control';
import { gridReading, type RegulatorSettings } from './regulator';

/** A setpoint's outcome: superseded by a newer one, or the signed watts (6000's sign) now in force. */
export interface PlantOutcome {
  superseded: boolean;
  watts: number;
}

/** One read of the plant: battery power (W, positive discharging), SOC (%) and the device's meter, where read. */
export interface PlantReading {
  battery?: number;
  soc?: number;
  meter?: number;
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
  /** Grid charging (1143) on for the charge mode where it is off; off: back to what it was before. */
  gridCharging(on: boolean): Promise<void>;
  /** A change by another writer in this process after `since` (performance.now()), if any. */
  othersWrote(since: number): OthersWrite | undefined;
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
  /** Whether the device's own meter is connected (7120; a group: its first unit's, whose meter it reads), if known. */
  meterConnected?(): Promise<boolean | undefined>;
}

const address = (name: string) => pointByName(name)!.address;
const METER = address('meterPower');
const METER_1600 = address('meterPower1600');
const METER_STATUS = address('meterStatus');
/** 7120: 1000 the meter is enabled, 1001 disabled (the meter accessory missing or not set up). */
const METER_DISABLED = 1001;
const BATTERY = address('batteryPower');
const SOC = address('batterySoc');
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

  constructor(
    readonly session: ClientSession,
    settings: Pick<RegulatorSettings, 'minPower' | 'chargeSoc' | 'dischargeSoc'>,
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
    const command = parseControl(options.soc === undefined ? watts : { power: watts, soc: options.soc }, this.controlOptions);
    const outcome = await this.controller.apply(command, false, undefined, options);
    return { superseded: outcome.status === 'superseded', watts: signedPower(command) };
  }

  async read(withMeter: boolean, options: ReadOptions = {}): Promise<PlantReading> {
    const { values } = await this.session.read(withMeter ? [METER, METER_1600, BATTERY, SOC] : [BATTERY, SOC], options);
    const number = (a: number) => (typeof values.get(a) === 'number' ? (values.get(a) as number) : undefined);
    return {
      battery: number(BATTERY),
      soc: number(SOC),
      meter: withMeter ? gridReading(values.get(METER) ?? values.get(METER_1600)) : undefined,
    };
  }

  async meterConnected(): Promise<boolean | undefined> {
    const { values } = await this.session.read([METER_STATUS]);
    const status = Number(values.get(METER_STATUS));
    return Number.isFinite(status) && values.get(METER_STATUS) !== undefined ? status !== METER_DISABLED : undefined;
  }

  async selfConsumption(): Promise<void> {
    await this.session.write(REAL_TIME.modeAddress, SELF_CONSUMPTION);
  }

  async gridCharging(on: boolean): Promise<void> {
    if (!on) {
      const restore = this.gridChargingRestore;
      this.gridChargingRestore = undefined;
      if (restore !== undefined) await this.session.write(GRID_CHARGING_SETTING, restore);
      return;
    }
    if (this.gridChargingRestore !== undefined) return;
    const before = (await this.gridChargingSetting()) ?? 0;
    if (before === 1) return;
    this.gridChargingRestore = before;
    await this.session.write(GRID_CHARGING_SETTING, 1);
  }

  /** Grid charging as the device has it (0/1): the newest known of 2618 and 1143, else a read of 2618. */
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
