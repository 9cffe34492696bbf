/**
 * A group unit's own plant model (issue 25): its first-order lag learned from two of its reads and the setpoints it
 * followed (fitLag()), and its power carried on from a read under that lag (follow()); UnitModel keeps one unit's
 * setpoints, reads and lag. No I/O; time in ms.
 */
import { heading } from './group-split';
import { response, type Step } from './plant-family';

/** A unit's battery power as read (W, signed like 6000) and when its request left (ms). */
export type Read = { watts: number; at: number };

/** A reading older than this does not tell the split whether a unit still moves (ms). */
const FRESH_MS = 10000;
/** Setpoints kept per unit for the fit. */
const STEPS_KEPT = 16;
/** A unit's lag before its reads showed it (ms): about the geometric middle of the specification's 0.5 to 5 s. */
const PRIOR_LAG_MS = 1500;
/** A unit's lag is learned from two reads at most this far apart (ms) between which it moved at least LAG_MOVE_W. */
const LAG_READS_MS = 5000;
const LAG_MOVE_W = 100;
/** The dead time taken for the fit (ms): the middle of the specification's 0.5 to 2 s. */
const FIT_DEAD_MS = 1000;
/** The lags a fit may find (ms): the specification's 0.5 to 5 s, with room either side. */
const FIT_LAG_MS: readonly [number, number] = [200, 8000];

/**
 * A unit's power at `until` from the read `first` under a lag of `lagMs`: the plant model's response() to its setpoints
 * (`steps`, each from when its request left, acting FIT_DEAD_MS later), from the one acting at the read on.
 */
export function follow(steps: readonly Step[], first: Read, until: number, lagMs: number): number {
  const from = first.at - FIT_DEAD_MS;
  const acting = [...steps].reverse().find((s) => s.startAt <= from);
  const history = [...(acting ? [{ ...acting, startAt: from }] : []), ...steps.filter((s) => s.startAt > from)];
  return response({ delayMs: FIT_DEAD_MS, lagMs, from: 'startAt' }, history, first.watts, until);
}

/**
 * A unit's first-order lag (ms) from two of its reads and its setpoints: the one under which its power goes from the
 * first read to the second (bisection; a longer lag moves less). Undefined where the reads are too far apart, the unit
 * hardly moved, or no lag in FIT_LAG_MS explains them.
 */
export function fitLag(steps: readonly Step[], first: Read, second: Read): number | undefined {
  if (!(second.at > first.at) || second.at - first.at > LAG_READS_MS || Math.abs(second.watts - first.watts) < LAG_MOVE_W) return undefined;
  const miss = (lagMs: number) => follow(steps, first, second.at, lagMs) - second.watts;
  let [fast, slow] = FIT_LAG_MS.map(Math.log) as [number, number];
  const way = Math.sign(miss(Math.exp(fast)));
  if (way === 0 || Math.sign(miss(Math.exp(slow))) !== -way) return undefined;
  for (let k = 0; k < 30; k++) {
    const middle = (fast + slow) / 2;
    if (Math.sign(miss(Math.exp(middle))) === way) fast = middle;
    else slow = middle;
  }
  return Math.exp((fast + slow) / 2);
}

/**
 * One unit's model: the setpoints it acknowledged (newest last, STEPS_KEPT of them), its last two reads of its power
 * and the lag they showed. Written by its unit only (acknowledged(), read()); read by the unit and, for `lagMs`, the
 * centre (a hand-over pulse needs the lag of each unit left).
 */
export class UnitModel {
  private readonly steps: Step[] = [];
  private last?: Read;
  /** The read before `last`: with it, where the unit's power is heading. */
  private before?: Read;
  /** Its first-order lag as its reads showed it (ms); unknown until seen. */
  lagMs?: number;

  /** A new setpoint in force: `startAt` when its request left (or was answered, where none went), `ackAt` answered. */
  acknowledged(value: number, startAt: number, ackAt: number): void {
    this.steps.push({ value, startAt, ackAt });
    if (this.steps.length > STEPS_KEPT) this.steps.shift();
  }

  /** A read of its power (`at`: when its request left); with the one before, its lag (each fit averaged with the last). */
  read(watts: number, at: number): void {
    if (this.last) {
      const lagMs = fitLag(this.steps, this.last, { watts, at });
      if (lagMs !== undefined) this.lagMs = this.lagMs === undefined ? lagMs : (this.lagMs + lagMs) / 2;
    }
    this.before = this.last;
    this.last = { watts, at };
  }

  /** The last read's watts, rounded; null before the first. */
  get lastW(): number | null {
    return this.last ? Math.round(this.last.watts) : null;
  }

  /** The last read where it is recent enough to tell whether the unit still moves. */
  fresh(now: number): Read | undefined {
    return this.last && now - this.last.at < FRESH_MS ? this.last : undefined;
  }

  /** Its power when a command sent now could act (heading(), towards `setpointW`); undefined without a fresh read. */
  heading(setpointW: number, now: number): number | undefined {
    const fresh = this.fresh(now);
    return fresh && heading(this.before, fresh, setpointW, now);
  }

  /** Its power at `at`: its last read carried on under its lag through its setpoints; undefined without a fresh read. */
  estimate(at: number): number | undefined {
    const read = this.fresh(at);
    return read && follow(this.steps, read, at, this.lagMs ?? PRIOR_LAG_MS);
  }
}
