/**
 * One request queue per device, shared by every client in the process that talks to it (every configuration,
 * the old and the new flows across a redeploy). The device takes one request at a time, at least the minimum
 * interval apart, so this is the one place where that rule is kept:
 * - one request in flight; each reaches the device at least the interval after the one before, plus a margin that
 *   follows what the network shows (the spread of connect times, and a 503 for a request that came too early);
 * - waiting reads of clients with the same credentials are merged into GetData requests of at most 50 addresses,
 *   filled in turn from every caller, so a small read never waits behind a large one;
 * - when reads and commands both wait they take turns, so neither a control loop nor a large read starves the other;
 * - a write to addresses that a waiting write also covers (or one held for its slot whose bytes have not left) is
 *   folded into it: it keeps its place in the queue and the values the newer write leaves out; newer is by the time
 *   the command was given (DeviceState.stamp()), and the older caller learns that it was superseded;
 * - every job has an owner (a flow node's session, or the client): closing the owner drops its waiting work
 *   without touching anybody else's.
 */
import { DeviceState, type KnownValue } from './device-state';
import { canonicalHost } from './address';
import { ClientClosedError, QueueFullError, ValidationError } from '../errors';

/**
 * Least margin on top of the minimum interval: on a busy host, timers and the moment either end handles a request are
 * late by up to a few tens of ms (a 2-core machine running a browser showed 11.5 ms at the receiving end).
 */
const BASE_MARGIN_MS = 25;
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
/**
 * A request under way whose callers all left is cut this much later when no client is left: a redeploy attaches the
 * new clients once every old node has closed (a neighbour saying goodbye to its broker, a busy Pi take their time),
 * and cutting it before would only let the next request reach a device still busy with it.
 */
const ABORT_GRACE_MS = 2000;
/** How long an idle queue waits for more work to merge before it sends. */
const MERGE_WINDOW_MS = 5;
/** Connect times kept to estimate the spread of one-way delays. */
const TIMING_WINDOW = 32;
const MIN_TIMED_CONNECTS = 8;
/** A connection is opened at most this long (ms) before its request's slot. */
const MAX_CONNECT_LEAD_MS = 200;

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

  /**
   * How long before its slot a request's connection is opened (the longest handshake of the window, at most
   * MAX_CONNECT_LEAD_MS; none while nothing is timed): the handshake then takes none of the device's time.
   */
  get connectLeadMs(): number {
    return this.connectTimes.length === 0 ? 0 : Math.min(MAX_CONNECT_LEAD_MS, Math.ceil(Math.max(...this.connectTimes)));
  }
}

/**
 * Handed to each job: `gate` waits until the next request may open its connection (call it before every request of
 * the job), `connected` (the connection is up, after `connectMs`) until its bytes may leave, which is then the moment
 * the interval counts from, and `sent` moves that moment to when they were written (the process may pause between);
 * `answered` marks the moment its answer is in, `tooEarly` a 503.
 */
export interface RequestContext {
  gate: () => Promise<void>;
  connected: (connectMs?: number) => Promise<void>;
  sent: () => void;
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
  /** Checks the values of one write from `address` as they will go out (a fold of two writes); throws a ValidationError. */
  validateRange?(address: number, values: number[]): void;
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
  /** For reads: aborting withdraws the read while it still waits (settled with CLOSED); once started it runs on. */
  signal?: AbortSignal;
  /**
   * For writes: takes the next request, ahead of waiting writes and of reads whose turn it would be (a regulator's
   * second half of a pulse, timed to land one interval after the first), though never twice in a row over waiting reads.
   */
  urgent?: boolean;
  /**
   * For writes: when the command was given (DeviceState.stamp(), taken by a caller that waits before it writes);
   * default: now. Writes to the same addresses fold and supersede by it, whatever reached the queue first.
   */
  given?: number;
}

interface Job {
  member: QueueMember;
  owner: object;
  onStart?: () => void;
  started: boolean;
  /** Bytes of its request have left: the device may have it. Until then a write still takes a newer fold. */
  sent?: boolean;
  settled: boolean;
  reject: (error: Error) => void;
}

interface ReadJob extends Job {
  pending: Set<number>;
  values: Map<number, unknown>;
  missing: number[];
  resolve: (outcome: ReadOutcome) => void;
}

interface WriteRange {
  address: number;
  values: number[];
}

/** One caller's write inside a (possibly folded) write job. */
interface WritePart extends WriteRange {
  member: QueueMember;
  owner: object;
  given: number;
  urgent: boolean;
  onStart?: () => void;
  /** The caller still waits for the outcome: it was not told "superseded", nor that it failed. */
  waiting: boolean;
  resolve: (status: WriteStatus) => void;
  reject: (error: Error) => void;
}

interface CommandJob extends Job {
  /**
   * Set for writes: what goes out, and the callers' writes folded into it, oldest given first; the newest one owns the
   * job. A caller that leaves takes its part out; the others' values still go.
   */
  write?: WriteRange & { parts: WritePart[] };
  urgent?: boolean;
  run: (context: RequestContext) => Promise<unknown>;
  resolve: (value: unknown) => void;
}

/**
 * The request under way: `sending` from when its bytes leave until its answer is in (only then may the device have it),
 * `dropped` when none of its callers is left; `beforeGate` the spacing before its latest gate, while its bytes have not
 * left (a request the queue cuts before that spaces nothing).
 */
interface Request {
  controller: AbortController;
  sending: boolean;
  dropped: boolean;
  beforeGate?: { lastSent: number; lastInterval: number };
  /** Bytes of it have left (of any of its attempts). */
  sent?: boolean;
}

export type { KnownValue };

export class DeviceQueue {
  private readonly members = new Set<QueueMember>();
  private readonly commands: CommandJob[] = [];
  private reads: ReadJob[] = [];
  /** What is known of the device, for every client of this process. */
  readonly state = new DeviceState();
  readonly margin = new ArrivalMargin();
  /** When the last request left, and the interval it asked for. */
  private lastSent = -Infinity;
  private lastInterval = 0;
  private lastTurn: 'read' | 'command' = 'read';
  /** An urgent write took the reads' turn: the next turn is theirs whatever waits (a read waits one urgent slot at most). */
  private readsPassedOver = false;
  /** When the last member left (performance.now()). */
  private lastLeft = -Infinity;
  private running = false;
  private kick: NodeJS.Timeout | undefined;
  private sleep: { timer: NodeJS.Timeout; wake: () => void } | undefined;
  private request: Request | undefined;
  private abortTimer: NodeJS.Timeout | undefined;
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
    if (this.members.size === 0 && performance.now() - this.lastLeft > KNOWN_AFTER_LAST_CLIENT_MS) this.state.clear();
    this.members.add(member);
    clearTimeout(this.abortTimer);
    this.abortTimer = undefined;
  }

  /**
   * The member leaves: its waiting work is rejected; with nobody left, what is in flight is aborted shortly after
   * unless a client attaches meanwhile (a redeploy).
   */
  detach(member: QueueMember): void {
    if (!this.members.delete(member)) return;
    if (this.members.size === 0) this.lastLeft = performance.now();
    this.drop((job) => job.member === member);
    if (this.members.size === 0) this.wakeUp();
  }

  /** No client has used the queue for the keep-alive time and nothing is under way: it may be forgotten. */
  get unused(): boolean {
    return this.members.size === 0 && !this.running && performance.now() - this.lastLeft > KNOWN_AFTER_LAST_CLIENT_MS;
  }

  /** Drops the jobs of `owner`: waiting ones and one in flight are settled with CLOSED; others' jobs go on. */
  close(owner: object): void {
    this.drop((job) => job.owner === owner);
  }

  /** The last value read from or accepted at `address`, if not older than `maxAgeMs`. */
  knownValue(address: number, maxAgeMs = Infinity): KnownValue | undefined {
    return this.state.knownValue(address, maxAgeMs);
  }

  read(member: QueueMember, addresses: readonly number[], options: JobOptions = {}): Promise<ReadOutcome> {
    return new Promise((resolve, reject) => {
      if (options.signal?.aborted) {
        reject(new ClientClosedError());
        return;
      }
      if (!this.admit(member, reject)) return;
      const job: ReadJob = { ...this.job(member, options, reject), pending: new Set(addresses), values: new Map(), missing: [], resolve };
      this.reads.push(job);
      const signal = options.signal;
      if (signal) {
        const withdraw = () => {
          if (!job.started) this.drop((waiting) => waiting === job);
        };
        // Once the read is settled its listener goes: a signal may outlive many reads.
        const settled = () => signal.removeEventListener('abort', withdraw);
        job.resolve = (outcome) => (settled(), resolve(outcome));
        job.reject = (error) => (settled(), reject(error));
        signal.addEventListener('abort', withdraw, { once: true });
      }
      this.schedule();
    });
  }

  write(member: QueueMember, address: number, values: number[], options: JobOptions = {}): Promise<WriteStatus> {
    return new Promise((resolve, reject) => {
      if (!this.members.has(member)) {
        reject(new ClientClosedError());
        return;
      }
      const part: WritePart = {
        member,
        owner: options.owner ?? member,
        address,
        values,
        given: options.given ?? this.state.stamp(),
        urgent: options.urgent === true,
        onStart: options.onStart,
        waiting: true,
        resolve,
        reject,
      };
      const older = this.commands.find(
        (job) =>
          job.write !== undefined && !job.sent && job.member.mergeKey === member.mergeKey && overlaps(job.write, address, values.length),
      );
      // A command given before one that already left (or cannot fold with it) is not the last command: it never goes.
      if (this.newerElsewhere(part, older?.write!.parts ?? [])) {
        resolve('superseded');
        return;
      }
      if (!older && !this.admit(member, reject)) return;
      const parts = [...(older?.write!.parts ?? []), part].sort((a, b) => a.given - b.given);
      let write: WriteRange;
      try {
        write = foldAll(parts);
        // What goes out is checked as a whole: standby [0, 0, 0] with a newer state 1 laid over it is no setpoint.
        if (older) member.validateRange?.(write.address, write.values);
      } catch (error) {
        reject(foldError(error as Error, older!.write!, part));
        return;
      }
      this.state.writeAsked(address, values.length, part.given);
      // The folded write takes the older one's place: writes to other addresses queued in between stay behind it.
      const place = older ? this.commands.indexOf(older) : this.commands.length;
      if (older) this.retire(older);
      const job = this.writeJob(parts, write);
      const ahead = this.commands.findIndex((other) => !other.started && !other.urgent);
      this.commands.splice(job.urgent && ahead >= 0 ? Math.min(ahead, place) : place, 0, job);
      // A held request whose bytes have not left gives its slot to the write that replaced it.
      this.dropRequestIfOrphaned();
      this.schedule();
    });
  }

  /**
   * A write job replaced by a new fold of its parts leaves the queue without a word (its callers are the new job's);
   * when it was the request being prepared, that request is left without callers and cut before its bytes leave.
   */
  private retire(job: CommandJob): void {
    this.commands.splice(this.commands.indexOf(job), 1);
    this.current.delete(job);
    job.settled = true;
  }

  /** A write job for `parts` folded into `write`: the newest given owns it; the others are told "superseded". */
  private writeJob(parts: WritePart[], write: WriteRange): CommandJob {
    const newest = parts[parts.length - 1]!;
    for (const part of parts) {
      if (part === newest || !part.waiting) continue;
      part.waiting = false;
      part.resolve('superseded');
    }
    const job: CommandJob = {
      member: newest.member,
      owner: newest.owner,
      // A caller told "superseded" waits for nothing: its callback is not called for the others' values.
      onStart: newest.waiting ? newest.onStart : undefined,
      started: false,
      settled: !newest.waiting,
      urgent: parts.some((part) => part.urgent),
      write: { ...write, parts },
      run: (context) => this.runWrite(job, context),
      resolve: (status) => {
        newest.waiting = false;
        newest.resolve(status as WriteStatus);
      },
      reject: (error) => {
        newest.waiting = false;
        newest.reject(error);
      },
    };
    return job;
  }

  /** A command to one of the part's addresses, given after it, was asked for outside `parts` (sent, or not foldable). */
  private newerElsewhere(part: WritePart, parts: WritePart[]): boolean {
    for (let address = part.address; address < part.address + part.values.length; address++) {
      const last = this.state.lastCommandTo(address);
      if (last > part.given && !parts.some((other) => other.given === last && overlaps(other, address, 1))) return true;
    }
    return false;
  }

  private async runWrite(job: CommandJob, context: RequestContext): Promise<WriteStatus> {
    const { address, values } = job.write!;
    await job.member.writeRange(address, values, context);
    this.state.wrote(address, values);
    return 'written';
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

  private drop(matches: (job: { member: QueueMember; owner: object }) => boolean): void {
    const error = new ClientClosedError();
    for (const list of [this.commands, this.reads] as Job[][]) {
      for (let i = list.length - 1; i >= 0; i--) {
        const job = list[i]!;
        if (this.keepsOtherParts(job as CommandJob, matches)) continue;
        if (!matches(job)) continue;
        list.splice(i, 1);
        // A job whose request's bytes left may have been carried out: the caller must not assume either way.
        const sent = this.current.delete(job) && this.request?.sending === true;
        if (job.settled) continue;
        job.settled = true;
        job.reject(sent ? new ClientClosedError(true) : error);
      }
    }
    this.dropRequestIfOrphaned();
    if (this.size === 0) this.wakeUp();
  }

  /**
   * A waiting folded write loses the parts of callers that leave and goes on with the others' values (an older caller
   * was already told "superseded"), checked again as a whole: what is left may be no valid write, and then nothing of it
   * goes. False when no other part is left, or it is under way.
   */
  private keepsOtherParts(job: CommandJob, matches: (part: { member: QueueMember; owner: object }) => boolean): boolean {
    const write = job.write;
    if (!write || job.sent || write.parts.length < 2 || !write.parts.some(matches)) return false;
    const parts = write.parts.filter((part) => !matches(part));
    if (parts.length === 0) return false;
    for (const part of write.parts) {
      if (!matches(part) || !part.waiting) continue;
      part.waiting = false;
      part.reject(new ClientClosedError());
    }
    const index = this.commands.indexOf(job);
    this.retire(job);
    const folded = foldAll(parts);
    try {
      parts[parts.length - 1]!.member.validateRange?.(folded.address, folded.values);
    } catch (error) {
      this.refoldFailed(parts, folded, error as Error);
      return true;
    }
    this.commands.splice(index, 0, this.writeJob(parts, folded));
    return true;
  }

  /** What is left of a fold after a caller left is no valid write: a caller still waiting learns why; nothing is sent. */
  private refoldFailed(parts: WritePart[], folded: WriteRange, error: Error): void {
    const failure =
      error instanceof ValidationError
        ? new ValidationError(
            `write to address ${folded.address} left by a caller that closed`,
            folded.values,
            `a whole write that is valid (${error.message}); nothing was sent`,
          )
        : error;
    const waiting = parts.filter((part) => part.waiting);
    for (const part of waiting) {
      part.waiting = false;
      part.reject(failure);
    }
    if (waiting.length === 0) process.emitWarning(failure);
  }

  /** With none of its callers left, the request under way must not send again, nor hold the line longer than needed. */
  private dropRequestIfOrphaned(): void {
    const request = this.request;
    if (!request || this.current.size > 0) return;
    request.dropped = true;
    if (!request.sending) request.controller.abort();
    else if (this.members.size === 0 && !this.abortTimer) {
      this.abortTimer = setTimeout(() => {
        this.abortTimer = undefined;
        if (this.members.size === 0) request.controller.abort();
      }, ABORT_GRACE_MS);
    }
  }

  /** Runs a caller's callback: its throw must not stop the queue or escape as an unhandled rejection. */
  private call(callback: () => void): void {
    try {
      callback();
    } catch (error) {
      process.emitWarning(error as Error);
    }
  }

  private schedule(): void {
    if (this.running) return;
    this.running = true;
    // Start a few ms later, so that requests made at nearly the same moment (timers of several nodes due at the same
    // time fire a millisecond apart) are merged.
    this.kick = setTimeout(() => {
      this.kick = undefined;
      // pump() settles every job it runs and throws nothing of a caller's; this only guards against a fault here.
      this.pump().catch((error: Error) => {
        process.emitWarning(error);
        this.drop((job) => this.current.has(job as Job));
      });
    }, MERGE_WINDOW_MS);
  }

  private async pump(): Promise<void> {
    try {
      while (this.size > 0) {
        // Wait before choosing, so that reads arriving meanwhile join the batch and the turn is decided late.
        await this.sleepUntil(this.lastSent + this.lastInterval + this.margin.ms - this.margin.connectLeadMs);
        if (this.size === 0) break;
        const request: Request = { controller: new AbortController(), sending: false, dropped: false };
        this.request = request;
        const context = this.guard(this.contextFor(request), request);
        const turn = { lastTurn: this.lastTurn, readsPassedOver: this.readsPassedOver };
        if (this.commandsTurn()) {
          this.lastTurn = 'command';
          await this.runCommand(this.commands[0]!, context);
        } else {
          this.lastTurn = 'read';
          this.readsPassedOver = false;
          await this.runReads(context);
        }
        if (request.controller.signal.aborted && !request.sent) {
          // Cut before its bytes left: the device saw nothing of it; its slot and its turn are free again.
          if (request.beforeGate) Object.assign(this, request.beforeGate);
          Object.assign(this, turn);
        }
        this.request = undefined;
        clearTimeout(this.abortTimer);
        this.abortTimer = undefined;
        this.current.clear();
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * Commands and reads take turns when both wait; an urgent write takes the reads' turn, though not twice in a row.
   */
  private commandsTurn(): boolean {
    const first = this.commands[0];
    if (!first) return false;
    const readsTurn = this.reads.length > 0 && this.lastTurn === 'command';
    if (!readsTurn) return true;
    if (!first.urgent || this.readsPassedOver) return false;
    this.readsPassedOver = true;
    return true;
  }

  /** A request whose callers all left sends nothing more: not after a 503, a namespace retry or a digest challenge. */
  private guard(context: RequestContext, request: Request): RequestContext {
    return {
      ...context,
      gate: async () => {
        if (request.dropped) throw new ClientClosedError();
        await context.gate();
        if (request.dropped) throw new ClientClosedError();
      },
      connected: async (connectMs) => {
        await context.connected(connectMs);
        if (request.dropped) throw new ClientClosedError();
        request.sending = true;
        request.sent = true;
        for (const job of this.current) job.sent = true;
      },
      answered: () => {
        request.sending = false;
        context.answered();
      },
    };
  }

  private contextFor(request: Request): RequestContext {
    const signal = request.controller.signal;
    let interval = 0;
    /** When the request being opened may leave. */
    let slot = 0;
    return {
      gate: async () => {
        // The job's own interval may be longer than the last request's; a second request of one job (a digest
        // challenge's answer) waits like any other.
        interval = Math.max(interval, ...this.intervalsOfCurrentJob());
        slot = this.lastSent + Math.max(this.lastInterval, interval) + this.margin.ms;
        await this.sleepUntil(slot - this.margin.connectLeadMs, signal);
        if (signal.aborted) throw new ClientClosedError();
        request.beforeGate = { lastSent: this.lastSent, lastInterval: this.lastInterval };
        // Until its bytes leave, a request that never connects still spaces the next one from its slot.
        this.lastSent = Math.max(slot, performance.now());
        this.lastInterval = interval;
        this.requestCount++;
      },
      connected: async (connectMs) => {
        if (connectMs !== undefined) this.margin.connected(connectMs);
        await this.sleepUntil(slot, signal);
        if (signal.aborted) throw new ClientClosedError();
        // Counted from here, when the request's bytes leave: a connection that took long to open must not bring the
        // next request early.
        this.lastSent = performance.now();
        request.beforeGate = undefined;
      },
      // One request is in flight: nothing else moved the moment since.
      sent: () => (this.lastSent = Math.max(this.lastSent, performance.now())),
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
      if (job.onStart) this.call(job.onStart);
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
    this.state.read(
      [...batch]
        .filter((address) => Object.prototype.hasOwnProperty.call(answer, String(address)))
        .map((address) => [address, answer[String(address)]]),
    );
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
    if (time - performance.now() <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        if (this.sleep?.wake === done) this.sleep = undefined;
        resolve();
      };
      // A timer counts whole ms from the event loop's cached clock, so it may fire up to a ms early: wait on until due.
      const arm = () => {
        const wait = time - performance.now();
        if (wait <= 0) return done();
        timer = setTimeout(arm, Math.ceil(wait));
        // The wait between requests can end early (nothing left to do); a job's own wait only by its abort.
        if (!signal) this.sleep = { timer, wake: done };
      };
      signal?.addEventListener('abort', done, { once: true });
      arm();
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

/** The callers' writes laid over each other, oldest first. */
function foldAll(parts: WriteRange[]): WriteRange {
  return parts.slice(1).reduce<WriteRange>((folded, part) => fold(folded, part), { address: parts[0]!.address, values: parts[0]!.values });
}

/** Why a write cannot be folded into the waiting one: what would go out, and why it is not allowed. */
function foldError(error: Error, waiting: WriteRange, newer: WriteRange): Error {
  if (!(error instanceof ValidationError)) return error;
  const folded = fold(waiting, newer);
  return new ValidationError(
    `write of ${JSON.stringify(newer.values)} to address ${newer.address} folded into the waiting ${JSON.stringify(waiting.values)}`,
    folded.values,
    `a whole write that is valid (${error.message}); send all values together`,
  );
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

/**
 * The queue of the device at host:port, shared by every client in this process. Hosts compare as addresses do.
 * Queues of devices no client used for the keep-alive time are forgotten here (no timer needed).
 */
export function deviceQueue(host: string, port: number): DeviceQueue {
  const key = `${normaliseHost(host)}:${port}`;
  for (const [other, queue] of queues) if (other !== key && queue.unused) queues.delete(other);
  let queue = queues.get(key);
  if (!queue) {
    queue = new DeviceQueue();
    queues.set(key, queue);
  }
  return queue;
}

/** "[::1]" and "::1", "::ffff:10.0.0.5" and "10.0.0.5", "Battery.local." and "battery.local" name the same device. */
export function normaliseHost(host: string): string {
  return canonicalHost(host);
}
