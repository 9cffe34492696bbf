/**
 * Zero feed-in without Node-RED: wires a Regulator (src/control/regulator.ts) to a device session. It feeds the
 * regulator grid readings (given, or read from the device's own meter through the shared queue) and battery power,
 * sends its setpoints with RealTimeController, follows other writers of the same device, drives the pulse follow-ups
 * and the meter time-out by a timer, and on disable, close or a silent meter leaves the battery as configured. The
 * node (nodes/localbattery-zero-feed-in.ts) only turns messages into calls and decisions into messages and a status.
 */
import { REAL_TIME, pointByName, writePointByAddress } from '../points/catalogue';
import type { ClientSession } from '../device/client';
import { CONTROL_DEFAULTS, RealTimeController, STATE_CODES, parseControl, type ControlCommand, type ControllerSettings } from './control';
import { Regulator, gridReading, type Decision, type RegulatorSettings } from './regulator';
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

/** Where grid readings come from, and what a stop or disable leaves (node settings). */
export const METER_SOURCES = ['message', 'device'] as const;
export const ON_STOP = ['self-consumption', 'standby', 'keep'] as const;
export type MeterSource = (typeof METER_SOURCES)[number];
export type OnStop = (typeof ON_STOP)[number];

export interface ZeroFeedInConfig {
  regulator: RegulatorSettings;
  meterSource: MeterSource;
  meterIntervalMs: number;
  onStop: OnStop;
  /** The battery mode at start (src/control/modes.ts), and what the charge mode charges with and up to. */
  mode: BatteryMode;
  charge: ChargeMode;
}

/** What the controller tells its host (the node): each decision, a change worth a new status, failures. */
export interface ZeroFeedInHost {
  decision(decision: Decision): void;
  changed(): void;
  failure(error: unknown): void;
  /** A battery power given with a reading that the battery cannot be giving (said once). */
  implausibleBattery(power: number): void;
}

const address = (name: string) => pointByName(name)!.address;
const METER = address('meterPower');
const METER_1600 = address('meterPower1600');
const BATTERY = address('batteryPower');
const SOC = address('batterySoc');
const GRID_CHARGING = address('gridCharging');
const GRID_CHARGING_SETTING = address('gridChargingSetting');
/** 2618 reads 1000/1001 where 1143 takes 0/1. */
const GRID_CHARGING_READ_OFFSET = writePointByAddress(GRID_CHARGING_SETTING)!.readValueOffset ?? 0;
const SELF_CONSUMPTION = 1;
/** With the meter from messages, battery power and SOC are read this often (one request, shared with the others)... */
const STATE_READ_MS = 30000;
/** ...and this often while it steers: a battery that falls short of its setpoint is seen within seconds (this cost
 * the bench's house 0.2 to 0.9 Wh of grid error in 6 minutes: a read takes the slot a load step may need). */
const STEERING_READ_MS = 3000;
/** How often a read of 6000 is looked at: whether it is due, and whether a move under way lets it go. */
const MOVING_WAIT_MS = 1000;
/** The device's own meter refreshes this often (BK1600 Ultra, EMS V2.00.02): its reading may be this much older. */
const DEVICE_METER_REFRESH_S = 3;
/** How long before its acknowledgement a write may have been carried out (the specification's response time). */
const ANSWER_MS = 1000;
/** How often the regulator's clock is looked at (pulse follow-ups, a silent meter). */
const TICK_MS = 250;

/** The signed watts a command gives the battery (6000's sign): what the device acknowledged. */
function signedPower(command: ControlCommand): number {
  return command.state === 'charge' ? -command.power : command.state === 'discharge' ? command.power : 0;
}

export class ZeroFeedInController {
  readonly regulator: Regulator;
  private readonly controller: RealTimeController;
  private readonly controlOptions: ControllerSettings;
  private readonly timers = new Set<NodeJS.Timeout>();
  private tickTimer: NodeJS.Timeout | undefined;
  /** The hand-backs under way (disable, time-out), so that a close waits for every one rather than racing them. */
  private readonly handBacks = new Set<Promise<void>>();
  /** When this controller's last write was acknowledged (performance.now(), as the queue's known values). */
  private ownWriteAt = -Infinity;
  private closed = false;
  /** When battery power and SOC were last asked for (meter from messages). */
  private stateReadAt = -Infinity;
  private warnedBattery = false;
  private modeNow: BatteryMode;
  /** In charge or standby: the setpoint this controller last sent for the mode (a key), and whether it charged. */
  private fixedSent: string | undefined;
  private fixedCharging = false;
  /** In charge or standby: the last grid reading, for the regulator's first decision when the mode ends. */
  private fixedReading: { grid: number; at: number } | undefined;
  /** What 1143 goes back to when the charge mode ends, where it switched grid charging on. */
  private gridChargingRestore: number | undefined;
  /** Out of charge: grid charging goes back once the new mode decided (see setMode). */
  private gridChargingAfter = false;
  /** Grid charging's writes, one after another; a close waits for them. */
  private settingWork: Promise<void> = Promise.resolve();

  constructor(
    private readonly session: ClientSession,
    private readonly config: ZeroFeedInConfig,
    private readonly host: ZeroFeedInHost,
    private readonly now: () => number = () => performance.now(),
  ) {
    // The device's meter may be up to its refresh older than the battery power read with it: a longer meter delay.
    const slow = { ...config.regulator.slow };
    if (config.meterSource === 'device') slow.meterDelayS += DEVICE_METER_REFRESH_S;
    this.regulator = new Regulator({ ...config.regulator, slow, requestIntervalMs: session.client.minIntervalMs }, now());
    this.controlOptions = {
      power: config.regulator.minPower,
      chargeSoc: config.regulator.chargeSoc,
      dischargeSoc: config.regulator.dischargeSoc,
      clamp: true,
      // The regulator keeps within its own maximum powers; the device's limits are the last check.
      limits: session.limits,
      switchMode: true,
      repeatMs: CONTROL_DEFAULTS.repeatSeconds * 1000,
      modeCheckMs: CONTROL_DEFAULTS.modeCheckSeconds * 1000,
    };
    this.controller = new RealTimeController(session, this.controlOptions);
    this.modeNow = config.mode;
    this.regulator.setMaxDischarge(dischargeBound(config.mode, config.regulator.maxDischarge));
  }

  /** The battery mode in force (src/control/modes.ts). */
  get mode(): BatteryMode {
    return this.modeNow;
  }

  /** Starts the reads and the clock. */
  start(): void {
    // What an earlier deployment saw of the working mode may be stale: the first setpoint waits for one read of it.
    void this.controller.learnMode();
    if (wantsGridCharging(this.modeNow)) void this.gridCharging(true);
    if (this.config.meterSource === 'device') this.later(() => this.pollMeter(), 0);
    else this.later(() => this.pollState(), 0);
    // A pulse's follow-up is due by time, and a silent meter is looked for.
    this.tickTimer = setInterval(() => {
      // In charge and standby the regulator rests: no pulse, and the meter is not needed.
      if (this.closed || this.handing || !regulated(this.modeNow)) return;
      const decision = this.regulator.tick(this.now());
      if (decision) this.act(decision, true);
    }, TICK_MS);
  }

  private get handing(): boolean {
    return this.handBacks.size > 0;
  }

  /** A new grid power to hold (checked by the caller), from the next reading on. */
  setTarget(target: number): void {
    this.regulator.setTarget(target);
  }

  /** Turns the loop on or off; off, the battery is left as On stop says (with keep: the needed setpoint). */
  enable(on: boolean): void {
    const was = this.regulator.enabled;
    if (was && !on) void this.track(this.handBack(this.config.onStop));
    this.regulator.enable(on, this.now());
    if (was !== on && (wantsGridCharging(this.modeNow) || this.gridChargingAfter)) void this.gridCharging(on);
    // Back on: what the battery gives now is where the loop starts; a mode that sets the setpoint sets it at once.
    if (!was && on) {
      this.fixedSent = undefined;
      void this.readDevice(false);
      if (!regulated(this.modeNow)) this.steerFixed(undefined, true);
    }
    this.host.changed();
  }

  /**
   * A new battery mode (checked by the caller), obeyed at once: a pulse under way ends on the value it was heading
   * to, within the new mode; hold sends no discharge, charge and standby their setpoint, normal steers from the next
   * reading. Off, the mode waits for the loop to be on again.
   */
  setMode(mode: BatteryMode): void {
    const was = this.modeNow;
    if (mode === was) return this.host.changed();
    this.modeNow = mode;
    this.regulator.setMaxDischarge(dischargeBound(mode, this.config.regulator.maxDischarge));
    const on = this.regulator.enabled && !this.closed;
    // Into charge: grid charging on at once (after the setpoint). Out of it: back after the new mode's first decision,
    // so that its setpoint takes the device's next slot.
    this.gridChargingAfter = on && wantsGridCharging(was) && !wantsGridCharging(mode);
    if (on && wantsGridCharging(mode) && !wantsGridCharging(was)) void this.gridCharging(true);
    if (on && !this.handing) this.enterMode(was);
    this.host.changed();
  }

  private enterMode(was: BatteryMode): void {
    const now = this.now();
    this.fixedSent = undefined;
    if (!regulated(this.modeNow)) {
      this.fixedCharging = false;
      // The regulator's pulse ends here: the mode's own setpoint replaces it.
      this.regulator.exit(now, 'mode');
      return this.steerFixed(undefined, true);
    }
    if (!regulated(was)) {
      this.regulator.resume(now);
      // The regulator decides at once from the mode's last reading (no older than one interval), not a reading later.
      const last = this.fixedReading;
      if (last && now - last.at <= this.config.meterIntervalMs) this.reading(last.grid);
      return;
    }
    // Hold to normal: the regulator steers on, its bound lifted. Normal to hold: no discharge from now.
    const steady = this.regulator.steady;
    const entry = entrySetpoint(this.modeNow, steady);
    if (entry === undefined) return;
    // A pulse under way ends on the value it was heading to, within hold.
    const ending = this.regulator.exit(now, 'mode');
    if (ending || entry !== steady) {
      this.report(this.modeDecision(entry, undefined));
      this.restoreAfter(this.send(entry, true));
    }
  }

  /** Out of charge: grid charging goes back once the new mode decided, after its setpoint (`sent`) has its answer. */
  private restoreAfter(sent?: Promise<unknown>): void {
    if (!this.gridChargingAfter) return;
    this.gridChargingAfter = false;
    void (sent ?? Promise.resolve()).then(() => (wantsGridCharging(this.modeNow) ? undefined : this.gridCharging(false)));
  }

  /**
   * A grid reading from a message (checked: W, positive importing); `battery` (W, positive discharging like 6000) and
   * `soc` (%) where the message carries them. An implausible battery power is ignored.
   */
  reading(grid: number, battery?: number, soc?: number): void {
    if (this.closed) return;
    if (battery !== undefined && !this.regulator.plausibleBattery(battery, this.now())) {
      if (!this.warnedBattery) this.host.implausibleBattery(battery);
      this.warnedBattery = true;
      battery = undefined;
    }
    if (soc !== undefined) this.regulator.observeSoc(soc, this.now());
    if (!this.regulator.enabled || this.handing) return;
    if (!regulated(this.modeNow)) return this.steerFixed(grid);
    // While a write of this controller is on its way, what the queue knows may be that write.
    if (!this.regulator.inFlight) this.followOthers();
    this.act(this.regulator.meter(grid, this.now(), battery));
  }

  /** Stops the reads and the clock and leaves the battery as configured; resolves when the device has it. */
  close(): Promise<void> {
    this.closed = true;
    clearInterval(this.tickTimer);
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const handedBack = Promise.all([...this.handBacks]).then(() =>
      this.regulator.enabled ? this.handBack(this.config.onStop) : undefined,
    );
    // The charge mode's grid charging goes back as it was.
    return handedBack.then(() => this.gridCharging(false));
  }

  /**
   * Another writer in this process (a control or write node, a dashboard button) changed the setpoint or the working
   * mode since this controller's last write: that is the state now, and the next reading steers from it.
   */
  private followOthers(): void {
    const mode = this.session.knownValue(REAL_TIME.modeAddress);
    const state = this.session.knownValue(REAL_TIME.stateAddress);
    const power = this.session.knownValue(REAL_TIME.powerAddress);
    // A write of the power (47016) alone changes the setpoint as well.
    const newest = Math.max(mode?.at ?? -Infinity, state?.at ?? -Infinity, power?.at ?? -Infinity);
    if (newest <= this.ownWriteAt) return;
    this.ownWriteAt = newest;
    // Handed back by another: only a controller that steers has a state to drop (at the start, the read of 6000 stands).
    if (mode && mode.at === newest && mode.value !== REAL_TIME.mode) {
      if (this.regulator.steering) this.regulator.handedBack();
    } else if (state && power && typeof power.value === 'number') {
      const watts = state.value === STATE_CODES.charge ? -power.value : state.value === STATE_CODES.discharge ? power.value : 0;
      // Carried out when it arrived, up to an answer time before it was acknowledged.
      this.regulator.acknowledge(watts, newest, newest - ANSWER_MS);
    }
  }

  private later(run: () => void, ms: number): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
  }

  private track(work: Promise<void>): Promise<void> {
    this.handBacks.add(work);
    void work.finally(() => this.handBacks.delete(work));
    return work;
  }

  private report(decision: Decision): void {
    if (!this.closed) this.host.decision(decision);
  }

  private failure(error: unknown): void {
    if (!this.closed) this.host.failure(error);
  }

  /**
   * Sends a setpoint (W, signed); the regulator learns when it left and whether the device acknowledged it, and an
   * overdrive's next setpoint follows at once, ahead of waiting reads (`urgent`). Never rejects.
   */
  private async send(watts: number, urgent = false, soc?: number): Promise<boolean> {
    const regulator = this.regulator;
    try {
      const command = parseControl(soc === undefined ? watts : { power: watts, soc }, this.controlOptions);
      const outcome = await this.controller.apply(command, false, undefined, { urgent, onStart: () => regulator.started(this.now()) });
      if (outcome.status === 'superseded') regulator.failed(true);
      else regulator.acknowledge(signedPower(command), this.now());
      this.ownWriteAt = this.now();
      if (!this.closed) this.host.changed();
    } catch (error) {
      regulator.failed();
      this.failure(error);
      this.followUp();
      return false;
    }
    this.followUp();
    return true;
  }

  /** An overdrive's next setpoint, at once after the last one's answer. */
  private followUp(): void {
    if (this.closed || this.handing) return;
    const next = this.regulator.followUp(this.now());
    if (next) this.act(next, true);
  }

  /**
   * Leaves the battery as `how` says (keep: the setpoint a pulse was heading to, where one may be in force); resolves
   * when the device has it (or it failed). Only a controller that steers acts. Never rejects.
   */
  private async handBack(how: OnStop): Promise<void> {
    if (!this.regulator.steering) return;
    try {
      if (how === 'keep') {
        const steady = this.regulator.exit(this.now());
        if (steady) {
          this.report(steady);
          await this.send(steady.setpoint!, true);
        }
      } else if (how === 'self-consumption') {
        await this.session.write(REAL_TIME.modeAddress, SELF_CONSUMPTION);
        this.ownWriteAt = this.now();
        this.regulator.handedBack();
      } else {
        await this.send(0);
      }
    } catch (error) {
      this.failure(error);
    }
  }

  private act(decision: Decision, urgent = false): void {
    // The mode's bound, whatever the regulator decided (hold: no discharge).
    if (decision.action === 'set') decision = { ...decision, setpoint: modeSetpoint(this.modeNow, decision.setpoint!) };
    this.report(decision);
    let sent: Promise<unknown> | undefined;
    if (decision.action === 'set') sent = this.send(decision.setpoint!, urgent);
    else if (decision.action === 'standby') sent = this.send(0);
    else if (decision.action === 'self-consumption') sent = this.track(this.handBack('self-consumption'));
    this.restoreAfter(sent);
  }

  /** Battery power and SOC (and the meter, when it is the device's) in one read through the shared queue. */
  private async readDevice(withMeter: boolean): Promise<void> {
    const asked = this.now();
    try {
      const { values } = await this.session.read(withMeter ? [METER, METER_1600, BATTERY, SOC] : [BATTERY, SOC]);
      const number = (a: number) => (typeof values.get(a) === 'number' ? (values.get(a) as number) : undefined);
      const soc = number(SOC);
      if (soc !== undefined) this.regulator.observeSoc(soc, this.now());
      // In charge, the SOC decides when it stops (with the device's meter, the reading below looks).
      if (!withMeter && !regulated(this.modeNow) && this.regulator.enabled && !this.handing && !this.closed) this.steerFixed();
      const battery = number(BATTERY);
      const meter = gridReading(values.get(METER) ?? values.get(METER_1600));
      // The meter may be up to its refresh older than 6000: the battery counts as a read-back, the models bridge the age.
      if (battery !== undefined) this.regulator.observeBattery(battery, this.now(), asked);
      if (withMeter && meter !== undefined) this.reading(meter);
    } catch (error) {
      this.failure(error);
    }
  }

  /**
   * Charge or standby: sends the mode's setpoint when it changed (the SOC reached, a new mode) and reports it, with
   * `grid` where a reading came; `force`: report even without a reading (a new mode).
   */
  private steerFixed(grid?: number, force = false): void {
    const mode = this.modeNow as 'charge' | 'standby';
    if (grid !== undefined) this.fixedReading = { grid, at: this.now() };
    const fixed = fixedSetpoint(mode, this.config.charge, this.regulator.soc, this.fixedCharging);
    const key = `${fixed.watts} ${fixed.soc ?? ''}`;
    const change = key !== this.fixedSent;
    if (change || grid !== undefined || force) this.report(this.modeDecision(fixed.watts, grid, change ? 'set' : 'hold', fixed));
    if (!change) return this.restoreAfter();
    this.fixedSent = key;
    this.fixedCharging = fixed.watts < 0;
    const sent = this.send(fixed.watts, true, fixed.soc);
    // A failed write is tried again at the next reading.
    void sent.then((ok) => {
      if (!ok && this.fixedSent === key) this.fixedSent = undefined;
    });
    this.restoreAfter(sent);
  }

  /** A decision the mode took itself (no regulator): its setpoint, with the grid and SOC known. */
  private modeDecision(setpoint: number, grid: number | undefined, action: 'set' | 'hold' = 'set', fixed?: FixedSetpoint): Decision {
    return { action, setpoint, steady: setpoint, grid, battery: undefined, soc: this.regulator.soc, reason: fixed?.reason ?? 'mode' };
  }

  /**
   * Grid charging (1143) on for the charge mode where it is not (what it was read first where no one knows it), or
   * back to what it was (off) after. One write after another; a failure (the 1600 class refuses 1143) is reported
   * and the charge goes on. Never rejects.
   */
  private gridCharging(on: boolean): Promise<void> {
    this.gridChargingAfter = false;
    const work = this.settingWork.then(async () => {
      try {
        if (!on) {
          const restore = this.gridChargingRestore;
          this.gridChargingRestore = undefined;
          if (restore !== undefined) await this.session.write(GRID_CHARGING_SETTING, restore);
          return;
        }
        if (this.gridChargingRestore !== undefined) return;
        const before = (await this.gridChargingSetting()) ?? 0;
        if (before === 1 || this.closed) return;
        this.gridChargingRestore = before;
        await this.session.write(GRID_CHARGING_SETTING, 1);
      } catch (error) {
        this.failure(error);
      }
    });
    this.settingWork = work;
    return work;
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

  // The device's meter: one read per interval, the next only after the last has come back (the queue paces it).
  private pollMeter(): void {
    const started = this.now();
    void this.readDevice(true).finally(() =>
      this.later(() => this.pollMeter(), Math.max(0, this.config.meterIntervalMs - (this.now() - started))),
    );
  }

  private pollState(): void {
    const now = this.now();
    const every = this.regulator.steering ? STEERING_READ_MS : STATE_READ_MS;
    // A move under way has the device's slots first (a pulse's follow-up must not wait for a read), for up to one more
    // interval: a battery that does not follow shows within two.
    const wait = now - this.stateReadAt < every || (this.regulator.moving && now - this.stateReadAt < 2 * every);
    if (wait) return this.later(() => this.pollState(), MOVING_WAIT_MS);
    this.stateReadAt = now;
    void this.readDevice(false).finally(() => this.later(() => this.pollState(), MOVING_WAIT_MS));
  }
}
