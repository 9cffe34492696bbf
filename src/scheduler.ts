/**
 * One request queue per device, shared by every client in the process that talks to it (every configuration,
 * the old and the new flows across a redeploy). The device takes one request at a time, at least the minimum
 * interval apart, so this is the one place where that rule is kept:
 * - one request in flight; each reaches the device at least the interval after the one before, plus a margin that
 *   follows what the network shows (the spread of connect times, and a 503 for a request that came too early);
 * - waiting reads of clients with the same credentials are merged into GetData requests of at most 50 addresses,
 *   filled in turn from every caller, so a small read never waits behind a large one;
 * - when reads and commands both wait they take turns, so neither a control loop nor a large read starves the other;
 * - a write to addresses that a waiting write also covers is folded into it: it keeps its place in the queue and
 *   the values the newer write leaves out; the older caller learns that it was superseded;
 * - every job has an owner (a flow node's session, or the client): closing the owner drops its waiting work
 *   without touching anybody else's.
 */
import { ClientClosedError, QueueFullError } from './errors';

/** Least margin on top of the minimum interval: timers and the device's own clock are late by a few ms. */
const BASE_MARGIN_MS = 10;
/** Spread assumed while too few connections have been timed: a busy Wi-Fi's (0 to 50 ms each way). */
const PRIOR_SPREAD_MS = 100;
const MAX_MARGIN_MS = 400;
/** Margin added for each 503 (a request the device found too early); it decays by 1 ms per answer. */
const TOO_EARLY_STEP_MS = 25;
/**
 * What the device said stays known this long after its last client left: long enough for a redeploy, short enough
 * that another device later found at the same address is not taken for this one.
 */
const KNOWN_AFTER_LAST_CLIENT_MS = 10000;
/** How long an idle queue waits for more work to merge before it sends. */
const MERGE_WINDOW_MS = 5;
/** Connect times kept to estimate the spread of one-way delays. */
const TIMING_WINDOW = 32;
const MIN_TIMED_CONNECTS = 8;

/**
 * How far the next request must be held back beyond the interval so that network jitter cannot bring it to the
 * device too early. A request sent at s arrives at s + d, d its one-way delay; sent the interval plus m after the one
 * before, it arrives at least the interval after it when m >= d(before) - d(this): m must cover the spread D of
 * one-way delays. The device's answer time says nothing about D (it is mostly processing), the connect time does:
 * each request opens a new connection, and the handshake is one round trip, the SYN's delay there plus the SYN-ACK's
 * back. The spread of such sums is D plus the spread of the way back, so never less than D. A window's range falls
 * short of the distribution's (n uniform samples cover (n - 1) / (n + 1) of it on average): it is scaled up by that
 * factor, and while few connections are timed it is at least a prior. A 503 means the bound failed: add more.
 */
export class ArrivalMargin {
  private readonly connectTimes: number[] = [];
  private tooEarly = 0;

  /** A connection to the device opened in `connectMs` (SYN to SYN-ACK). */
  connected(connectMs: number): void {
    this.connectTimes.push(connectMs);
    if (this.connectTimes.length > TIMING_WINDOW) this.connectTimes.shift();
  }

  /** An answer came: the device took the request, so earlier 503s weigh less. */
  answered(): void {
    this.tooEarly = Math.max(0, this.tooEarly - 1);
  }

  /** The device answered 503: hold requests back more. */
  rejectedAsEarly(): void {
    this.tooEarly = Math.min(MAX_MARGIN_MS, this.tooEarly + TOO_EARLY_STEP_MS);
  }

  /** The bound on the spread of one-way delays. */
  get spreadMs(): number {
    const n = this.connectTimes.length;
    const range = n < 2 ? 0 : ((Math.max(...this.connectTimes) - Math.min(...this.connectTimes)) * (n + 1)) / (n - 1);
    return n < MIN_TIMED_CONNECTS ? Math.max(PRIOR_SPREAD_MS, range) : range;
  }

  get ms(): number {
    return Math.min(MAX_MARGIN_MS, Math.ceil(BASE_MARGIN_MS + this.spreadMs + this.tooEarly));
  }
}

/**
 * Handed to each job: `gate` waits for the next allowed start (call it before every request of the job),
 * `sent` marks the moment the request leaves (its connection is up, after `connectMs`), `answered` the moment its
 * answer is in, `tooEarly` a 503.
 */
export interface RequestContext {
  gate: () => Promise<void>;
  sent: (connectMs?: number) => void;
  answered: () => void;
  tooEarly: () => void;
  signal: AbortSignal;
}

/** What a client gives the queue to run its jobs: its requests, its credentials' merge key, its settings. */
export interface QueueMember {
  /** Reads of members with equal keys (same credentials, mode, namespace) may share one request. */
  readonly mergeKey: string;
  readonly minIntervalMs: number;
  readonly maxQueue: number;
  readonly maxAddressesPerRead: number;
  readBatch(addresses: number[], context: RequestContext): Promise<Record<string, unknown>>;
  writeRange(address: number, values: number[], context: RequestContext): Promise<void>;
}

export interface ReadOutcome {
  values: Map<number, unknown>;
  /** Addresses the device left out of its answer (not supported by the model). */
  missing: number[];
}

export type WriteStatus = 'written' | 'superseded';

export interface JobOptions {
  /** Whose job it is: close(owner) drops it. */
  owner?: object;
  /** Called when the job's first request is about to go out (it no longer waits). */
  onStart?: () => void;
}

interface Job {
  member: QueueMember;
  owner: object;
  onStart?: () => void;
  started: boolean;
  settled: boolean;
  reject: (error: Error) => void;
}

interface ReadJob extends Job {
  pending: Set<number>;
  values: Map<number, unknown>;
  missing: number[];
  resolve: (outcome: ReadOutcome) => void;
}

interface CommandJob extends Job {
  /** Set for writes: the first address and the values, which a newer overlapping write may fold into. */
  write?: { address: number; values: number[] };
  run: (context: RequestContext) => Promise<unknown>;
  resolve: (value: unknown) => void;
}

/** What the device last said (a read) or accepted (a write) at an address, and when. */
export interface KnownValue {
  value: unknown;
  at: number;
}

export class DeviceQueue {
  private readonly members = new Set<QueueMember>();
  private readonly commands: CommandJob[] = [];
  private reads: ReadJob[] = [];
  private readonly known = new Map<number, KnownValue>();
  readonly margin = new ArrivalMargin();
  /** When the last request left, and the interval it asked for. */
  private lastSent = -Infinity;
  private lastInterval = 0;
  private lastTurn: 'read' | 'command' = 'read';
  /** When the last member left (performance.now()). */
  private lastLeft = -Infinity;
  private running = false;
  private kick: NodeJS.Timeout | undefined;
  private sleep: { timer: NodeJS.Timeout; wake: () => void } | undefined;
  private inFlight: AbortController | undefined;
  /** The jobs of the request being prepared, whose members' intervals it must respect. */
  private current = new Set<Job>();
  /** Requests started so far (each HTTP request, including a digest challenge's answer). */
  requestCount = 0;

  /** Jobs waiting for a request (not those of the request under way). */
  get size(): number {
    // Every job of the request under way is still in its list until it is settled or dropped.
    return this.commands.length + this.reads.length - this.current.size;
  }

  attach(member: QueueMember): void {
    if (this.members.size === 0 && performance.now() - this.lastLeft > KNOWN_AFTER_LAST_CLIENT_MS) this.known.clear();
    this.members.add(member);
  }

  /** The member leaves: its waiting work is rejected; with nobody left, what is in flight is aborted. */
  detach(member: QueueMember): void {
    if (!this.members.delete(member)) return;
    this.drop((job) => job.member === member);
    if (this.members.size === 0) {
      this.lastLeft = performance.now();
      this.inFlight?.abort();
      this.wakeUp();
    }
  }

  /** Drops the jobs of `owner`: waiting ones and one in flight are settled with CLOSED; others' jobs go on. */
  close(owner: object): void {
    this.drop((job) => job.owner === owner);
  }

  /** The last value read from or accepted at `address`, if not older than `maxAgeMs`. */
  knownValue(address: number, maxAgeMs = Infinity): KnownValue | undefined {
    const known = this.known.get(address);
    return known && performance.now() - known.at <= maxAgeMs ? known : undefined;
  }

  read(member: QueueMember, addresses: readonly number[], options: JobOptions = {}): Promise<ReadOutcome> {
    return new Promise((resolve, reject) => {
      if (!this.admit(member, reject)) return;
      this.reads.push({ ...this.job(member, options, reject), pending: new Set(addresses), values: new Map(), missing: [], resolve });
      this.schedule();
    });
  }

  write(member: QueueMember, address: number, values: number[], options: JobOptions = {}): Promise<WriteStatus> {
    return new Promise((resolve, reject) => {
      if (!this.members.has(member)) {
        reject(new ClientClosedError());
        return;
      }
      const older = this.commands.findIndex(
        (job) =>
          job.write !== undefined && !job.started && job.member.mergeKey === member.mergeKey && overlaps(job.write, address, values.length),
      );
      if (older < 0 && !this.admit(member, reject)) return;
      let write = { address, values };
      if (older >= 0) {
        const replaced = this.commands[older]!;
        write = fold(replaced.write!, write);
        replaced.settled = true;
        replaced.resolve('superseded');
      }
      const job: CommandJob = {
        ...this.job(member, options, reject),
        write,
        run: async (context) => {
          await member.writeRange(write.address, write.values, context);
          write.values.forEach((value, i) => this.known.set(write.address + i, { value, at: performance.now() }));
          return 'written';
        },
        resolve: resolve as (value: unknown) => void,
      };
      // The newer write takes the older one's place: writes to other addresses queued in between stay behind it.
      if (older >= 0) this.commands.splice(older, 1, job);
      else this.commands.push(job);
      this.schedule();
    });
  }

  /** Any other single operation (device info, password change), in order with the writes. */
  command<T>(member: QueueMember, run: (context: RequestContext) => Promise<T>, options: JobOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (!this.admit(member, reject)) return;
      this.commands.push({ ...this.job(member, options, reject), run, resolve: resolve as (value: unknown) => void });
      this.schedule();
    });
  }

  private job(member: QueueMember, options: JobOptions, reject: (error: Error) => void): Job {
    return { member, owner: options.owner ?? member, onStart: options.onStart, started: false, settled: false, reject };
  }

  private admit(member: QueueMember, reject: (error: Error) => void): boolean {
    if (!this.members.has(member)) {
      reject(new ClientClosedError());
      return false;
    }
    if (this.size >= member.maxQueue) {
      reject(new QueueFullError(member.maxQueue));
      return false;
    }
    return true;
  }

  private drop(matches: (job: Job) => boolean): void {
    const error = new ClientClosedError();
    for (const list of [this.commands, this.reads] as Job[][]) {
      for (let i = list.length - 1; i >= 0; i--) {
        const job = list[i]!;
        if (!matches(job)) continue;
        list.splice(i, 1);
        this.current.delete(job);
        if (job.settled) continue;
        job.settled = true;
        // A job whose request is out may have been carried out: the caller must not assume either way.
        job.reject(job.started ? new ClientClosedError(true) : error);
      }
    }
    if (this.size === 0) this.wakeUp();
  }

  private schedule(): void {
    if (this.running) return;
    this.running = true;
    // Start a few ms later, so that requests made at nearly the same moment (timers of several nodes due at the same
    // time fire a millisecond apart) are merged.
    this.kick = setTimeout(() => {
      this.kick = undefined;
      void this.pump();
    }, MERGE_WINDOW_MS);
  }

  private async pump(): Promise<void> {
    try {
      while (this.size > 0) {
        // Wait before choosing, so that reads arriving meanwhile join the batch and the turn is decided late.
        await this.sleepUntil(this.lastSent + this.lastInterval + this.margin.ms);
        if (this.size === 0) break;
        const controller = new AbortController();
        this.inFlight = controller;
        const context = this.contextFor(controller.signal);
        const readsWait = this.reads.length > 0;
        if (this.commands.length > 0 && !(readsWait && this.lastTurn === 'command')) {
          this.lastTurn = 'command';
          await this.runCommand(this.commands[0]!, context);
        } else {
          this.lastTurn = 'read';
          await this.runReads(context);
        }
        this.inFlight = undefined;
        this.current.clear();
      }
    } finally {
      this.running = false;
    }
  }

  private contextFor(signal: AbortSignal): RequestContext {
    let interval = 0;
    return {
      gate: async () => {
        // The job's own interval may be longer than the last request's; a second request of one job (a digest
        // challenge's answer) waits like any other.
        interval = Math.max(interval, ...this.intervalsOfCurrentJob());
        await this.sleepUntil(this.lastSent + Math.max(this.lastInterval, interval) + this.margin.ms, signal);
        if (signal.aborted) throw new ClientClosedError(true);
        this.lastSent = performance.now();
        this.lastInterval = interval;
        this.requestCount++;
      },
      sent: (connectMs) => {
        // Counted from here, when the request's bytes leave: a connection that took long to open must not bring the
        // next request early.
        this.lastSent = performance.now();
        if (connectMs !== undefined) this.margin.connected(connectMs);
      },
      answered: () => this.margin.answered(),
      tooEarly: () => this.margin.rejectedAsEarly(),
      signal,
    };
  }

  private intervalsOfCurrentJob(): number[] {
    return [...this.current].map((job) => job.member.minIntervalMs);
  }

  private start(jobs: Job[]): void {
    this.current = new Set(jobs);
    for (const job of jobs) {
      if (job.started) continue;
      job.started = true;
      job.onStart?.();
    }
  }

  private async runCommand(job: CommandJob, context: RequestContext): Promise<void> {
    this.start([job]);
    let outcome: { value?: unknown; error?: Error };
    try {
      outcome = { value: await job.run(context) };
    } catch (error) {
      outcome = { error: error as Error };
    }
    const index = this.commands.indexOf(job);
    if (index >= 0) this.commands.splice(index, 1);
    this.current.delete(job);
    if (job.settled) return;
    job.settled = true;
    if (outcome.error) job.reject(outcome.error);
    else job.resolve(outcome.value);
  }

  /** One GetData for the oldest waiting read's credentials, filled in turn from each of their callers. */
  private async runReads(context: RequestContext): Promise<void> {
    const key = this.reads[0]!.member.mergeKey;
    const jobs = this.reads.filter((job) => job.member.mergeKey === key);
    const member = jobs[0]!.member;
    const batch = fairBatch(jobs, member.maxAddressesPerRead);
    const participants = jobs.filter((job) => [...job.pending].some((address) => batch.has(address)));
    this.start(participants);
    let answer: Record<string, unknown>;
    try {
      answer = await member.readBatch([...batch], context);
    } catch (error) {
      for (const job of participants) this.finishRead(job, error as Error);
      this.removeFinishedReads(participants);
      return;
    }
    const now = performance.now();
    for (const address of batch) {
      const key = String(address);
      if (Object.prototype.hasOwnProperty.call(answer, key)) this.known.set(address, { value: answer[key], at: now });
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
    this.removeFinishedReads(participants);
  }

  /** One pass over the list, however many callers a request served. */
  private removeFinishedReads(participants: ReadJob[]): void {
    const finished = new Set(participants.filter((job) => job.settled));
    if (finished.size > 0) this.reads = this.reads.filter((job) => !finished.has(job));
    for (const job of participants) this.current.delete(job);
  }

  private finishRead(job: ReadJob, error?: Error): void {
    if (job.settled) return;
    job.settled = true;
    if (error) job.reject(error);
    else job.resolve({ values: job.values, missing: job.missing });
  }

  /** Resolves at `time` (performance.now), at once when the queue empties, or (with a signal) when aborted. */
  private sleepUntil(time: number, signal?: AbortSignal): Promise<void> {
    const wait = time - performance.now();
    if (wait <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        if (this.sleep?.timer === timer) this.sleep = undefined;
        resolve();
      };
      const timer = setTimeout(done, wait);
      // The wait between requests can end early (nothing left to do); a job's own wait only by its abort.
      if (signal) signal.addEventListener('abort', done, { once: true });
      else this.sleep = { timer, wake: done };
    });
  }

  /** Ends a wait between requests early when there is nothing left to wait for. */
  private wakeUp(): void {
    if (this.kick && this.size === 0) {
      clearTimeout(this.kick);
      this.kick = undefined;
      this.running = false;
    }
    if (this.size === 0 || this.members.size === 0) this.sleep?.wake();
  }
}

/** Everything the callers wait for when it fits in one request; otherwise one address of each caller in turn. */
function fairBatch(jobs: ReadJob[], max: number): Set<number> {
  const all = new Set<number>();
  for (const job of jobs) {
    for (const address of job.pending) all.add(address);
    if (all.size > max) break;
  }
  if (all.size <= max) return all;
  const batch = new Set<number>();
  const queues = jobs.map((job) => [...job.pending]);
  for (let round = 0, added = true; added && batch.size < max; round++) {
    added = false;
    for (const queue of queues) {
      while (round < queue.length && batch.has(queue[round]!)) queue.splice(round, 1);
      if (round >= queue.length || batch.size >= max) continue;
      batch.add(queue[round]!);
      added = true;
    }
  }
  return batch;
}

function overlaps(write: { address: number; values: number[] }, address: number, count: number): boolean {
  return address < write.address + write.values.length && write.address < address + count;
}

/** The older write's range and values with the newer one's values laid over them. */
function fold(
  older: { address: number; values: number[] },
  newer: { address: number; values: number[] },
): { address: number; values: number[] } {
  const start = Math.min(older.address, newer.address);
  const end = Math.max(older.address + older.values.length, newer.address + newer.values.length);
  const values: number[] = [];
  for (let address = start; address < end; address++) {
    const fromNewer = address - newer.address;
    const fromOlder = address - older.address;
    values.push(fromNewer >= 0 && fromNewer < newer.values.length ? newer.values[fromNewer]! : older.values[fromOlder]!);
  }
  return { address: start, values };
}

const queues = new Map<string, DeviceQueue>();

/** The queue of the device at host:port, shared by every client in this process. Hosts compare as addresses do. */
export function deviceQueue(host: string, port: number): DeviceQueue {
  const key = `${normaliseHost(host)}:${port}`;
  let queue = queues.get(key);
  if (!queue) {
    queue = new DeviceQueue();
    queues.set(key, queue);
  }
  return queue;
}

/** "[::1]" and "::1", "Battery.local" and "battery.local" name the same device. */
export function normaliseHost(host: string): string {
  return host
    .trim()
    .replace(/^\[(.*)\]$/, '$1')
    .toLowerCase();
}
