/**
 * The simulator shares its process's event loop with the clients it judges (Node-RED in the tests and benches). While
 * another callback holds the thread, a request's bytes wait in the kernel and the simulator handles them late, so a
 * request that came on time can look early against the next one. A heartbeat finds such stalls; the simulator then
 * counts a request's arrival from the earliest moment it could have come, and judges only what it can know.
 */
import { performance } from 'node:perf_hooks';

const BEAT_MS = 10;
/** A beat this much later than due marks a stall (timers are late by a few ms on a busy host anyway). */
const STALL_AFTER_MS = 10;
/**
 * A request handled this soon after a stall ended may have come during it: the late beat runs first, and callbacks
 * shorter than a stall may run between.
 */
const AFTER_STALL_MS = BEAT_MS + STALL_AFTER_MS;
const KEEP_MS = 60000;

interface Stall {
  /** When the loop was last seen free. */
  from: number;
  /** When it ran the late beat. */
  to: number;
}

class LoopStallWatch {
  private readonly stalls: Stall[] = [];
  private timer: NodeJS.Timeout | undefined;
  private lastBeat = 0;
  private users = 0;

  start(): void {
    if (this.users++ > 0) return;
    this.lastBeat = performance.now();
    this.timer = setInterval(() => this.beat(), BEAT_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.users === 0 || --this.users > 0) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * The earliest moment something the loop handled at `handledAt` can have arrived. Only the heartbeat's own timer
   * marks the loop free: a request handled in the backlog after a stall (other requests before it) is no sign of that.
   */
  earliest(handledAt: number): number {
    // The heartbeat is late: the loop has been busy since its last beat, and is still.
    let earliest = this.timer !== undefined && handledAt - this.lastBeat > BEAT_MS + STALL_AFTER_MS ? this.lastBeat : handledAt;
    // Newest first: a stall that began as the one before it ended (its late beat ran, then the loop was busy again at
    // once) continues it, and a request held through both may have come during the first.
    for (let i = this.stalls.length - 1; i >= 0; i--) {
      const stall = this.stalls[i]!;
      if (stall.from <= earliest && earliest <= stall.to + AFTER_STALL_MS) earliest = stall.from;
    }
    return earliest;
  }

  private beat(): void {
    if (this.timer === undefined) return;
    const now = performance.now();
    if (now - this.lastBeat > BEAT_MS + STALL_AFTER_MS) this.stalls.push({ from: this.lastBeat, to: now });
    this.lastBeat = now;
    while (this.stalls.length > 0 && this.stalls[0]!.to < now - KEEP_MS) this.stalls.shift();
  }
}

/** One watch per process: every simulator and test shares the loop it watches. */
export const loopStalls = new LoopStallWatch();
