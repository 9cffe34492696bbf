/**
 * Per-device request scheduler. The device takes one request at a time, at least a second apart, so
 * every operation of every flow goes through one queue per device:
 * - one request in flight at a time, starts at least `minIntervalMs` apart;
 * - waiting reads are merged into as few GetData requests as the address limit allows;
 * - writes (and other commands) go before reads, yet a waiting read gets its turn after two of them, so a control
 *   loop that writes every second cannot starve monitoring; a newer write to an address replaces a waiting one;
 * - the queue is bounded, and close() rejects whatever waits and aborts what is in flight.
 * The spacing itself is kept by a DeviceLine that every scheduler of one device shares, so that two clients
 * (two configurations, or the old and new client across a redeploy) never overlap either.
 */
import { ClientClosedError, QueueFullError } from './errors';

/**
 * Starts are spaced by a few milliseconds more than the minimum, because the device measures arrival
 * times and connection set-up time varies a little from one request to the next.
 */
const ARRIVAL_JITTER_MS = 15;

/** Commands that may run in a row while reads wait: writes come first, but reads must not wait for ever. */
const MAX_COMMANDS_BEFORE_WAITING_READ = 2;

/** One device's request line: one request at a time, starts at least the interval apart. */
export class DeviceLine {
  private lastStart = -Infinity;
  private holder: object | undefined;
  private readonly waiting: (() => void)[] = [];

  /** Milliseconds until a request could start after the last one, at this interval. */
  delayFor(minIntervalMs: number): number {
    return Math.max(0, this.lastStart + minIntervalMs + ARRIVAL_JITTER_MS - performance.now());
  }

  /** Waits until the line is free and the interval has passed, then holds it for `holder`. */
  async acquire(holder: object, minIntervalMs: number, signal: AbortSignal): Promise<void> {
    while (this.holder !== undefined) {
      await this.wait((resolve) => {
        this.waiting.push(resolve);
        return () => this.waiting.splice(this.waiting.indexOf(resolve) >>> 0, 1);
      }, signal);
    }
    this.holder = holder;
    try {
      let delay: number;
      while ((delay = this.delayFor(minIntervalMs)) > 0) {
        await this.wait((resolve) => {
          const timer = setTimeout(resolve, delay);
          return () => clearTimeout(timer);
        }, signal);
      }
    } catch (error) {
      this.release(holder);
      throw error;
    }
    this.lastStart = performance.now();
  }

  /**
   * The request of `holder` is only now going out (its connection took a while to open): count the interval from
   * here, so that the next request cannot reach the device sooner than the interval after this one.
   */
  restartClock(holder: object): void {
    if (this.holder === holder) this.lastStart = performance.now();
  }

  release(holder: object): void {
    if (this.holder !== holder) return;
    this.holder = undefined;
    this.waiting.shift()?.();
  }

  /** Resolves when `start` calls back; on abort, undoes what `start` set up and rejects with CLOSED. */
  private wait(start: (resolve: () => void) => () => void, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(new ClientClosedError());
        return;
      }
      const onAbort = () => {
        undo();
        reject(new ClientClosedError());
      };
      const undo = start(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

const lines = new Map<string, DeviceLine>();

/** The line of the device at host:port, shared by every client in this process. */
export function deviceLine(host: string, port: number): DeviceLine {
  const key = `${host.trim().toLowerCase()}:${port}`;
  let line = lines.get(key);
  if (!line) {
    line = new DeviceLine();
    lines.set(key, line);
  }
  return line;
}

/**
 * Handed to each executor: `gate` waits for the next allowed start (call it before every request), `connected`
 * marks the moment the request's connection is up.
 */
export interface RequestContext {
  gate: () => Promise<void>;
  connected: () => void;
  signal: AbortSignal;
}

export interface SchedulerOptions {
  minIntervalMs: number;
  /** The device's line; a scheduler of its own by default. */
  line?: DeviceLine;
  maxQueue: number;
  maxAddressesPerRead: number;
  /** One GetData request for these addresses; resolves with the answer object. */
  readBatch: (addresses: number[], context: RequestContext) => Promise<Record<string, unknown>>;
  /** One SetData request. */
  write: (address: number, values: number[], context: RequestContext) => Promise<void>;
}

export interface ReadOutcome {
  values: Map<number, unknown>;
  /** Addresses the device left out of its answer (not supported by the model). */
  missing: number[];
}

export type WriteStatus = 'written' | 'superseded';

interface ReadJob {
  pending: Set<number>;
  values: Map<number, unknown>;
  missing: number[];
  resolve: (outcome: ReadOutcome) => void;
  reject: (error: Error) => void;
}

interface CommandJob {
  /** Set for writes: the address whose newer write replaces this one. */
  writeAddress?: number;
  run: (context: RequestContext) => Promise<unknown>;
  resolve: (value: never) => void;
  reject: (error: Error) => void;
}

export class RequestScheduler {
  private readonly options: SchedulerOptions;
  private readonly commands: CommandJob[] = [];
  private readonly reads: ReadJob[] = [];
  private readonly abort = new AbortController();
  private readonly line: DeviceLine;
  private running = false;
  private closed = false;
  /** Commands run in a row while a read was waiting. */
  private commandsAheadOfReads = 0;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  private kick: NodeJS.Immediate | undefined;
  /** Requests started so far (each HTTP request, including a digest challenge's answer). */
  requestCount = 0;

  constructor(options: SchedulerOptions) {
    this.options = options;
    this.line = options.line ?? new DeviceLine();
  }

  get size(): number {
    return this.commands.length + this.reads.length;
  }

  read(addresses: readonly number[]): Promise<ReadOutcome> {
    return new Promise((resolve, reject) => {
      if (!this.admit(reject)) return;
      this.reads.push({ pending: new Set(addresses), values: new Map(), missing: [], resolve, reject });
      this.schedule();
    });
  }

  write(address: number, values: number[]): Promise<WriteStatus> {
    return new Promise((resolve, reject) => {
      const older = this.commands.findIndex((job) => job.writeAddress === address);
      if (older >= 0) {
        // Last write wins: the waiting value is never sent; its caller learns it was superseded.
        const [replaced] = this.commands.splice(older, 1) as [CommandJob];
        (replaced.resolve as (status: WriteStatus) => void)('superseded');
      } else if (!this.admit(reject)) return;
      this.commands.push({
        writeAddress: address,
        run: async (context) => {
          await this.options.write(address, values, context);
          return 'written';
        },
        resolve: resolve,
        reject,
      });
      this.schedule();
    });
  }

  /** Any other single operation (device info, password change), in order with the writes. */
  command<T>(run: (context: RequestContext) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (!this.admit(reject)) return;
      this.commands.push({ run, resolve: resolve, reject });
      this.schedule();
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.kick) clearImmediate(this.kick);
    clearTimeout(this.wakeTimer);
    this.wake?.();
    this.abort.abort();
    const error = new ClientClosedError();
    for (const job of this.commands.splice(0)) job.reject(error);
    for (const job of this.reads.splice(0)) job.reject(error);
  }

  private admit(reject: (error: Error) => void): boolean {
    if (this.closed) {
      reject(new ClientClosedError());
      return false;
    }
    if (this.size >= this.options.maxQueue) {
      reject(new QueueFullError(this.options.maxQueue));
      return false;
    }
    return true;
  }

  private schedule(): void {
    if (this.running || this.closed) return;
    this.running = true;
    // Start on the next turn so that requests made in the same tick are merged.
    this.kick = setImmediate(() => {
      this.kick = undefined;
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    try {
      while (!this.closed && this.size > 0) {
        // Wait before choosing the job, so reads that arrive meanwhile join the batch and writes overtake them.
        await this.sleepUntilAllowed();
        if (this.closed) break;
        try {
          const readsWait = this.reads.length > 0;
          if (this.commands.length > 0 && !(readsWait && this.commandsAheadOfReads >= MAX_COMMANDS_BEFORE_WAITING_READ)) {
            this.commandsAheadOfReads = readsWait ? this.commandsAheadOfReads + 1 : 0;
            await this.runCommand(this.commands.shift()!);
          } else {
            this.commandsAheadOfReads = 0;
            await this.runReadBatch();
          }
        } finally {
          this.line.release(this);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private readonly context: RequestContext = {
    gate: async () => {
      // A second request of one job (a digest challenge's answer) queues on the line like any other.
      this.line.release(this);
      await this.line.acquire(this, this.options.minIntervalMs, this.abort.signal);
      this.requestCount++;
    },
    connected: () => this.line.restartClock(this),
    signal: this.abort.signal,
  };

  private sleepUntilAllowed(): Promise<void> {
    const wait = this.line.delayFor(this.options.minIntervalMs);
    if (wait <= 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = resolve;
      this.wakeTimer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, wait);
    });
  }

  private async runCommand(job: CommandJob): Promise<void> {
    try {
      job.resolve((await job.run(this.context)) as never);
    } catch (error) {
      job.reject(error as Error);
    }
  }

  private async runReadBatch(): Promise<void> {
    const batch = new Set<number>();
    for (const job of this.reads) {
      for (const address of job.pending) {
        if (batch.size >= this.options.maxAddressesPerRead) break;
        batch.add(address);
      }
    }
    const participants = this.reads.filter((job) => [...job.pending].some((address) => batch.has(address)));
    let answer: Record<string, unknown>;
    try {
      answer = await this.options.readBatch([...batch], this.context);
    } catch (error) {
      for (const job of participants) this.finishRead(job, error as Error);
      return;
    }
    for (const job of participants) {
      for (const address of batch) {
        if (!job.pending.delete(address)) continue;
        const key = String(address);
        if (Object.prototype.hasOwnProperty.call(answer, key)) job.values.set(address, answer[key]);
        else job.missing.push(address);
      }
      if (job.pending.size === 0) this.finishRead(job);
    }
  }

  private finishRead(job: ReadJob, error?: Error): void {
    const index = this.reads.indexOf(job);
    if (index < 0) return;
    this.reads.splice(index, 1);
    if (error) job.reject(error);
    else job.resolve({ values: job.values, missing: job.missing });
  }
}
