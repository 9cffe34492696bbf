/**
 * A group's reversal watch (issue 25): a split that put units to standby before the new way starts (splitGroup's
 * 'reversal') waits for the units that may still move the old way. Every unit steered is read each interval (each from
 * its own queue, so no unit's writes wait for another's read), and the total is split again as soon as they have
 * stopped, not only at the regulator's next decision; between the reads it is split again every WATCH_STEP_MS, so
 * that the trend of the last two reads (heading()) frees the new way as a unit reversing itself crosses zero, not only
 * at the read after. The controller learns the new sum as another writer's (othersWrote).
 *
 * Contract: it holds only its two timers and when it last read; the centre starts it after a split that left a
 * reversal waiting and closes it with the controller. It reads the units (their power only) and asks the centre to
 * split again; it stops once no unit waits for a reversal, the centre has no total, or the controller rests (then no
 * unit is read each interval until it steers again).
 */
import type { SteeredUnit } from './group-unit';

/** What the watch asks of its group's centre. */
export interface WatchedGroup {
  now(): number;
  /** The slowest unit's interval (ms). */
  intervalMs(): number;
  readonly units: readonly SteeredUnit[];
  /** The controller rests (closed, disabled, handing back, timed out): nothing is split again by the plant itself. */
  resting(): boolean;
  /** A total is in force (none after a hand-back). */
  hasTotal(): boolean;
  /** The last total split again. */
  again(): Promise<void>;
}

/** Between its reads, a reversal's watch splits again this often (ms). */
const WATCH_STEP_MS = 250;

export class ReversalWatch {
  private watch: NodeJS.Timeout | undefined;
  private step: NodeJS.Timeout | undefined;
  /** When the watch last read the units (ms); undefined when no reversal waits. */
  private readAt: number | undefined;

  constructor(private readonly group: WatchedGroup) {}

  /** Reading the units each interval now. */
  get watching(): boolean {
    return this.watch !== undefined;
  }

  /** A split left a reversal waiting: watch it (once; a watch under way goes on). */
  start(): void {
    const group = this.group;
    this.stepReversal();
    if (this.watch || group.resting()) return;
    // Each read one interval after the one before left (not after its answer): the queue's own pace.
    const delay = this.readAt === undefined ? group.intervalMs() : Math.max(0, this.readAt + group.intervalMs() - group.now());
    this.watch = setTimeout(() => {
      const now = group.now();
      if (group.resting() || !group.hasTotal()) return this.end();
      this.readAt = now;
      // A unit at rest and commanded to rest moves neither way: its read would only take its slot from the write that
      // starts it.
      const reads = group.units.filter((u) => !u.isLeftOut(now) && !u.atRest(now)).map((u) => u.watchRead());
      void Promise.all(reads)
        .then(() => group.again())
        .catch(() => undefined)
        .finally(() => {
          // Once the loop rests, no unit is read each interval until it steers again.
          if (!group.resting() && group.hasTotal() && this.waits()) {
            this.watch = undefined;
            this.start();
          } else this.end();
        });
    }, delay);
  }

  /** Stops the watch (the controller closes). */
  close(): void {
    clearTimeout(this.watch);
    clearTimeout(this.step);
    this.end();
  }

  private waits(): boolean {
    return this.group.units.some((u) => u.reason === 'reversal');
  }

  private end(): void {
    this.watch = undefined;
    this.readAt = undefined;
  }

  /** The reversal's split between its reads; one that still waits steps again. */
  private stepReversal(): void {
    if (this.step || this.group.resting()) return;
    this.step = setTimeout(() => {
      this.step = undefined;
      if (!this.waits()) return;
      void this.group.again().catch(() => undefined);
    }, WATCH_STEP_MS);
  }
}
