/**
 * Zero feed-in without Node-RED: wires a Regulator (src/control/regulator.ts) to a plant (src/control/device-plant.ts:
 * one device's session, or a group of devices). It feeds the regulator grid readings (given, or read from the device's
 * own meter through the shared queue) and battery power, sends its setpoints through the plant, follows other writers
 * of the same device, drives the pulse follow-ups, the meter time-out and the repeats of a meter that publishes only on
 * change by a timer, and on disable, close or a silent meter leaves the battery as configured. The
 * node (nodes/localbattery-zero-feed-in.ts) only turns messages into calls and decisions into messages and a status.
 */
import type { ClientSession } from '../device/client';
import { DevicePlant, type BatteryPlant } from './device-plant';
import { Regulator, type Decision, type RegulatorSettings } from './regulator';
import { MeterCheck, PROBE_W, meterWatts, type MeterFault, type MeterSign, type MeterUnit } from './meter-check';
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
/** A meter from messages publishes every interval, even unchanged ('always'), or only when its value changes. */
export const METER_SENDS = ['always', 'on-change'] as const;
export type MeterSource = (typeof METER_SOURCES)[number];
export type OnStop = (typeof ON_STOP)[number];
export type MeterSends = (typeof METER_SENDS)[number];

export interface ZeroFeedInConfig {
  regulator: RegulatorSettings;
  meterSource: MeterSource;
  meterIntervalMs: number;
  /** 'on-change': silence means unchanged, and the meter time-out is the longest silence (see repeatReading()). */
  meterSends: MeterSends;
  /** How a meter from messages counts: its readings are converted to W, positive importing (meterWatts()). */
  meterSign: MeterSign;
  meterUnit: MeterUnit;
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
  /**
   * Said once each: 'backupFloor': the device's backup SOC raised Discharge to (values: floor, dischargeSoc);
   * 'commandDropped': the device dropped its command (a restart, a reconnect) and was steered again (values: setpoint);
   * 'noGridCharging': the charge mode found a battery without a grid-charging setting (the 1600 class) and left it;
   * 'deviceLimits': the battery reports lower limits than the settings (values: charge, discharge), kept within.
   */
  warning?(kind: 'backupFloor' | 'commandDropped' | 'noGridCharging' | 'deviceLimits', values: Record<string, number>): void;
  /** The meter cannot be right (said once per fault): the loop stopped, the battery left in standby or as On stop says. */
  meterFault(fault: MeterFault): void;
}

/** With the meter from messages, battery power and SOC are read this often (one request, shared with the others)... */
const STATE_READ_MS = 30000;
/** ...and this often while it steers, in a slot no write needs: a battery that falls short of its setpoint is seen
 * within seconds. A read due goes right after a reading that moved nothing, and gives way to a write while it waits... */
const STEERING_READ_MS = 3000;
/** ...until it is this late (the loop moves at every reading, as when it winds up): then it goes and waits its turn. */
const STEERING_READ_LATE_MS = 2 * STEERING_READ_MS;
/** A read of 6000 after an overdrive ended, unless one was asked this recently. */
const PULSE_READ_GAP_MS = 1000;
/** How often the timer looks whether a read of 6000 is due (not steering) or late (steering). */
const POLL_MS = 1000;
/** The device's own meter refreshes this often (BK1600 Ultra, EMS V2.00.02): its reading may be this much older. */
const DEVICE_METER_REFRESH_S = 3;
/** How long before its acknowledgement a write may have been carried out (the specification's response time). */
const ANSWER_MS = 1000;
/** How often the regulator's clock is looked at (pulse follow-ups, a silent meter). */
const TICK_MS = 250;
/** With a meter that publishes only on change, the regulator times out this many intervals after the last repeat. */
const REPEATS_MISSED = 2;

export class ZeroFeedInController {
  readonly regulator: Regulator;
  readonly plant: BatteryPlant;
  private readonly timers = new Set<NodeJS.Timeout>();
  private tickTimer: NodeJS.Timeout | undefined;
  /**
   * The hand-backs under way (disable, time-out) and normal's read after a rest: readings wait for them, and a close
   * waits for every one rather than racing them.
   */
  private readonly handBacks = new Set<Promise<unknown>>();
  /** When this controller's last write was acknowledged (performance.now(), as the queue's known values). */
  private ownWriteAt = -Infinity;
  private closed = false;
  /** When battery power and SOC were last asked for (meter from messages). */
  private stateReadAt = -Infinity;
  /** The read of 6000 under way (meter from messages); `yields`: withdrawn while it waits if a write needs the slot. */
  private stateRead: { abort: AbortController; started: boolean; yields: boolean; askedBefore: number } | undefined;
  private warnedBattery = false;
  private readonly meterCheck: MeterCheck;
  private fault: MeterFault | undefined;
  /** The last reading from a message, and when the regulator last took a reading (a message's, or its repeat). */
  private heard: { grid: number; at: number } | undefined;
  private takenAt = -Infinity;
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
  /** Out of charge: grid charging goes back once the new mode decided (see setMode). */
  private gridChargingAfter = false;
  /** Grid charging's writes, one after another; a close waits for them. */
  private settingWork: Promise<void> = Promise.resolve();
  /** What the battery may still move by itself under the leash (Wh), as last read. */
  private leashWhNow: number | undefined;
  private warnedFloor = false;
  private warnedNoGridCharging = false;
  private warnedLimits = false;
  private warnedDropped = false;
  /** A check whether the device still holds its command is under way; when the last began (see checkCommand()). */
  private checking = false;
  private checkedAt = -Infinity;
  /** The setpoint last sent again where nothing told whether the device had dropped it: once is enough. */
  private resentBlind: number | undefined;

  /** `steered`: one device's session, or a plant (a group of devices, src/control/group-plant.ts). */
  constructor(
    steered: ClientSession | BatteryPlant,
    private readonly config: ZeroFeedInConfig,
    private readonly host: ZeroFeedInHost,
    private readonly now: () => number = () => performance.now(),
  ) {
    // The device's meter may be up to its refresh older than the battery power read with it: a longer meter delay.
    const slow = { ...config.regulator.slow };
    if (config.meterSource === 'device') slow.meterDelayS += DEVICE_METER_REFRESH_S;
    this.plant = 'apply' in steered ? steered : new DevicePlant(steered, config.regulator);
    // The device's meter repeats its sample between refreshes: a repeat is no news.
    const heldMeter = config.meterSource === 'device';
    const meterTimeoutMs = this.repeats ? REPEATS_MISSED * config.meterIntervalMs : config.regulator.meterTimeoutMs;
    this.regulator = new Regulator(
      { ...config.regulator, slow, meterTimeoutMs, requestIntervalMs: this.plant.minIntervalMs, heldMeter },
      now(),
    );
    const plant = this.plant;
    if (plant.estimate) this.regulator.useEstimate((at) => plant.estimate!(at), plant.members && (() => plant.members!()));
    plant.whenUnitLeaves?.(() => this.totalAfterLeave());
    // The charge mode charges from the grid as set: no floor then.
    plant.steeredBy?.({ steering: () => this.steers, floor: () => (regulated(this.modeNow) ? this.regulator.floor : -Infinity) });
    this.modeNow = config.mode;
    this.meterCheck = new MeterCheck(heldMeter);
    this.regulator.setMaxDischarge(dischargeBound(config.mode, this.powerNow.discharge));
  }

  /** Charge at most / Discharge at most, within the plant's limits (the battery's own once read, DeviceClient.limits). */
  private get powerNow(): { charge: number; discharge: number } {
    const { chargeLimit, dischargeLimit } = this.plant.limits;
    const { maxCharge, maxDischarge } = this.config.regulator;
    return { charge: Math.min(maxCharge, chargeLimit), discharge: Math.min(maxDischarge, dischargeLimit) };
  }

  /** What the charge mode charges with (within the battery's own charge limit) and up to. */
  get chargeMode(): ChargeMode {
    return { ...this.config.charge, power: Math.min(this.config.charge.power, this.powerNow.charge) };
  }

  /** The battery mode in force (src/control/modes.ts). */
  get mode(): BatteryMode {
    return this.modeNow;
  }

  /** What the battery may still move by itself if this controller stopped now (Wh; the leash); undefined when not known. */
  get leashWh(): number | undefined {
    return this.regulator.setpoint && regulated(this.modeNow) ? this.leashWhNow : undefined;
  }

  /** Why the meter cannot be right, where it was found so: the loop stopped until it is enabled again. */
  get meterFault(): MeterFault | undefined {
    return this.fault;
  }

  /** Starts the reads and the clock. */
  start(): void {
    // What an earlier deployment saw of the working mode may be stale: the first setpoint waits for one read of it.
    void this.plant.learn();
    if (wantsGridCharging(this.modeNow)) void this.gridCharging(true);
    // The device's meter needs the maker's meter accessory: 7120 says whether it is set up, before the first reading.
    if (this.config.meterSource === 'device') this.later(() => void this.checkDeviceMeter().then(() => this.pollMeter()), 0);
    else this.later(() => this.pollState(), 0);
    // A pulse's follow-up is due by time, and a silent meter is looked for.
    this.tickTimer = setInterval(() => {
      // In charge and standby the regulator rests: no pulse, and the meter is not needed.
      if (this.closed || this.handing || !regulated(this.modeNow)) return;
      this.repeatReading();
      const decision = this.regulator.tick(this.now());
      if (decision) this.act(decision, true);
    }, TICK_MS);
  }

  /** A meter from messages that publishes only on change: its silence is taken as "unchanged". */
  private get repeats(): boolean {
    return this.config.meterSource === 'message' && this.config.meterSends === 'on-change';
  }

  /**
   * A meter that publishes only on change is silent while nothing changes: its last reading is taken again each
   * meter interval (the first after one and a half, so a late message is not doubled) while the silence is shorter than
   * the meter time-out less one interval. The regulator's own time-out is then REPEATS_MISSED intervals: it acts once
   * the repeats have stopped, from the configured time-out after the last message to one interval later.
   */
  private repeatReading(): void {
    const heard = this.heard;
    if (!this.repeats || !heard || !this.regulator.enabled) return;
    const now = this.now();
    const every = this.config.meterIntervalMs;
    const silentMs = now - heard.at;
    const repeatsEnd = this.config.regulator.meterTimeoutMs - (REPEATS_MISSED - 1) * every;
    if (now - this.takenAt >= every && silentMs >= 1.5 * every && silentMs < repeatsEnd) this.take(heard.grid);
  }

  private get handing(): boolean {
    return this.handBacks.size > 0;
  }

  /** Steering now: not closed, disabled, handing back, handed back or timed out. */
  private get steers(): boolean {
    const { regulator } = this;
    return !this.closed && !this.handing && regulator.enabled && regulator.steering && !regulator.meterTimedOut;
  }

  /** A new grid power to hold (checked by the caller), from the next reading on. */
  setTarget(target: number): void {
    this.regulator.setTarget(target);
  }

  /** Turns the loop on or off; off, the battery is left as On stop says (with keep: the needed setpoint). */
  enable(on: boolean): void {
    // Enabled again after a meter fault: the owner fixed the meter (or its settings), the check starts over.
    if (on && this.fault) {
      this.fault = undefined;
      this.meterCheck.reset();
    }
    const was = this.regulator.enabled;
    if (was && !on) void this.track(this.handBack(this.config.onStop));
    this.regulator.enable(on, this.now());
    if (was !== on && (wantsGridCharging(this.modeNow) || this.gridChargingAfter)) void this.gridCharging(on);
    // Back on: what the battery gives now is where the loop starts (a meter that sends on change was silent meanwhile);
    // a mode that sets the setpoint sets it at once.
    if (!was && on) {
      this.fixedSent = undefined;
      void this.readDevice(false);
      if (this.heard) this.heard = { ...this.heard, at: this.now() };
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
    this.regulator.setMaxDischarge(dischargeBound(mode, this.powerNow.discharge));
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
      this.fixedCharging = true;
      // The regulator's pulse ends here: the mode's own setpoint replaces it.
      this.regulator.exit(now, 'mode');
      return this.steerFixed(undefined, true);
    }
    if (!regulated(was)) {
      this.regulator.resume(now);
      // The battery may have moved by itself meanwhile (stopped at its SOC, maybe after the last read): the regulator
      // starts from a read of 6000 (readings wait for it), or it would steer from a charge that ended.
      void this.track(this.restartFromRead())
        .then((meter) => this.decideAfterRest(now, meter))
        .catch((error: unknown) => this.failure(error));
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

  /**
   * Normal after a mode that set the setpoint itself (from `since`) decides once the battery was read, from the latest
   * reading: the device's meter read with it, or the last from one interval before `since` on (a message taken while
   * the read was under way too), not a reading later.
   */
  private decideAfterRest(since: number, meter?: number): void {
    if (meter !== undefined) return this.take(meter);
    const last = this.heard ?? this.fixedReading;
    if (last && since - last.at <= this.config.meterIntervalMs) this.take(last.grid);
  }

  /** The battery as read now is where the regulator starts; resolves with the device's meter read with it. Never rejects. */
  private async restartFromRead(): Promise<number | undefined> {
    try {
      const { battery, soc, meter } = await this.plant.read(this.config.meterSource === 'device');
      if (soc !== undefined) this.regulator.observeSoc(soc, this.now());
      if (battery !== undefined) this.regulator.restartFrom(battery, this.now());
      return meter;
    } catch (error) {
      this.failure(error);
      return undefined;
    }
  }

  /** Out of charge: grid charging goes back once the new mode decided, after its setpoint (`sent`) has its answer. */
  private restoreAfter(sent?: Promise<unknown>): void {
    if (!this.gridChargingAfter) return;
    this.gridChargingAfter = false;
    void (sent ?? Promise.resolve()).then(() => (wantsGridCharging(this.modeNow) ? undefined : this.gridCharging(false)));
  }

  /**
   * A grid reading from a message (checked; in the meter's sign and unit, converted here); `battery` (W, positive discharging like 6000) and
   * `soc` (%) where the message carries them. An implausible battery power is ignored.
   */
  reading(given: number, battery?: number, soc?: number): void {
    if (this.closed) return;
    const grid = meterWatts(given, this.config.meterSign, this.config.meterUnit);
    this.heard = { grid, at: this.now() };
    this.take(grid, battery, soc);
  }

  /** A grid reading (a message's, its repeat or the device's meter), with what came with it. */
  private take(grid: number, battery?: number, soc?: number): void {
    if (this.closed) return;
    if (battery !== undefined && !this.regulator.plausibleBattery(battery, this.now())) {
      if (!this.warnedBattery) this.host.implausibleBattery(battery);
      this.warnedBattery = true;
      battery = undefined;
    }
    if (soc !== undefined) this.regulator.observeSoc(soc, this.now());
    if (!this.regulator.enabled || this.handing) return this.meterCheck.gap();
    if (!regulated(this.modeNow)) {
      this.meterCheck.gap();
      return this.steerFixed(grid, false);
    }
    // While a write of this controller is on its way, what the queue knows may be that write.
    if (!this.regulator.inFlight) this.followOthers();
    this.takenAt = this.now();
    const decision = this.regulator.meter(grid, this.now(), battery);
    const fault = this.meterCheck.observe(grid, decision.battery, this.regulator.setpoint);
    if (fault) return this.stopForMeter(fault);
    if (decision.action === 'hold' && !this.regulator.moving && this.meterCheck.probeDue()) return this.probeMeter(decision);
    this.act(decision);
    this.readAfterHold(decision);
  }

  /** A unit of the group left: the total its share goes over with, as the regulator reads the last reading now. */
  private totalAfterLeave(): number | undefined {
    if (this.closed || this.handing || !this.regulator.enabled || !regulated(this.modeNow)) return undefined;
    const total = this.regulator.unitLeft(this.now());
    return total === undefined ? undefined : modeSetpoint(this.modeNow, total);
  }

  /** Stops the reads and the clock and leaves the battery as configured; resolves when the device has it. */
  close(): Promise<void> {
    this.closed = true;
    this.plant.close?.();
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
    const other = this.plant.othersWrote(this.ownWriteAt);
    if (!other) return;
    this.ownWriteAt = other.at;
    // Handed back by another: only a controller that steers has a state to drop (at the start, the read of 6000 stands).
    if (other.handedBack) {
      if (this.regulator.steering) this.regulator.handedBack();
    } else if (other.watts !== undefined) {
      // Carried out when it arrived, up to an answer time before it was acknowledged.
      this.regulator.acknowledge(other.watts, other.at, other.at - ANSWER_MS);
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

  private track<T>(work: Promise<T>): Promise<T> {
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
  private async send(watts: number, urgent = false, soc?: number, steady?: number, force = false): Promise<boolean> {
    const regulator = this.regulator;
    this.yieldRead();
    try {
      const outcome = await this.plant.apply(watts, { urgent, soc, steady, force, onStart: () => regulator.started(this.now()) });
      if (outcome.superseded) regulator.failed(true);
      else regulator.acknowledge(outcome.watts, this.now());
      if (outcome.modeRestored) this.warnDropped(outcome.watts);
      this.ownWriteAt = this.now();
      if (!this.closed) this.host.changed();
    } catch (error) {
      regulator.failed();
      this.failure(error);
      this.followUp();
      return false;
    }
    // An overdrive ended on its needed setpoint: the battery is answering now, and a read shows one that falls short
    // before the next moves wind the setpoint up (a loop that moves at every reading leaves no slot after a hold).
    if (!this.followUp() && urgent) this.readAfterPulse();
    return true;
  }

  /** An overdrive's next setpoint, at once after the last one's answer; whether there was one. */
  private followUp(): boolean {
    if (this.closed || this.handing) return false;
    const next = this.regulator.followUp(this.now());
    if (next) this.act(next, true);
    return next !== undefined;
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
        await this.plant.keep?.();
      } else if (how === 'self-consumption') {
        await this.plant.selfConsumption();
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
    if (decision.action === 'set') {
      // An overdrive heads to its steady setpoint, bounded by the mode like the pulse.
      const steady =
        decision.reason === 'overdrive' && decision.steady !== undefined ? modeSetpoint(this.modeNow, decision.steady) : undefined;
      sent = this.send(decision.setpoint!, urgent, undefined, steady);
    } else if (decision.action === 'standby') sent = this.send(0);
    else if (decision.action === 'self-consumption') sent = this.track(this.handBack('self-consumption'));
    this.restoreAfter(sent);
  }

  /**
   * Battery power and SOC (and the meter, when it is the device's) in one read through the shared queue; `signal`
   * withdraws it while it waits (quietly).
   */
  private async readDevice(withMeter: boolean, options: { signal?: AbortSignal; onStart?: () => void } = {}): Promise<void> {
    const asked = this.now();
    try {
      const { battery, soc, meter, dischargeSoc, leashWh } = await this.plant.read(withMeter, options);
      if (soc !== undefined) this.regulator.observeSoc(soc, this.now());
      this.followFloor(dischargeSoc);
      this.followLimits();
      this.leashWhNow = leashWh ?? this.leashWhNow;
      // In charge, the SOC decides when it stops (with the device's meter, the reading below looks).
      if (!withMeter && !regulated(this.modeNow) && this.regulator.enabled && !this.handing && !this.closed)
        this.steerFixed(undefined, false);
      // The meter may be up to its refresh older than 6000: the battery counts as a read-back, the models bridge the age.
      if (battery !== undefined) this.regulator.observeBattery(battery, this.now(), asked);
      if (this.regulating) {
        this.checkCommand();
        this.renewLeash();
      }
      // A frozen meter's repeats are no readings: the time-out acts.
      if (withMeter && meter !== undefined && !this.meterCheck.frozen(meter, battery, this.now())) this.take(meter);
    } catch (error) {
      if (!options.signal?.aborted) this.failure(error);
    }
  }

  /** The regulator steers the battery now (normal or hold, on, no hand-back under way). */
  private get regulating(): boolean {
    return !this.closed && !this.handing && this.regulator.enabled && regulated(this.modeNow) && this.regulator.steering;
  }

  /** The discharge floor the plant read (the device's backup SOC) is the regulator's; said once where it raises Discharge to. */
  private followFloor(floor: number | undefined): void {
    if (floor === undefined || floor === this.regulator.settings.dischargeSoc) return;
    this.regulator.setDischargeSoc(floor);
    const dischargeSoc = this.config.regulator.dischargeSoc;
    if (floor <= dischargeSoc || this.warnedFloor) return;
    this.warnedFloor = true;
    this.host.warning?.('backupFloor', { floor, dischargeSoc });
  }

  /**
   * The plant's limits (the battery's own once read, see DeviceClient.limits) bound the regulator and the charge mode;
   * said once where they lower the settings.
   */
  private followLimits(): void {
    const { charge, discharge } = this.powerNow;
    this.regulator.setMaxCharge(charge);
    this.regulator.setMaxDischarge(dischargeBound(this.modeNow, discharge));
    const { maxCharge, maxDischarge } = this.config.regulator;
    if (this.warnedLimits || (charge === maxCharge && discharge === maxDischarge)) return;
    this.warnedLimits = true;
    const { chargeLimit, dischargeLimit } = this.plant.limits;
    this.host.warning?.('deviceLimits', { charge: chargeLimit, discharge: dischargeLimit });
  }

  private warnDropped(setpoint: number): void {
    if (this.warnedDropped || this.closed) return;
    this.warnedDropped = true;
    this.host.warning?.('commandDropped', { setpoint });
  }

  /** The SOC moved the leash of the command in force: the setpoint goes again, with its new SOC field. */
  private renewLeash(): void {
    if (!this.plant.leashMoved?.()) return;
    const value = this.regulator.renew(this.now());
    if (value !== undefined) void this.send(value);
  }

  /**
   * A battery far short of its setpoint after the ramp (the regulator's shortfall) may have dropped its command (a
   * restart or a reconnect: working mode 1, or standby). Once per setpoint acknowledged, the working mode and the
   * command's read-back are read; where the device dropped it, the setpoint goes again (the mode first), said once.
   * Where nothing tells (no read-back, mode 4), it goes again once where the battery rests. A derated battery that holds
   * it falls short on. A
   * setpoint in flight meanwhile goes with the mode switch itself (the read of 7101 told the device state).
   */
  private checkCommand(): void {
    const holdsCommand = this.plant.holdsCommand?.bind(this.plant);
    if (!holdsCommand || this.checking || this.regulator.shortfall === undefined) return;
    if (this.checkedAt >= this.ownWriteAt) return;
    this.checking = true;
    this.checkedAt = this.now();
    void holdsCommand()
      .then((holds) => {
        const { setpoint, shortfall } = this.regulator;
        // Nothing tells: only a battery at rest (standby) looks dropped; a derated one still gives some power.
        const resting = Math.abs(shortfall ?? 0) < this.config.regulator.minPower;
        if (holds === true || !this.regulating || (holds === undefined && (this.resentBlind === setpoint || !resting))) return;
        const value = this.regulator.renew(this.now());
        if (value === undefined) return;
        this.resentBlind = holds === undefined ? value : undefined;
        if (holds === false) this.warnDropped(value);
        return this.send(value, true, undefined, undefined, true);
      })
      .catch((error: unknown) => this.failure(error))
      .finally(() => (this.checking = false));
  }

  /**
   * Charge or standby: sends the mode's setpoint when it changed (the SOC reached, a new mode) and reports it, with
   * `grid` where a reading came; `force`: report even without a reading (a new mode). Where the device stopped by itself
   * at its SOC, the regulator learns it from the read that normal starts with (enterMode()).
   */
  private steerFixed(grid?: number, force = false): void {
    const mode = this.modeNow as 'charge' | 'standby';
    if (grid !== undefined) this.fixedReading = { grid, at: this.now() };
    const fixed = fixedSetpoint(mode, this.chargeMode, this.regulator.soc, this.fixedCharging);
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
   * Grid charging on for the charge mode where it is off, or back to what it was after (the plant knows, per device).
   * One change after another; a failure (the 1600 class refuses 1143) is reported and the charge goes on. Never rejects.
   */
  private gridCharging(on: boolean): Promise<void> {
    this.gridChargingAfter = false;
    const work = this.settingWork.then(async () => {
      try {
        if (on && this.closed) return;
        if (!(await this.plant.gridCharging(on)) && !this.warnedNoGridCharging) {
          this.warnedNoGridCharging = true;
          this.host.warning?.('noGridCharging', {});
        }
      } catch (error) {
        this.failure(error);
      }
    });
    this.settingWork = work;
    return work;
  }

  /** A probe for the meter check (meter-check.ts): more discharge within the mode and the maximum, if any. */
  private probeMeter(decision: Decision): void {
    const steady = this.regulator.setpoint ?? 0;
    const probe = modeSetpoint(this.modeNow, Math.min(steady + PROBE_W, this.regulator.settings.maxDischarge));
    if (probe - steady < PROBE_W / 2) return this.act(decision);
    this.act({ ...decision, action: 'set', setpoint: probe, steady: probe, reason: 'meter check' });
  }

  /** The device's meter not set up (7120): the loop does not start. A failed read leaves it to the readings. Never rejects. */
  private async checkDeviceMeter(): Promise<void> {
    try {
      if ((await this.plant.meterConnected?.()) === false) this.stopForMeter('not connected');
    } catch (error) {
      this.failure(error);
    }
  }

  /**
   * The meter cannot be right: the loop stops (it is off until enabled again), a battery it steered stands by, then is
   * left as On stop says (keep: standby, the setpoint it needed came from that meter).
   */
  private stopForMeter(fault: MeterFault): void {
    if (this.fault || this.closed) return;
    this.fault = fault;
    const steered = this.regulator.steering;
    this.regulator.enable(false, this.now());
    this.host.meterFault(fault);
    this.host.changed();
    if (!steered) return;
    void this.track(
      this.send(0, true).then(() => (this.config.onStop === 'self-consumption' ? this.handBack('self-consumption') : undefined)),
    );
  }

  // The device's meter: one read per interval, the next only after the last has come back (the queue paces it).
  private pollMeter(): void {
    const started = this.now();
    void this.readDevice(true).finally(() =>
      this.later(() => this.pollMeter(), Math.max(0, this.config.meterIntervalMs - (this.now() - started))),
    );
  }

  /** The timer's part of the reads of 6000: every STATE_READ_MS until it steers, then only a late one. */
  private pollState(): void {
    const late = this.now() - this.stateReadAt >= (this.regulator.steering ? STEERING_READ_LATE_MS : STATE_READ_MS);
    if (late) this.readState(false);
    this.later(() => this.pollState(), POLL_MS);
  }

  /**
   * While it steers, a read of 6000 that is due goes right after a reading that moved nothing: the slot after it is
   * the one no write needs (the next reading is an interval away), and a load step finds the device free.
   */
  private readAfterHold(decision: Decision): void {
    if (this.config.meterSource !== 'message' || decision.action !== 'hold' || !this.regulator.steering) return;
    // The regulator waits for this read before it moves on (more of a pulse's way: a shortfall or a load?).
    if (decision.reason === 'battery check') return this.readState(false);
    if (this.regulator.moving) return;
    if (this.now() - this.stateReadAt >= STEERING_READ_MS) this.readState(true);
  }

  private readAfterPulse(): void {
    if (this.config.meterSource !== 'message' || !this.regulator.steering) return;
    if (this.now() - this.stateReadAt >= PULSE_READ_GAP_MS) this.readState(false);
  }

  private readState(yields: boolean): void {
    if (this.stateRead || this.closed) return;
    const read = { abort: new AbortController(), started: false, yields, askedBefore: this.stateReadAt };
    this.stateRead = read;
    this.stateReadAt = this.now();
    const onStart = () => (read.started = true);
    void this.readDevice(false, { signal: read.abort.signal, onStart }).finally(() => {
      if (this.stateRead === read) this.stateRead = undefined;
    });
  }

  /** A write goes out: a read of 6000 that still waits and may yield is withdrawn, and is due again as it was. */
  private yieldRead(): void {
    const read = this.stateRead;
    if (!read || read.started || !read.yields) return;
    this.stateRead = undefined;
    this.stateReadAt = read.askedBefore;
    read.abort.abort();
  }
}
