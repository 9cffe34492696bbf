/**
 * A group unit's own plant model (issue 25): its first-order lag learned from two of its reads and the setpoints it
 * followed (fitLag()), and its power carried on from a read under that lag (follow()). No I/O, no state; time in ms.
 */
import { response, type Step } from './plant-family';

/** A unit's battery power as read (W, signed like 6000) and when its request left (ms). */
export type Read = { watts: number; at: number };

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
