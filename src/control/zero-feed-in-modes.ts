/**
 * The zero feed-in controller's battery modes and limits (src/control/zero-feed-in.ts, src/control/modes.ts): normal
 * and hold are the regulator's, bounded here; charge and standby set the setpoint themselves while the regulator
 * rests; the charge mode's grid charging; the plant's limits and the device's discharge floor over the settings.
 *
 * Holds: the mode in force; in charge or standby the setpoint last sent for it, whether it charges towards the mode's
 * SOC, and the last grid reading; whether grid charging goes back after the next decision, and grid charging's writes
 * in a row. Written by: the controller (set, enable, readings and reads while the mode rests, the limits and floor
 * read) and the actuator (a decision sent: grid charging goes back after it). Read by: the controller and every room
 * (mode, bound). Invariants: no setpoint leaves the mode's bound (hold: no discharge); the regulator's bounds are the
 * settings within the plant's limits; grid charging's writes go one after another and a close waits for them; each
 * warning here is said once.
 */
import type { BatteryPlant } from './device-plant';
import type { Decision, Regulator } from './regulator';
import {
  dischargeBound,
  entrySetpoint,
  fixedSetpoint,
  modeSetpoint,
  regulated,
  wantsGridCharging,
  type BatteryMode,
  type ChargeMode,
  type FixedSetpoint,
} from './modes';
import type { ControllerVoice } from './zero-feed-in-voice';
import type { Exits } from './zero-feed-in-exits';
import type { ZeroFeedInConfig } from './zero-feed-in-config';

export interface ModeParts {
  regulator: Regulator;
  plant: BatteryPlant;
  config: ZeroFeedInConfig;
  now: () => number;
  voice: ControllerVoice;
  exits: Exits;
  /** The actuator's send (never rejects): whether the device took it. */
  send: (watts: number, urgent?: boolean, soc?: number) => Promise<boolean>;
  /** A grid reading for the regulator (normal's first after a rest). */
  take: (grid: number) => void;
  /** The last reading from a message (see MeterInput.heard). */
  heard: () => { grid: number; at: number } | undefined;
}

export class ModeRoom {
  private modeNow: BatteryMode;
  /**
   * In charge or standby: the setpoint this controller last sent for the mode (a key), and whether it charges towards
   * the mode's SOC: from the mode's start (a charge ordered 2 % below its SOC charges) until it reached it; only then
   * does the resume margin hold.
   */
  private fixedSent: string | undefined;
  private fixedCharging = true;
  /** In charge or standby: the last grid reading, for the regulator's first decision when the mode ends. */
  private fixedReading: { grid: number; at: number } | undefined;
  /** Out of charge: grid charging goes back once the new mode decided (see set). */
  private gridChargingAfter = false;
  /** Grid charging's writes, one after another; a close waits for them. */
  private settingWork: Promise<void> = Promise.resolve();

  constructor(private readonly parts: ModeParts) {
    this.modeNow = parts.config.mode;
    parts.regulator.adjust({ maxDischarge: dischargeBound(parts.config.mode, this.powerNow.discharge) });
  }

  get mode(): BatteryMode {
    return this.modeNow;
  }

  /** Normal or hold: the regulator steers. */
  get regulated(): boolean {
    return regulated(this.modeNow);
  }

  /** The mode's bound on a setpoint (hold: no discharge). */
  bound(setpoint: number): number {
    return modeSetpoint(this.modeNow, setpoint);
  }

  /** Charge at most / Discharge at most, within the plant's limits (the battery's own once read, DeviceClient.limits). */
  private get powerNow(): { charge: number; discharge: number } {
    const { chargeLimit, dischargeLimit } = this.parts.plant.limits;
    const { maxCharge, maxDischarge } = this.parts.config.regulator;
    return { charge: Math.min(maxCharge, chargeLimit), discharge: Math.min(maxDischarge, dischargeLimit) };
  }

  /** What the charge mode charges with (within the battery's own charge limit) and up to. */
  get chargeMode(): ChargeMode {
    return { ...this.parts.config.charge, power: Math.min(this.parts.config.charge.power, this.powerNow.charge) };
  }

  /** Started: the charge mode switches grid charging on. */
  start(): void {
    if (wantsGridCharging(this.modeNow)) void this.gridCharging(true);
  }

  /** The loop turned on or off (`was`: on before): grid charging follows the charge mode. */
  switched(was: boolean, on: boolean): void {
    if (was !== on && (wantsGridCharging(this.modeNow) || this.gridChargingAfter)) void this.gridCharging(on);
  }

  /** Back on: a mode that sets the setpoint sends it again. */
  forget(): void {
    this.fixedSent = undefined;
  }

  /** A new mode (not the one in force), obeyed at once unless the loop is off or handing back. */
  set(mode: BatteryMode): void {
    const { regulator, exits } = this.parts;
    const was = this.modeNow;
    this.modeNow = mode;
    regulator.adjust({ maxDischarge: dischargeBound(mode, this.powerNow.discharge) });
    const on = regulator.enabled && !exits.closed;
    // Into charge: grid charging on at once (after the setpoint). Out of it: back after the new mode's first decision,
    // so that its setpoint takes the device's next slot.
    this.gridChargingAfter = on && wantsGridCharging(was) && !wantsGridCharging(mode);
    if (on && wantsGridCharging(mode) && !wantsGridCharging(was)) void this.gridCharging(true);
    if (on && !exits.handing) this.enter(was);
  }

  private enter(was: BatteryMode): void {
    const { regulator, now, exits, voice } = this.parts;
    const at = now();
    this.fixedSent = undefined;
    if (!regulated(this.modeNow)) {
      this.fixedCharging = true;
      // The regulator's pulse ends here: the mode's own setpoint replaces it.
      regulator.exit(at, 'mode');
      return this.steerFixed(undefined, true);
    }
    if (!regulated(was)) {
      regulator.resume(at);
      // The battery may have moved by itself meanwhile (stopped at its SOC, maybe after the last read): the regulator
      // starts from a read of 6000 (readings wait for it), or it would steer from a charge that ended.
      void exits
        .track(this.restartFromRead())
        .then((meter) => this.decideAfterRest(at, meter))
        .catch((error: unknown) => voice.failure(error));
      return;
    }
    // Hold to normal: the regulator steers on, its bound lifted. Normal to hold: no discharge from now.
    const steady = regulator.steady;
    const entry = entrySetpoint(this.modeNow, steady);
    if (entry === undefined) return;
    // A pulse under way ends on the value it was heading to, within hold.
    const ending = regulator.exit(at, 'mode');
    if (ending || entry !== steady) {
      voice.decision(this.modeDecision(entry, undefined));
      this.restoreAfter(this.parts.send(entry, true));
    }
  }

  /**
   * Normal after a mode that set the setpoint itself (from `since`) decides once the battery was read, from the latest
   * reading: the device's meter read with it, or the last from one interval before `since` on (a message taken while
   * the read was under way too), not a reading later.
   */
  private decideAfterRest(since: number, meter?: number): void {
    if (meter !== undefined) return this.parts.take(meter);
    const last = this.parts.heard() ?? this.fixedReading;
    if (last && since - last.at <= this.parts.config.meterIntervalMs) this.parts.take(last.grid);
  }

  /** The battery as read now is where the regulator starts; resolves with the device's meter read with it. Never rejects. */
  private async restartFromRead(): Promise<number | undefined> {
    const { regulator, plant, now, config } = this.parts;
    try {
      const { battery, soc, meter } = await plant.read(config.meterSource === 'device');
      if (soc !== undefined) regulator.observeSoc(soc, now());
      if (battery !== undefined) regulator.restartFrom(battery, now());
      return meter;
    } catch (error) {
      this.parts.voice.failure(error);
      return undefined;
    }
  }

  /** Out of charge: grid charging goes back once the new mode decided, after its setpoint (`sent`) has its answer. */
  restoreAfter(sent?: Promise<unknown>): void {
    if (!this.gridChargingAfter) return;
    this.gridChargingAfter = false;
    void (sent ?? Promise.resolve()).then(() => (wantsGridCharging(this.modeNow) ? undefined : this.gridCharging(false)));
  }

  /**
   * Charge or standby: sends the mode's setpoint when it changed (the SOC reached, a new mode) and reports it, with
   * `grid` where a reading came; `force`: report even without a reading (a new mode). Where the device stopped by itself
   * at its SOC, the regulator learns it from the read that normal starts with (enter()).
   */
  steerFixed(grid?: number, force = false): void {
    const { regulator, now, voice } = this.parts;
    const mode = this.modeNow as 'charge' | 'standby';
    if (grid !== undefined) this.fixedReading = { grid, at: now() };
    // The charge waits for the first read of the SOC: a group splits it by each unit's room up to the mode's SOC.
    if (mode === 'charge' && regulator.soc === undefined) return;
    const fixed = fixedSetpoint(mode, this.chargeMode, regulator.soc, this.fixedCharging);
    const key = `${fixed.watts} ${fixed.soc ?? ''}`;
    const change = key !== this.fixedSent;
    if (change || grid !== undefined || force) voice.decision(this.modeDecision(fixed.watts, grid, change ? 'set' : 'hold', fixed));
    if (!change) return this.restoreAfter();
    this.fixedSent = key;
    this.fixedCharging = fixed.watts < 0;
    const sent = this.parts.send(fixed.watts, true, fixed.soc);
    // A failed write is tried again at the next reading.
    void sent.then((ok) => {
      if (!ok && this.fixedSent === key) this.fixedSent = undefined;
    });
    this.restoreAfter(sent);
  }

  /** A decision the mode took itself (no regulator): its setpoint, with the grid and SOC known. */
  private modeDecision(setpoint: number, grid: number | undefined, action: 'set' | 'hold' = 'set', fixed?: FixedSetpoint): Decision {
    return { action, setpoint, steady: setpoint, grid, battery: undefined, soc: this.parts.regulator.soc, reason: fixed?.reason ?? 'mode' };
  }

  /**
   * Grid charging on for the charge mode where it is off, or back to what it was after (the plant knows, per device).
   * One change after another; a failure (the 1600 class refuses 1143) is reported and the charge goes on. Never rejects.
   */
  gridCharging(on: boolean): Promise<void> {
    const { plant, exits, voice } = this.parts;
    this.gridChargingAfter = false;
    const work = this.settingWork.then(async () => {
      try {
        if (on && exits.closed) return;
        if (!(await plant.gridCharging(on))) voice.warnOnce('noGridCharging', {});
      } catch (error) {
        voice.failure(error);
      }
    });
    this.settingWork = work;
    return work;
  }

  /** The discharge floor the plant read (the device's backup SOC) is the regulator's; said once where it raises Discharge to. */
  followFloor(floor: number | undefined): void {
    const { regulator, config, voice } = this.parts;
    if (floor === undefined || floor === regulator.settings.dischargeSoc) return;
    regulator.adjust({ dischargeSoc: floor });
    const dischargeSoc = config.regulator.dischargeSoc;
    if (floor > dischargeSoc) voice.warnOnce('backupFloor', { floor, dischargeSoc });
  }

  /**
   * The plant's limits (the battery's own once read, see DeviceClient.limits) bound the regulator and the charge mode;
   * said once where they lower the settings.
   */
  followLimits(): void {
    const { regulator, config, plant, voice } = this.parts;
    const { charge, discharge } = this.powerNow;
    regulator.adjust({ maxCharge: charge, maxDischarge: dischargeBound(this.modeNow, discharge) });
    const { maxCharge, maxDischarge } = config.regulator;
    if (charge === maxCharge && discharge === maxDischarge) return;
    const { chargeLimit, dischargeLimit } = plant.limits;
    voice.warnOnce('deviceLimits', { charge: chargeLimit, discharge: dischargeLimit });
  }
}
