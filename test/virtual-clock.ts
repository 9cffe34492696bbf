/**
 * Simulated time for code that runs on timers: while installed, the global setTimeout, setInterval and their clears
 * run on this clock (the zero feed-in controller, the group plant); code that takes a clock (the poller) gets asClock().
 * The clock moves only when told (runTo, advance). After each timer fires, the promise callbacks it set off run (a real
 * setImmediate turn) before the next: the code sees hours pass in seconds, in the same order as it would in real time.
 * setImmediate and the rest stay real.
 */
import type { Clock } from '../src/device/poller';

interface Timer {
  id: number;
  at: number;
  every?: number;
  run: () => void;
}

/** What the code under the clock gets for a timer: enough of a Node timer for clear, unref and ref. */
class Handle {
  constructor(readonly id: number) {}
  unref(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  hasRef(): boolean {
    return false;
  }
  [Symbol.toPrimitive](): number {
    return this.id;
  }
}

const REAL = { setTimeout, setInterval, clearTimeout, clearInterval, setImmediate };
/** The promise callbacks set off so far run before this resolves. */
export const settle = () => new Promise<void>((resolve) => REAL.setImmediate(resolve));

export class VirtualClock {
  private readonly timers = new Map<number, Timer>();
  private nextId = 1;
  private installed = false;

  /** `now`: ms, from `start` on. */
  constructor(public now = 0) {}

  private add(run: () => void, ms: number | undefined, every: boolean): Handle {
    const delay = Math.max(0, Number(ms) || 0);
    const id = this.nextId++;
    this.timers.set(id, { id, at: this.now + delay, every: every ? Math.max(1, delay) : undefined, run });
    return new Handle(id);
  }

  private clear(handle: unknown): void {
    if (handle instanceof Handle) this.timers.delete(handle.id);
    else if (handle !== undefined) REAL.clearTimeout(handle as NodeJS.Timeout);
  }

  /** This clock for code that is given one. */
  asClock(): Clock {
    return {
      now: () => this.now,
      setTimeout: (callback, ms) => this.add(callback, ms, false),
      clearTimeout: (timer) => this.clear(timer),
    };
  }

  /** Timers that have not fired yet. */
  get pending(): number {
    return this.timers.size;
  }

  /** Replaces the global timers with this clock's; returns what puts the real ones back. */
  install(): () => void {
    if (this.installed) throw new Error('the virtual clock is installed already');
    this.installed = true;
    const g = globalThis as Record<string, unknown>;
    g.setTimeout = (run: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => this.add(() => run(...args), ms, false);
    g.setInterval = (run: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => this.add(() => run(...args), ms, true);
    g.clearTimeout = (handle: unknown) => this.clear(handle);
    g.clearInterval = (handle: unknown) => this.clear(handle);
    return () => {
      Object.assign(g, { setTimeout: REAL.setTimeout, setInterval: REAL.setInterval });
      Object.assign(g, { clearTimeout: REAL.clearTimeout, clearInterval: REAL.clearInterval });
      this.timers.clear();
      this.installed = false;
    };
  }

  /** Moves the clock to `ms`, firing every timer due on the way in order, each followed by what it set off. */
  async runTo(ms: number): Promise<void> {
    for (;;) {
      let next: Timer | undefined;
      for (const timer of this.timers.values()) if (timer.at <= ms && (!next || timer.at < next.at)) next = timer;
      if (!next) break;
      this.now = Math.max(this.now, next.at);
      if (next.every === undefined) this.timers.delete(next.id);
      else next.at += next.every;
      next.run();
      await settle();
    }
    this.now = Math.max(this.now, ms);
  }

  /** Moves the clock on by `ms` (see runTo), then lets what the last timer set off settle. */
  async advance(ms: number): Promise<void> {
    await this.runTo(this.now + ms);
    await settle();
  }
}
