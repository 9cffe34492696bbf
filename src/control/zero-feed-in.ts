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
  onStop: OnStop;
}

/** What the controller tells its host (the node): each decision, a change worth a new status, failures. */
export interface ZeroFeedInHost {
  decision(decision: Decision): void;
  changed(): void;
  failure(error: unknown): void;
  /** A battery power given with a reading that the battery cannot be giving (said once). */
  implausibleBattery(power: number): void;
}

/** With the meter from messages, battery power and SOC are read this often (one request, shared with the others)... */
const STATE_READ_MS = 30000;
/** ...and this often while it steers, in a slot no write needs: a battery that falls short of its setpoint is seen
 * within seconds. A read due goes right after a reading that moved nothing, and gives way to a write while it waits... */
const STEERING_READ_MS = 3000;
/** ...until it is this late (the loop moves at every reading, as when it winds up): then it goes and waits its turn. */
const STEERING_READ_LATE_MS = 2 * STEERING_READ_MS;
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
  /** The hand-backs under way (disable, time-out), so that a close waits for every one rather than racing them. */
  private readonly handBacks = new Set<Promise<void>>();
  /** When this controller's last write was acknowledged (performance.now(), as the queue's known values). */
  private ownWriteAt = -Infinity;
  private closed = false;
  /** When battery power and SOC were last asked for (meter from messages). */
  private stateReadAt = -Infinity;
  /** The read of 6000 under way (meter from messages); `yields`: withdrawn while it waits if a write needs the slot. */
  private stateRead: { abort: AbortController; started: boolean; yields: boolean; askedBefore: number } | undefined;
  private warnedBattery = false;
  /** The last reading from a message, and when the regulator last took a reading (a message's, or its repeat). */
  private heard: { grid: number; at: number } | undefined;
  private takenAt = -Infinity;

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
    const meterTimeoutMs = this.repeats ? REPEATS_MISSED * config.meterIntervalMs : config.regulator.meterTimeoutMs;
    this.regulator = new Regulator({ ...config.regulator, slow, meterTimeoutMs, requestIntervalMs: this.plant.minIntervalMs }, now());
  }

  /** Starts the reads and the clock. */
  start(): void {
    // What an earlier deployment saw of the working mode may be stale: the first setpoint waits for one read of it.
    void this.plant.learn();
    if (this.config.meterSource === 'device') this.later(() => this.pollMeter(), 0);
    else this.later(() => this.pollState(), 0);
    // A pulse's follow-up is due by time, and a silent meter is looked for.
    this.tickTimer = setInterval(() => {
      if (this.closed || this.handing) return;
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

  /** A new grid power to hold (checked by the caller), from the next reading on. */
  setTarget(target: number): void {
    this.regulator.setTarget(target);
  }

  /** Turns the loop on or off; off, the battery is left as On stop says (with keep: the needed setpoint). */
  enable(on: boolean): void {
    const was = this.regulator.enabled;
    if (was && !on) void this.track(this.handBack(this.config.onStop));
    this.regulator.enable(on, this.now());
    // Back on: what the battery gives now is where the loop starts; a meter that sends on change was silent meanwhile.
    if (!was && on) void this.readDevice(false);
    if (!was && on && this.heard) this.heard = { ...this.heard, at: this.now() };
    this.host.changed();
  }

  /**
   * A grid reading from a message (checked: W, positive importing); `battery` (W, positive discharging like 6000) and
   * `soc` (%) where the message carries them. An implausible battery power is ignored.
   */
  reading(grid: number, battery?: number, soc?: number): void {
    if (this.closed) return;
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
    if (!this.regulator.enabled || this.handing) return;
    // While a write of this controller is on its way, what the queue knows may be that write.
    if (!this.regulator.inFlight) this.followOthers();
    this.takenAt = this.now();
    const decision = this.regulator.meter(grid, this.now(), battery);
    this.act(decision);
    this.readAfterHold(decision);
  }

  /** Stops the reads and the clock and leaves the battery as configured; resolves when the device has it. */
  close(): Promise<void> {
    this.closed = true;
    this.plant.close?.();
    clearInterval(this.tickTimer);
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    return Promise.all([...this.handBacks]).then(() => (this.regulator.enabled ? this.handBack(this.config.onStop) : undefined));
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
  private async send(watts: number, urgent = false): Promise<void> {
    const regulator = this.regulator;
    this.yieldRead();
    try {
      const outcome = await this.plant.apply(watts, { urgent, onStart: () => regulator.started(this.now()) });
      if (outcome.superseded) regulator.failed(true);
      else regulator.acknowledge(outcome.watts, this.now());
      this.ownWriteAt = this.now();
      if (!this.closed) this.host.changed();
    } catch (error) {
      regulator.failed();
      this.failure(error);
    }
    if (this.closed || this.handing) return;
    const next = regulator.followUp(this.now());
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
    this.report(decision);
    if (decision.action === 'set') void this.send(decision.setpoint!, urgent);
    else if (decision.action === 'standby') void this.send(0);
    else if (decision.action === 'self-consumption') void this.track(this.handBack('self-consumption'));
  }

  /**
   * Battery power and SOC (and the meter, when it is the device's) in one read through the shared queue; `signal`
   * withdraws it while it waits (quietly).
   */
  private async readDevice(withMeter: boolean, options: { signal?: AbortSignal; onStart?: () => void } = {}): Promise<void> {
    const asked = this.now();
    try {
      const { battery, soc, meter } = await this.plant.read(withMeter, options);
      if (soc !== undefined) this.regulator.observeSoc(soc, this.now());
      // The meter may be up to its refresh older than 6000: the battery counts as a read-back, the models bridge the age.
      if (battery !== undefined) this.regulator.observeBattery(battery, this.now(), asked);
      if (withMeter && meter !== undefined) this.take(meter);
    } catch (error) {
      if (!options.signal?.aborted) this.failure(error);
    }
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
    if (this.config.meterSource !== 'message' || decision.action !== 'hold' || !this.regulator.steering || this.regulator.moving) return;
    if (this.now() - this.stateReadAt >= STEERING_READ_MS) this.readState(true);
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
