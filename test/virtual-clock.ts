/**
 * Simulated time for code that runs on timers (the zero feed-in controller, the group plant): while installed, the
 * global setTimeout, setInterval and their clears run on this clock, which moves only when told (runTo). After each
 * timer fires, the promise callbacks it set off run (a real setImmediate turn) before the next: the code sees hours
 * pass in seconds, in the same order as it would in real time. setImmediate and the rest stay real.
 */
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
  /** ms since the clock was made. */
  now = 0;
  private readonly timers = new Map<number, Timer>();
  private nextId = 1;
  private installed = false;

  /** Replaces the global timers with this clock's; returns what puts the real ones back. */
  install(): () => void {
    if (this.installed) throw new Error('the virtual clock is installed already');
    this.installed = true;
    const add = (run: () => void, ms: number | undefined, every: boolean) => {
      const delay = Math.max(0, Number(ms) || 0);
      const id = this.nextId++;
      this.timers.set(id, { id, at: this.now + delay, every: every ? Math.max(1, delay) : undefined, run });
      return new Handle(id);
    };
    const clear = (handle: unknown) => {
      if (handle instanceof Handle) this.timers.delete(handle.id);
      else if (handle !== undefined) REAL.clearTimeout(handle as NodeJS.Timeout);
    };
    const g = globalThis as Record<string, unknown>;
    g.setTimeout = (run: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => add(() => run(...args), ms, false);
    g.setInterval = (run: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => add(() => run(...args), ms, true);
    g.clearTimeout = clear;
    g.clearInterval = clear;
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
}
