/**
 * When the zero feed-in controller (src/control/zero-feed-in.ts) reads the device through the shared queue: battery
 * power and SOC (6000, 6002) with a meter from messages, or the device's own meter once per meter interval.
 *
 * Holds: when battery power and SOC were last asked for, the read of them under way, and the timers of the polls.
 * Written by: this schedule only; the controller tells it of a decision (afterHold), an overdrive's end (afterPulse)
 * and a write going out (yieldRead). Read by: nobody else; what a read returns goes to the controller's `read`.
 * Invariants: at most one read of 6000 under way; one that may yield and has not started is withdrawn when a write
 * goes out, and is then due again as it was; no poll is started after the close.
 */
import type { ReadOptions } from './device-plant';
import type { Decision, Regulator } from './regulator';
import type { ZeroFeedInConfig } from './zero-feed-in-config';

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

export interface ReadParts {
  regulator: Regulator;
  config: ZeroFeedInConfig;
  now: () => number;
  closed: () => boolean;
  /** One read of the device (with its meter or not), its result given to the controller. Never rejects. */
  read: (withMeter: boolean, options?: ReadOptions) => Promise<void>;
}

export class ReadSchedule {
  private readonly timers = new Set<NodeJS.Timeout>();
  /** When battery power and SOC were last asked for (meter from messages). */
  private stateReadAt = -Infinity;
  /** The read of 6000 under way (meter from messages); `yields`: withdrawn while it waits if a write needs the slot. */
  private stateRead: { abort: AbortController; started: boolean; yields: boolean; askedBefore: number } | undefined;

  constructor(private readonly parts: ReadParts) {}

  /** The polls start: the device's meter after `first` (its check), or the reads of 6000. */
  start(first: () => Promise<void>): void {
    if (this.parts.config.meterSource === 'device') this.later(() => void first().then(() => this.pollMeter()), 0);
    else this.later(() => this.pollState(), 0);
  }

  /** No poll any more (the close). */
  close(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  /**
   * While it steers, a read of 6000 that is due goes right after a reading that moved nothing: the slot after it is
   * the one no write needs (the next reading is an interval away), and a load step finds the device free.
   */
  afterHold(decision: Decision): void {
    const { config, regulator, now } = this.parts;
    if (config.meterSource !== 'message' || decision.action !== 'hold' || !regulator.steering) return;
    // The regulator waits for this read before it moves on (more of a pulse's way: a shortfall or a load?).
    if (decision.reason === 'battery check') return this.readState(false);
    if (regulator.moving) return;
    if (now() - this.stateReadAt >= STEERING_READ_MS) this.readState(true);
  }

  /** An overdrive ended on its needed setpoint: a read shows a battery that falls short before the next moves. */
  afterPulse(): void {
    if (this.parts.config.meterSource !== 'message' || !this.parts.regulator.steering) return;
    if (this.parts.now() - this.stateReadAt >= PULSE_READ_GAP_MS) this.readState(false);
  }

  /** A write goes out: a read of 6000 that still waits and may yield is withdrawn, and is due again as it was. */
  yieldRead(): void {
    const read = this.stateRead;
    if (!read || read.started || !read.yields) return;
    this.stateRead = undefined;
    this.stateReadAt = read.askedBefore;
    read.abort.abort();
  }

  // The device's meter: one read per interval, the next only after the last has come back (the queue paces it).
  private pollMeter(): void {
    const { now, config } = this.parts;
    const started = now();
    void this.parts.read(true).finally(() => this.later(() => this.pollMeter(), Math.max(0, config.meterIntervalMs - (now() - started))));
  }

  /** The timer's part of the reads of 6000: every STATE_READ_MS until it steers, then only a late one. */
  private pollState(): void {
    const late = this.parts.now() - this.stateReadAt >= (this.parts.regulator.steering ? STEERING_READ_LATE_MS : STATE_READ_MS);
    if (late) this.readState(false);
    this.later(() => this.pollState(), POLL_MS);
  }

  private readState(yields: boolean): void {
    if (this.stateRead || this.parts.closed()) return;
    const read = { abort: new AbortController(), started: false, yields, askedBefore: this.stateReadAt };
    this.stateRead = read;
    this.stateReadAt = this.parts.now();
    const onStart = () => (read.started = true);
    void this.parts.read(false, { signal: read.abort.signal, onStart }).finally(() => {
      if (this.stateRead === read) this.stateRead = undefined;
    });
  }

  private later(run: () => void, ms: number): void {
    if (this.parts.closed()) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
  }
}
