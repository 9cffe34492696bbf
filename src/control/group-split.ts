/**
 * The split of a group's setpoint over several batteries behind one meter (issue 25), without Node-RED or I/O: from
 * the total the group needs (W, signed like 6000: positive discharges), each unit's state and the time (ms), each
 * unit's setpoint. What owners of several units ask for (field notes, "Several batteries"), and how:
 *
 * - No cross-charging. All setpoints of a decision share one direction, and a unit may be commanded one way only
 *   when no other unit may still be moving the other way: read so (or heading so when a command sent now could act
 *   at the earliest, by the trend of its reads), or commanded so within the time a reading takes
 *   to show a command (its response time), or, when its power is not read, within its settle time (dead time and
 *   lag). A reversal therefore puts the units that moved the old way to standby first and starts the new way once
 *   they have stopped; when only one unit moved, that unit reverses at once (it cannot charge from itself) and the
 *   others join once it has stopped. Units with different lags pass no energy to each other on the way.
 * - Staging. Each active unit draws about 30 W itself, and a converter is less efficient at low power (77.5 % at
 *   125 W against 91.3 % at 1000 W), so the fewest units run: with `a` units active, the next joins when they would
 *   run above `joinShare` of their maximum, and one leaves when the others could carry the total at `leaveShare` or
 *   less. The gap between the two is the hysteresis: a total that wanders about a threshold changes nothing.
 * - Balance. The units that run are the fullest (discharge: most SOC points above the discharge SOC) or the emptiest
 *   (charge: most points below the charge SOC); an active unit keeps its place until another is `rotateMarginPct`
 *   points ahead, so near-equal units do not swap. Among the active units the power goes in proportion to the energy
 *   above the discharge SOC (charge: to the room left), so they reach their limits together.
 * - Left out. A unit that is left out (unreachable, or not delivering what it is asked) or at its SOC limit gets 0;
 *   its share goes to the others. A left-out unit is not steered, so its power counts as load and blocks no one.
 * - Limits. No unit gets more than its own limits (its class's and the owner's) or less than the minimum power; what
 *   the units cannot carry is reported as unmet.
 */
import { CONTROL_LIMITS } from './control';

/** One battery of the group as the split sees it. */
export interface GroupUnit {
  /** Stable name of the unit (its device configuration). */
  id: string;
  /** W, positive: the unit's own limits (its class's, or lower as the owner set them). */
  maxChargeW: number;
  maxDischargeW: number;
  capacityWh: number;
  /** %, now. */
  soc: number;
  /** No charging at or above chargeSoc (%), no discharging at or below dischargeSoc. */
  chargeSoc: number;
  dischargeSoc: number;
  /** Left out: gets 0, and its share goes to the others. */
  leftOut?: boolean;
  /** The setpoint in force now (acknowledged), W, signed like 6000; 0 in standby. */
  setpointW: number;
  /** The power it delivers as last read, W, signed like 6000, when known. */
  deliveredW?: number;
  /** How long after a command it may still move the old way (its dead time plus about three lags), ms. */
  settleMs?: number;
  /** With `deliveredW`: how long a reading may not yet show a command (dead time and the reading's age), ms. */
  responseMs?: number;
  /**
   * With `deliveredW`: its power when a command sent now could act at the earliest, from the trend of its reads
   * (heading(); W, signed like 6000). A unit that reverses itself frees the others as it crosses zero, not a read later.
   */
  headingW?: number;
}

export interface SplitOptions {
  /** The smallest setpoint a unit takes, W; a smaller group total is standby. */
  minPowerW: number;
  /** With a units active, the next joins when they would run above this share of their maximum. */
  joinShare: number;
  /** One leaves when the others could carry the total at this share of their maximum or less. */
  leaveShare: number;
  /** An active unit keeps its place until an idle one is this many SOC points ahead. */
  rotateMarginPct: number;
  /** A unit's settle time and response time when it gives none, ms. */
  settleMs: number;
  responseMs: number;
  /** Delivered power beyond this (W) counts as moving. */
  idleW: number;
}

export const SPLIT_DEFAULTS: SplitOptions = {
  // The device's least power (47016's minimum in the catalogue): below it a unit is in standby.
  minPowerW: CONTROL_LIMITS.power.min,
  joinShare: 0.8,
  leaveShare: 0.6,
  rotateMarginPct: 5,
  settleMs: 5000,
  responseMs: 2000,
  idleW: 25,
};

/** Why a unit got its setpoint. */
export type UnitReason = 'active' | 'staged out' | 'reversal' | 'soc' | 'left out' | 'standby';

/** When each unit was last commanded or seen in force each way (ms): the split's memory, given back each time. */
export interface SplitMemory {
  units: Readonly<Record<string, { chargeAt?: number; dischargeAt?: number }>>;
}

export interface GroupSplit {
  /** Per unit, in the order given: W, signed like 6000. */
  setpoints: number[];
  reasons: UnitReason[];
  /** Σ setpoints, and what the units could not carry (total − commanded). */
  commandedW: number;
  unmetW: number;
  memory: SplitMemory;
}

type Direction = 1 | -1;

/** Bad input is a clear error naming the field, not a wrong split. */
function check(units: readonly GroupUnit[], options: SplitOptions): void {
  const { joinShare, leaveShare, minPowerW, rotateMarginPct, settleMs, responseMs, idleW } = options;
  if (!(joinShare > 0 && joinShare <= 1)) throw new RangeError('joinShare must be in (0, 1]');
  if (!(leaveShare > 0 && leaveShare < joinShare)) throw new RangeError('leaveShare must be in (0, joinShare)');
  for (const [name, value] of Object.entries({ minPowerW, rotateMarginPct, settleMs, responseMs, idleW }))
    if (!(value >= 0 && Number.isFinite(value))) throw new RangeError(`${name} must be a number >= 0`);
  const seen = new Set<string>();
  for (const u of units) {
    if (seen.has(u.id)) throw new RangeError(`unit ids must differ: ${u.id} twice`);
    seen.add(u.id);
    for (const name of ['maxChargeW', 'maxDischargeW', 'capacityWh', 'setpointW'] as const)
      if (!Number.isFinite(u[name]) || (name !== 'setpointW' && !(u[name] >= 0)))
        throw new RangeError(`unit ${u.id}: ${name} must be a number${name === 'setpointW' ? '' : ' >= 0'}`);
    for (const name of ['soc', 'chargeSoc', 'dischargeSoc'] as const)
      if (!(u[name] >= 0 && u[name] <= 100)) throw new RangeError(`unit ${u.id}: ${name} must be 0 to 100`);
  }
}

/**
 * The unit may still be moving `way`: in force so, or read so, or commanded so within its response time (read) or
 * settle time (not read).
 */
function mayMove(u: GroupUnit, way: Direction, memory: SplitMemory, nowMs: number, options: SplitOptions): boolean {
  if (Math.sign(u.setpointW) === way) return true;
  const power = u.headingW ?? u.deliveredW;
  if (power !== undefined && power * way > options.idleW) return true;
  const at = memory.units[u.id]?.[way === 1 ? 'dischargeAt' : 'chargeAt'];
  const wait = u.deliveredW !== undefined ? (u.responseMs ?? options.responseMs) : (u.settleMs ?? options.settleMs);
  return at !== undefined && nowMs - at < wait;
}

/** Two reads this far apart at most show where a unit's power is heading (ms). */
const TREND_MS = 2500;
/** The shortest dead time of a unit (the device's specification: 0.5 to about 2 s), ms. */
const SOONEST_MS = 500;

/**
 * A unit's power when a command sent at `nowMs` could act at the earliest (SOONEST_MS later): its last read carried
 * on along the line from the read before, towards its setpoint and not past it (a lag does not overshoot); the last
 * read where the two show no move towards the setpoint or are too far apart. Reads as { watts, at } (ms).
 */
export function heading(
  before: { watts: number; at: number } | undefined,
  last: { watts: number; at: number },
  setpointW: number,
  nowMs: number,
): number {
  if (!before || last.at <= before.at || last.at - before.at > TREND_MS) return last.watts;
  const slope = (last.watts - before.watts) / (last.at - before.at);
  const toward = Math.sign(setpointW - last.watts);
  if (toward === 0 || Math.sign(slope) !== toward) return last.watts;
  const ahead = last.watts + slope * (nowMs - last.at + SOONEST_MS);
  return toward > 0 ? Math.min(ahead, setpointW) : Math.max(ahead, setpointW);
}

/** SOC points the unit can still move `way`: above its discharge SOC, or below its charge SOC. */
const headroom = (u: GroupUnit, way: Direction) => (way === 1 ? u.soc - u.dischargeSoc : u.chargeSoc - u.soc);
const maxW = (u: GroupUnit, way: Direction) => (way === 1 ? u.maxDischargeW : u.maxChargeW);

/** How many of the ordered units run: join above joinShare of the active ones' maximum, leave at leaveShare. */
function stageCount(needW: number, ordered: readonly GroupUnit[], activeNow: number, way: Direction, options: SplitOptions): number {
  const sums = ordered.map((_, k) => ordered.slice(0, k + 1).reduce((sum, u) => sum + maxW(u, way), 0));
  const smallest = (share: number) => {
    const k = sums.findIndex((sum) => needW <= share * sum);
    return k === -1 ? ordered.length : k + 1;
  };
  // Fewer than `join` would run above joinShare; more than `leave` are not needed at leaveShare.
  return Math.min(Math.max(activeNow, smallest(options.joinShare)), smallest(options.leaveShare));
}

/** `needW` over the units in proportion to `weights`, each within [minW, max]: water-filling, upper bounds first. */
function proportional(needW: number, units: readonly GroupUnit[], way: Direction, weights: number[], minW: number): number[] {
  const shares = units.map(() => 0);
  const fixed = units.map(() => false);
  for (let round = 0; round <= units.length; round++) {
    const rest = needW - shares.reduce((sum, s, i) => sum + (fixed[i] ? s : 0), 0);
    const weight = weights.reduce((sum, w, i) => sum + (fixed[i] ? 0 : w), 0);
    units.forEach((_, i) => {
      if (!fixed[i]) shares[i] = weight > 0 ? (rest * weights[i]!) / weight : 0;
    });
    // One bound per round, since the others' shares change with it: a unit at its maximum frees more for the rest.
    const over = units.findIndex((u, i) => !fixed[i] && shares[i]! > maxW(u, way));
    const under = units.findIndex((u, i) => !fixed[i] && shares[i]! < Math.min(minW, maxW(u, way)));
    const bound = over !== -1 ? over : under;
    if (bound === -1) break;
    const unit = units[bound]!;
    shares[bound] = over !== -1 ? maxW(unit, way) : Math.min(minW, maxW(unit, way));
    fixed[bound] = true;
  }
  return shares;
}

/** Whole watts that add up to the rounded total (the remainder to the largest share). */
function whole(shares: number[], way: Direction): number[] {
  const rounded = shares.map((s) => Math.floor(s));
  let rest = Math.round(shares.reduce((sum, s) => sum + s, 0)) - rounded.reduce((sum, s) => sum + s, 0);
  const order = shares.map((s, i) => [s - Math.floor(s), i] as const).sort((a, b) => b[0] - a[0]);
  for (const [, i] of order) if (rest-- > 0) rounded[i]! += 1;
  return rounded.map((s) => s * way);
}

/** The split of `totalW` (W, positive discharging) over `units` at `nowMs`; `memory` from the last call (none at first). */
export function splitGroup(
  totalW: number,
  units: readonly GroupUnit[],
  nowMs: number,
  memory: SplitMemory = { units: {} },
  settings: Partial<SplitOptions> = {},
): GroupSplit {
  const options = { ...SPLIT_DEFAULTS, ...settings };
  if (!Number.isFinite(totalW)) throw new RangeError('totalW must be a number');
  if (!Number.isFinite(nowMs)) throw new RangeError('nowMs must be a number');
  check(units, options);
  const setpoints = units.map(() => 0);
  const reasons: UnitReason[] = units.map((u) => (u.leftOut ? 'left out' : 'standby'));
  const way: Direction = totalW < 0 ? -1 : 1;
  const needW = Math.abs(totalW);
  if (needW >= options.minPowerW) {
    const eligible = units.filter((u, i) => {
      if (u.leftOut) return false;
      const can = headroom(u, way) > 0 && maxW(u, way) >= options.minPowerW;
      if (!can) reasons[i] = 'soc';
      return can;
    });
    // Steered units that may still move the other way: with two or more, no one may start; with one, only itself.
    const against = units.filter((u) => !u.leftOut && mayMove(u, -way as Direction, memory, nowMs, options));
    const free = eligible.filter((u) => {
      const blocked = against.some((other) => other !== u);
      if (blocked) reasons[units.indexOf(u)] = 'reversal';
      return !blocked;
    });
    const isActive = (u: GroupUnit) => Math.sign(u.setpointW) === way;
    const rank = (u: GroupUnit) => headroom(u, way) + (isActive(u) ? options.rotateMarginPct : 0);
    const ordered = [...free].sort((a, b) => rank(b) - rank(a) || units.indexOf(a) - units.indexOf(b));
    const count = stageCount(needW, ordered, ordered.filter(isActive).length, way, options);
    const running = ordered.slice(0, count);
    const weights = running.map((u) => Math.max(1e-9, headroom(u, way) * u.capacityWh));
    const shares = whole(proportional(needW, running, way, weights, options.minPowerW), way);
    running.forEach((u, k) => {
      const i = units.indexOf(u);
      setpoints[i] = shares[k]!;
      reasons[i] = 'active';
    });
    for (const u of ordered.slice(count)) reasons[units.indexOf(u)] = 'staged out';
  }
  const commandedW = setpoints.reduce((sum, s) => sum + s, 0);
  return { setpoints, reasons, commandedW, unmetW: Math.round(totalW) - commandedW, memory: remember(units, setpoints, memory, nowMs) };
}

/**
 * The split of `totalW` where an overdrive's total heads to `steadyW`: it runs the units its steady setpoint would run
 * (a pulse beyond 80 % of one unit's maximum brought a second or third unit in for a second, with its self-use). The
 * others get none of the pulse but still count for the reversal: one still moving the other way holds the rest back.
 */
export function splitStaged(
  totalW: number,
  steadyW: number | undefined,
  units: readonly GroupUnit[],
  nowMs: number,
  memory: SplitMemory,
  settings: Partial<SplitOptions> = {},
): GroupSplit {
  if (steadyW === undefined || Math.sign(steadyW) !== Math.sign(totalW)) return splitGroup(totalW, units, nowMs, memory, settings);
  const staged = splitGroup(steadyW, units, nowMs, memory, settings);
  const running = (i: number) => staged.reasons[i] === 'active';
  const split = splitGroup(
    totalW,
    units.map((u, i) => (running(i) ? u : { ...u, maxChargeW: 0, maxDischargeW: 0 })),
    nowMs,
    memory,
    settings,
  );
  return { ...split, reasons: split.reasons.map((reason, i) => (running(i) ? reason : staged.reasons[i]!)) };
}

/** The memory after this decision: each way a unit was commanded or found in force, now. */
function remember(units: readonly GroupUnit[], setpoints: number[], memory: SplitMemory, nowMs: number): SplitMemory {
  const next: Record<string, { chargeAt?: number; dischargeAt?: number }> = {};
  units.forEach((u, i) => {
    const entry = { ...memory.units[u.id] };
    for (const value of [u.setpointW, setpoints[i]!]) {
      if (value > 0) entry.dischargeAt = nowMs;
      if (value < 0) entry.chargeAt = nowMs;
    }
    next[u.id] = entry;
  });
  return { units: next };
}
