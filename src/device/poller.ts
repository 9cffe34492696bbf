/**
 * Reading points on a schedule without Node-RED: polls at an interval on the clock's grid, backs off while the device
 * fails, reports an outage once and its end once, and decides what a read sends ("only on change" with a dead band
 * and a heartbeat, judged per point when each point goes out on its own).
 */
import type { ReadResult } from './client';
import { DeviceError } from '../errors';

/** A read node's dead band: for every numeric point, and by point key (name, or address for an extra address). */
export interface DeadBand {
  all: number;
  byPoint: Map<string, number>;
}

export const NO_DEAD_BAND: DeadBand = { all: 0, byPoint: new Map() };

export interface Reading {
  key: string;
  address: number;
  value: number | string;
}

/** What a read gives and what of it goes out. */
export interface PollOutcome {
  /** Every value read, in the order asked. */
  readings: Reading[];
  /** The values to send now; undefined: no message at all ("only on change" found nothing to send). */
  sending: Reading[] | undefined;
  /** How many values count as changed since they were last sent. */
  changed: number;
  /** Keys of the points the device left out. */
  missing: string[];
  /** Of those, the ones not left out before (to warn about once). */
  newlyMissing: string[];
}

export interface ChangeSettings {
  /** The key a value goes out under (point name or address). */
  keyOf: (address: number) => string;
  /** Send only what changed (and what the heartbeat is due for). */
  onlyChange: boolean;
  deadBand: DeadBand;
  /** With only on change: after this long without a send, the current values go out anyway; 0: never. */
  heartbeatMs: number;
  /** Each point goes out on its own: change and heartbeat are judged per point. Otherwise all go out together. */
  perPoint: boolean;
}

/** Decides what each read sends, remembering what was sent and when. */
export class ChangeFilter {
  private readonly sent = new Map<string, { value: number | string; at: number }>();
  /** When the last message of all points together went out. */
  private lastSentAt = -Infinity;
  private readonly warned = new Set<string>();

  constructor(private readonly settings: ChangeSettings) {}

  /**
   * The outcome of a read of `addresses` that gave `result`, at `now` (ms); what it sends counts as sent. Where
   * `keyOf` gives several addresses one key (a model read point), the first that answered gives its value, and the
   * key is missing only when none answered.
   */
  take(result: ReadResult, addresses: number[], now: number, keyOf = this.settings.keyOf): PollOutcome {
    const { onlyChange, heartbeatMs, perPoint } = this.settings;
    const readings: Reading[] = [];
    for (const address of addresses) {
      const key = keyOf(address);
      if (result.values.has(address) && !readings.some((reading) => reading.key === key))
        readings.push({ key, address, value: result.values.get(address)! });
    }
    const missing = [...new Set(result.missing.map(keyOf))].filter((key) => !readings.some((reading) => reading.key === key));
    const newlyMissing = missing.filter((key) => !this.warned.has(key));
    for (const key of newlyMissing) this.warned.add(key);
    const changed = readings.filter((reading) => this.hasChanged(reading));
    const due = (at: number) => heartbeatMs > 0 && now - at >= heartbeatMs;

    let sending: Reading[] | undefined;
    if (!onlyChange) sending = readings;
    else if (perPoint) sending = readings.filter((r) => changed.includes(r) || due(this.sent.get(r.key)?.at ?? -Infinity));
    else sending = changed.length > 0 || due(this.lastSentAt) ? readings : undefined;

    if (sending) {
      for (const reading of sending) this.sent.set(reading.key, { value: reading.value, at: now });
      if (!perPoint) this.lastSentAt = now;
    }
    return { readings, sending, changed: changed.length, missing, newlyMissing };
  }

  /** A value differs from the one sent last by more than its dead band (any difference for text). */
  private hasChanged(reading: Reading): boolean {
    const before = this.sent.get(reading.key);
    if (!before) return true;
    if (typeof reading.value !== 'number' || typeof before.value !== 'number') return before.value !== reading.value;
    const { deadBand } = this.settings;
    return Math.abs(reading.value - before.value) > (deadBand.byPoint.get(reading.key) ?? deadBand.all);
  }
}

/** Time and timers, so that a test can run the poller on a clock of its own. */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/** Like the inject node's "once" delay: the first poll waits until the rest of the flow has started. */
export const FIRST_POLL_DELAY_MS = 100;

/** While polls fail, the next one waits twice as long as the last, up to this (never less than the interval). */
export const POLL_BACKOFF_MAX_MS = 60000;

export interface PollerSettings extends ChangeSettings {
  /** The points every poll reads. */
  addresses: number[];
  /** Time between polls; 0: no polling, reads only on demand. */
  intervalMs: number;
  /** Default POLL_BACKOFF_MAX_MS. */
  backoffMaxMs?: number;
}

/** Reads through the device's queue; `onStart` is called when the request is about to go out. */
export type ReadPoints = (addresses: number[], onStart: () => void) => Promise<ReadResult>;

export interface PollerEvents {
  /** A poll's outcome (also when it sends nothing: the status shows the read). */
  polled(outcome: PollOutcome): void;
  /** A poll failed and starts an outage, or fails with another code than before; further failures alike are quiet. */
  failed(error: Error): void;
  /** A read succeeded after an outage that began `ms` ago, whose last failure had `code`. */
  back(ms: number, code: string): void;
  /** One of the handlers above threw: polling goes on (default: a process warning). */
  warn?(error: Error): void;
}

/**
 * The first moment at or after `time` that is a whole multiple of `stepMs` on the clock. Every poller ticks at such
 * moments, so pollers with the same interval (or one a multiple of the other) poll in the same instant and their
 * reads merge into one request instead of trailing each other by a few milliseconds.
 */
function alignedTime(time: number, stepMs: number): number {
  return Math.ceil(time / stepMs) * stepMs;
}

/**
 * Polls a device at an interval and serves reads on demand, through one ChangeFilter. The tick after a poll is due one
 * interval later whether or not the poll has been answered: a poll that finds the previous one still being answered
 * waits in the queue behind it, so the device never idles between them; only a tick that finds a poll still waiting
 * for its request is skipped (the waiting one will bring the fresh values). While polls fail, the next waits for the
 * last one and backs off.
 */
export class Poller {
  private readonly filter: ChangeFilter;
  private stopped = true;
  private nextPoll: unknown;
  /** Polls not yet answered, and whether one of them still waits for its request. */
  private pollsOpen = 0;
  private pollWaiting = false;
  /** Polls failed in a row; while above 0 polling backs off. */
  private failedPolls = 0;
  /** The failure being reported: the first poll failure of an outage, or one with another code. */
  private outage: { code: string; since: number } | undefined;

  constructor(
    private readonly readPoints: ReadPoints,
    private readonly settings: PollerSettings,
    private readonly events: PollerEvents,
    private readonly clock: Clock = systemClock,
  ) {
    this.filter = new ChangeFilter(settings);
  }

  /** Starts polling, if there is an interval: the pollers started together poll first together, on a 100 ms boundary. */
  start(): void {
    this.stopped = false;
    if (this.settings.intervalMs > 0) this.schedule(alignedTime(this.clock.now() + FIRST_POLL_DELAY_MS, FIRST_POLL_DELAY_MS));
  }

  /** No more polls, and no event from a poll under way. */
  stop(): void {
    this.stopped = true;
    this.clock.clearTimeout(this.nextPoll);
    this.nextPoll = undefined;
  }

  /**
   * Reads `addresses` now (on demand, e.g. for a message), keyed by `keyOf` where given; a success ends an outage.
   * Throws what the read throws.
   */
  async read(addresses: number[], keyOf?: (address: number) => string): Promise<PollOutcome> {
    const result = await this.readPoints(addresses, () => undefined);
    this.answered();
    return this.filter.take(result, addresses, this.clock.now(), keyOf);
  }

  private answered(): void {
    if (this.stopped) return;
    if (this.outage) this.events.back(this.clock.now() - this.outage.since, this.outage.code);
    this.outage = undefined;
    this.failedPolls = 0;
  }

  private schedule(at: number): void {
    this.nextPoll = this.clock.setTimeout(() => this.tick(), at - this.clock.now());
  }

  /** The next tick at least a little and at most `delayMs` from now, on the clock's grid of the interval. */
  private scheduleTick(delayMs: number): void {
    const { intervalMs } = this.settings;
    this.schedule(alignedTime(this.clock.now() + Math.max(1, delayMs - intervalMs + 1), intervalMs));
  }

  private tick(): void {
    this.nextPoll = undefined;
    if (this.stopped) return;
    if (!this.pollWaiting) this.poll();
    if (this.failedPolls > 0) return;
    this.scheduleTick(this.settings.intervalMs);
  }

  private poll(): void {
    const { addresses } = this.settings;
    this.pollsOpen++;
    this.pollWaiting = true;
    let waiting = true;
    const started = () => {
      waiting = false;
      this.pollWaiting = false;
    };
    this.readPoints(addresses, started)
      .then(
        (result) => {
          this.answered();
          if (!this.stopped) this.events.polled(this.filter.take(result, addresses, this.clock.now()));
        },
        (error: Error) => {
          if (!this.stopped) this.pollFailed(error);
        },
      )
      .finally(() => {
        this.pollsOpen--;
        // Failed before its request (queue full): it no longer waits.
        if (waiting) this.pollWaiting = false;
        if (this.stopped || this.pollsOpen > 0) return;
        if (this.failedPolls > 0) {
          // Backing off: the next poll waits for the last one, and longer with each failure.
          this.clock.clearTimeout(this.nextPoll);
          this.scheduleTick(this.backoffMs());
        } else if (this.nextPoll === undefined) {
          // Back after an outage: the ticks resume.
          this.scheduleTick(this.settings.intervalMs);
        }
      })
      // An event handler that throws must not become an unhandled rejection (it would stop Node-RED), nor go unseen.
      .catch((error: unknown) => this.warn(error));
  }

  private warn(error: unknown): void {
    const failure = error instanceof Error ? error : new Error(String(error));
    try {
      if (this.events.warn) this.events.warn(failure);
      else process.emitWarning(failure);
    } catch {
      process.emitWarning(failure);
    }
  }

  private pollFailed(error: Error): void {
    this.failedPolls++;
    const code = error instanceof DeviceError ? error.code : 'ERROR';
    if (this.outage?.code === code) return;
    this.outage = { code, since: this.outage?.since ?? this.clock.now() };
    this.events.failed(error);
  }

  /** The interval, doubled for every failed poll in a row up to the back-off's maximum. */
  private backoffMs(): number {
    const { intervalMs, backoffMaxMs = POLL_BACKOFF_MAX_MS } = this.settings;
    return Math.max(intervalMs, Math.min(backoffMaxMs, intervalMs * 2 ** this.failedPolls));
  }
}
