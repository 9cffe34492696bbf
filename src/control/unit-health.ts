/**
 * Whether a unit of a group is left out (issue 25): owners ask that a unit which is unreachable, or delivers much less
 * than it is asked for several readings, be left out for a while and its share given to the others (splitGroup's
 * `leftOut`). Pure: the unit's health in, one reading, the health out; time is an argument (ms).
 *
 * A shortfall counts only once the command has been in force for the unit's settle time (its dead time and lag would
 * otherwise look like one), and only when it is large both in watts and as a share of the command, so noise and a unit
 * a little under its setpoint stay in. After `leaveOutMs` the unit is tried again with a clean count.
 */

export interface HealthOptions {
  /** Consecutive bad readings that leave a unit out. */
  readings: number;
  /** A shortfall is at least this many watts and this share of the command. */
  shortfallW: number;
  shortfallShare: number;
  /** How long a unit stays out before it is tried again, ms. */
  leaveOutMs: number;
}

export const HEALTH_DEFAULTS: HealthOptions = { readings: 3, shortfallW: 100, shortfallShare: 0.5, leaveOutMs: 300000 };

export type LeftOutReason = 'unreachable' | 'shortfall';

export interface UnitHealth {
  /** Consecutive bad readings so far. */
  bad: number;
  /** Out until this time (ms), and why. */
  outUntilMs?: number;
  reason?: LeftOutReason;
}

export interface HealthReading {
  nowMs: number;
  /** False when the unit's last request failed (time-out, refused, offline). */
  reachable: boolean;
  /** The setpoint in force (W, signed like 6000) and since when (ms). */
  commandedW: number;
  commandedSinceMs: number;
  /** The power it delivers as read (W, signed like 6000), when read. */
  deliveredW?: number;
  /** Its dead time and lag: how long after a command a shortfall means nothing, ms. */
  settleMs: number;
}

export const isLeftOut = (health: UnitHealth | undefined, nowMs: number): boolean =>
  health?.outUntilMs !== undefined && nowMs < health.outUntilMs;

/** True when the reading shows the unit far short of its command, after its settle time. */
function shortfall(reading: HealthReading, options: HealthOptions): boolean {
  const { commandedW, deliveredW } = reading;
  if (deliveredW === undefined || commandedW === 0 || reading.nowMs - reading.commandedSinceMs < reading.settleMs) return false;
  const missing = Math.abs(commandedW) - deliveredW * Math.sign(commandedW);
  return missing >= Math.max(options.shortfallW, options.shortfallShare * Math.abs(commandedW));
}

/** The unit's health after `reading`. */
export function unitHealth(previous: UnitHealth | undefined, reading: HealthReading, settings: Partial<HealthOptions> = {}): UnitHealth {
  const options = { ...HEALTH_DEFAULTS, ...settings };
  if (!(Number.isInteger(options.readings) && options.readings >= 1)) throw new RangeError('readings must be an integer >= 1');
  if (!(options.shortfallShare > 0 && options.shortfallShare <= 1)) throw new RangeError('shortfallShare must be in (0, 1]');
  for (const name of ['shortfallW', 'leaveOutMs'] as const)
    if (!(options[name] >= 0)) throw new RangeError(`${name} must be a number >= 0`);
  if (isLeftOut(previous, reading.nowMs)) return previous!;
  // Back from being left out (or never out): a clean count.
  const bad = previous?.outUntilMs === undefined ? (previous?.bad ?? 0) : 0;
  const reason: LeftOutReason | undefined = !reading.reachable ? 'unreachable' : shortfall(reading, options) ? 'shortfall' : undefined;
  if (!reason) return { bad: 0 };
  if (bad + 1 < options.readings) return { bad: bad + 1 };
  return { bad: 0, outUntilMs: reading.nowMs + options.leaveOutMs, reason };
}
