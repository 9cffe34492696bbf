/**
 * What the regulator wants on a reading, as a pure decision: a snapshot (plain data, regulator-bounds.ts) in, an intent
 * with one named reason out, and what to record. No I/O and no hidden state: the regulator's facade records the
 * intent in the sent room (src/control/regulator-sent.ts) and keeps `Memory` for the next decision.
 *
 * The law is a deadbeat on the plant family (deadbeatMove()): at each reading each consistent plant gives the setpoint
 * that lands its battery on its need by the time the next setpoint acts, and the least far of them is taken, where all
 * lie beyond the dead band. The need it heads to is what the regulator stands behind; a setpoint past it is a pulse,
 * brought back towards it by the next readings (shrink()). The rules, each in one place: a need held within the band
 * moves nothing (settled, nothing is sent); a move back waits for a whole band, or a pulse's worth just after a move; a
 * trim waits for a second reading (confirmedTrim()); one move gets one pulse, and a trim or a ramp none; at the need,
 * one pulse speeds a battery slower than its move's plants (speedUp()); readings further apart than the device's slot
 * get a pulse of one slot followed up by time (regulator-pulse.ts), but a move back before the last has shown none;
 * more of a large move's way than a stopped battery explains waits for a read of 6000 (batteryCheck()); a battery short
 * of a charge holds no setpoint beyond the house's export (shortfallNeed()). The start, a battery that falls short and
 * a group (its plant estimates its units' power: a point, no plant of the family) take the law of the needs' interval
 * (edgeMove()): a move where the whole interval lies beyond the dead band, to its nearest edge, a pulse of one slot for
 * a large one, and inside the band one pulse where the readings showed the battery slower (boost()).
 */
import { response } from './plant-family';
import { beyondBand, band, limit, wanted, type Snapshot, type Wanted } from './regulator-bounds';
import { SHORT_W, continuesRamp, modelInterval, shortMarginW, showsMs, valueBefore, type PlantView } from './regulator-plant';
import { overdrive, pulseMinW, type Pulse } from './regulator-pulse';
import type { Decision, DecisionAction, DecisionReason, OnTimeout } from './regulator-types';

/** A move of the setpoint under this many dead bands is a trim: it needs two readings (see confirmedTrim). */
const TRIM_BANDS = 2;
/** A plain step this large (W) is checked for a shortfall as a pulse is: an appliance's; a ramp's first move is smaller. */
const CHECKED_STEP_W = 500;

/** What the decisions remember from one reading to the next; returned with each intent, kept by the facade. */
export interface Memory {
  /**
   * The interval law's (edgeMove): the way (+1 up, -1 down) of the last move that had its pulse (from the start, or
   * added once the readings showed the battery slower); 0 when it had none. One is enough.
   */
  boosted: number;
  /** The way (+1 up, -1 down) of the last move. */
  lastWay?: number;
  lastReadingAt?: number;
  /** From the reading before to this one (ms). */
  readingGap?: number;
  /** The need that had its pulse, and when: one per need (see speedUp). */
  pulsed?: number;
  pulsedAt?: number;
  /** A trim the last reading asked for (see confirmedTrim). */
  trimAsked?: { wanted: number; reading: number };
  /** The large move whose followers are checked: when it started, its value and way, until when (see batteryCheck). */
  checkWindow?: { move: number; value: number; way: number; until: number };
}

/** A reading's snapshot: the common one and what the reading brought. */
export interface ReadingSnapshot extends Snapshot {
  grid: number;
  /** The battery's power the reading's load was taken with, [low, high] (W). */
  battery: [number, number];
  want: Wanted;
  /** The pulse of one slot in force. */
  pulse: Readonly<Pulse> | undefined;
  /** What the battery delivers where it falls short of every model (W, signed like 6000; steered from there). */
  shortfall: number | undefined;
  readback: { power: number; at: number } | undefined;
  /** A plant's own estimate counts (a group). */
  estimate: boolean;
  /** The new readings so far, this one included. */
  readings: number;
  memory: Memory;
}

/**
 * The decision on a reading. 'follow-up': the pulse of one slot in force goes on, with this reading's floor, its next
 * setpoint due by time. `setpoint` with 'set' goes out (`steady`: no pulse's value); `startsPulse` starts with it; `endsPulse`: the
 * pulse in force ends; `ownMove`: the setpoint moved of its own (a follow-up's gap no longer shows the queue's pace).
 */
export interface Intent {
  action: 'set' | 'hold' | 'follow-up';
  reason: DecisionReason;
  setpoint?: number;
  steady?: boolean;
  floor?: number;
  startsPulse?: Pulse;
  endsPulse?: boolean;
  ownMove?: boolean;
  /** A deadbeat's pulse (planned again at each reading, no follow-ups): the need it heads to, stood behind. */
  behind?: number;
  memory: Memory;
}

type Outcome = Omit<Intent, 'memory'>;

/** What is in force once a reading's intent is recorded: its decision reports it. */
export interface InForce {
  setpoint: number | undefined;
  steady: number | undefined;
  soc: number | undefined;
  deadBand: number;
  /** What a battery that falls short delivers (W); undefined while it follows. */
  shortfall: number | undefined;
}

/** The decision on a reading of `grid`, with the battery's power taken for it (W, the middle of its interval). */
export function readingDecision(action: DecisionAction, reason: DecisionReason, grid: number, battery: number, now: InForce): Decision {
  return {
    action,
    setpoint: now.setpoint,
    steady: now.steady,
    grid,
    battery: Math.round(battery),
    soc: now.soc,
    reason,
    deadBand: Math.round(now.deadBand),
    ...(now.shortfall !== undefined ? { limitedBy: 'battery' as const, delivered: now.shortfall } : {}),
  };
}

/** The meter fell silent for the time-out while the regulator steers (not with keep: that is an exit). */
export function silentMeter(onTimeout: Exclude<OnTimeout, 'keep'>, soc: number | undefined): Decision {
  const action: DecisionAction = onTimeout === 'standby' ? 'standby' : 'self-consumption';
  return {
    action,
    setpoint: onTimeout === 'standby' ? 0 : undefined,
    steady: onTimeout === 'standby' ? 0 : undefined,
    grid: undefined,
    battery: undefined,
    soc,
    reason: 'meter timeout',
  };
}
const hold = (reason: DecisionReason, ownMove = false): Outcome => ({ action: 'hold', reason, ownMove });

export function decideReading(s: ReadingSnapshot): Intent {
  const memory = { ...s.memory };
  memory.readingGap = memory.lastReadingAt === undefined ? undefined : s.now - memory.lastReadingAt;
  memory.lastReadingAt = s.now;
  const { want, pulse } = s;
  // A battery that falls short of a pulse: it ends on its need.
  if (!pulse && !s.estimate && s.shortfall !== undefined && s.steady !== undefined && s.acknowledged !== s.steady)
    return { action: 'set', reason: 'load', setpoint: s.steady, steady: true, endsPulse: true, ownMove: true, memory };
  if (!pulse) return { ...move(s, memory, s.acknowledged), memory };
  // A pulse of one slot is followed up by time, above the floor this reading's load sets, unless the reading shows a
  // new load.
  if (!beyondBand(s, want, pulse.final)) return { action: 'follow-up', reason: 'settling', floor: want.floor, memory };
  // The move starts from what the pulse was heading to.
  const moved = move(s, memory, pulse.final);
  if (moved.action === 'set' || s.acknowledged === pulse.final) return { ...moved, endsPulse: true, memory };
  return { ...moved, action: 'set', reason: 'load', setpoint: pulse.final, steady: true, endsPulse: true, memory };
}

/** The decision on a reading with no pulse of one slot under way. */
function move(s: ReadingSnapshot, memory: Memory, current: number | undefined): Outcome {
  const planned = current !== undefined && s.shortfall === undefined && !s.estimate;
  return planned ? deadbeatMove(s, current, memory) : edgeMove(s, memory, current);
}

/**
 * The law of the needs' interval: a move only where the whole interval of wanted setpoints lies beyond the dead band,
 * to its edge nearest the setpoint in force, with a pulse of one slot for a large one (regulator-pulse.ts). For the
 * start, a battery that falls short (steered from what it delivers) and a group, whose plant estimates its units'
 * power itself: that estimate is a point, no plant of the family, so the deadbeat has no plants to plan with.
 */
function edgeMove(s: ReadingSnapshot, memory: Memory, current: number | undefined): Outcome {
  const { want, now } = s;
  let reason: DecisionReason = current === undefined ? 'start' : want.floored ? 'grid charge' : 'load';
  const need = shortfallNeed(s);
  if (need && current !== undefined && current < need.value - s.deadBand)
    return { action: 'set', reason: need.reason, setpoint: need.value, steady: true, ownMove: true };
  if (current !== undefined && !beyondBand(s, want, current)) return boost(s, memory, current);
  const edge = current === undefined ? (want.low + want.high) / 2 : want.low > current ? want.low : want.high;
  // Short, no further than that need: what the battery cannot deliver now it would deliver once the cap lifts.
  const wanted = need ? Math.max(edge, need.value) : edge;

  const limited = limit(confirmedTrim(s, memory, wanted, current, reason) ?? wanted, s.settings, s.soc);
  if (limited.reason) reason = limited.reason;
  const next = limited.value;
  const [below, above] = current === undefined ? [0, 0] : band(s, current, want.high - want.low);
  if (current !== undefined && next >= below && next <= above) return hold(reason);
  if (memory.trimAsked?.reading === s.readings) return hold('dead band');
  // One move, one pulse: while the battery still answers a move that had its pulse, a trim or more of the same way gets
  // none. A trim would get a pulse sized for all the way a slow battery still has to go (an overshoot); more of the
  // same way is also what a battery falling short of its setpoint looks like until a read-back shows it (a wind-up).
  const way = Math.sign(next - (current ?? next));
  const lastAck = s.plant.history.at(-1)?.ackAt ?? -Infinity;
  const answering =
    memory.boosted !== 0 &&
    (way === memory.boosted || Math.abs(next - current!) < pulseMinW(s.deadBand)) &&
    now < lastAck + showsMs(s.plant);
  // A stop at a SOC limit needs no haste; a ramp is followed step by step.
  const plain =
    current === undefined || reason === 'soc' || s.shortfall !== undefined || answering || continuesRamp(s.plant, next - current, now);
  const reachable = current === undefined ? next : batteryCheck(s, memory, next, current, way, answering && way === memory.boosted);
  if (reachable === undefined) return hold('battery check', true);
  const pulse = plain || reachable !== next ? undefined : overdrive(s, next, want.floor);
  if (!answering) memory.boosted = pulse === undefined ? 0 : way;
  if (pulse !== undefined)
    return { action: 'set', reason: 'overdrive', setpoint: pulse.value, steady: false, startsPulse: pulse.pulse, ownMove: true };
  return { action: 'set', reason, setpoint: reachable, steady: true, ownMove: true };
}

/**
 * A battery that falls short while it charges must not hold a setpoint beyond what the house exports with the battery
 * at what it delivers: once the cap lifts it would go there and charge from the grid (a derated battery held at
 * -2368 W where the house exported 1660 W drew 600 W from the grid when the derating ended): that need, within the
 * limits; undefined while the battery follows, falls short of a discharge, or may charge from the grid.
 * Short of a discharge the setpoint stays: brought back there it cost reversals on slow batteries and late meters.
 */
function shortfallNeed(s: ReadingSnapshot): { value: number; reason: DecisionReason } | undefined {
  // Short of a charge: the setpoint lies below what the battery delivers.
  if (s.shortfall === undefined || s.acknowledged === undefined || s.settings.gridCharge || s.acknowledged >= s.shortfall) return undefined;
  const asked = wanted(s.grid, s.shortfall, s.shortfall, false, s.settings);
  const need = limit(asked.low, s.settings, s.soc);
  return { value: need.value, reason: need.reason ?? (asked.floored ? 'grid charge' : 'load') };
}

/**
 * How far `next` may go while the battery still answers a large move (a pulse's, or a step of CHECKED_STEP_W or more
 * that continues no ramp): more of the same way is what a battery that falls short looks like until a read of 6000
 * shows it, and moved on it winds up. So more of that way goes only as far as the load asks even if the battery stays
 * where it was last seen (the last read since the move, or where the move started if none came yet, or the slowest
 * plant consistent now or when the move started, whichever is least far): a new load (a hob after a kettle) is
 * followed at once, a cap is not wound up against. Where that is less than SHORT_W, undefined: the move waits for a read, asked by the decision's reason ('battery
 * check'). The check ends when a read shows the battery short (then it is steered from what it delivers) or arrived,
 * or when the slowest plant the readings allowed at its first check would have shown the move. Not where this
 * reading's battery power is known (read with it, or a group's estimate from its units' reads). Moves too small to
 * tell a shortfall by go on, but after a pulse they add up: what is checked lies SHORT_W or more beyond the large
 * move's value (small moves crept 230 W past a capped battery).
 */
function batteryCheck(
  s: ReadingSnapshot,
  memory: Memory,
  next: number,
  current: number,
  way: number,
  afterPulse: boolean,
  stoodBehind?: number,
): number | undefined {
  const last = s.plant.history.at(-1);
  if (!last || s.shortfall !== undefined || s.settings.heldMeter || s.estimate || s.want.read) return next;
  const window = memory.checkWindow;
  const open = window !== undefined && window.way === way && s.now < window.until;
  if (!open) {
    // A move's window is the one of its first check, and once only.
    if (window?.move === last.startAt) return next;
    const lastMove = last.value - valueBefore(s.plant, 1);
    // A step, not a ramp's: on a ramp more of the same way is the ramp.
    const step = Math.abs(lastMove) >= CHECKED_STEP_W && !continuesRamp(s.plant, lastMove, last.startAt, 1);
    // After a plain step a move too small to tell a shortfall by opens no window; after a pulse the small ones add up.
    const telling = Math.abs(next - last.value) >= SHORT_W;
    if (!afterPulse && !(Math.sign(lastMove) === way && step && telling)) return next;
    // The window is the one of the first check: a battery that stops short looks like a fast one to the identification.
    memory.checkWindow = { move: last.startAt, value: stoodBehind ?? last.value, way, until: last.ackAt + showsMs(s.plant) };
  }
  const checked = memory.checkWindow!;
  if (Math.abs(next - checked.value) < SHORT_W) return next;
  const read = s.readback !== undefined && s.readback.at > checked.move ? s.readback.power : undefined;
  if (read !== undefined && Math.abs(read - checked.value) <= shortMarginW(checked.value)) return next;
  // Where the battery may have stopped, in the move's way.
  const [restLow, restHigh] = modelInterval(s.plant, s.now, s.plant.atRest);
  const [low, high] = s.battery;
  const seen = read ?? startOfMove(s.plant, way, s.now);
  const stopped = way > 0 ? Math.min(low, restLow, seen) : Math.max(high, restHigh, seen);
  const asked = wanted(s.grid, way > 0 ? stopped : low, way > 0 ? high : stopped, false, s.settings);
  const reachable = limit(way > 0 ? Math.min(next, asked.low) : Math.max(next, asked.high), s.settings, s.soc).value;
  return (reachable - current) * way >= SHORT_W ? reachable : undefined;
}

/**
 * The setpoint the battery was moving from, in `way`, when the moves that have not shown yet (their delay and two lags,
 * under the slowest plant the readings allow) began: a pulse and its follow-ups are one move.
 */
function startOfMove(plant: PlantView, way: number, now: number): number {
  const shows = showsMs(plant);
  let from = plant.history.at(-1)?.value ?? plant.base;
  for (let back = 0; back < plant.history.length && now < plant.history.at(-1 - back)!.ackAt + shows; back++)
    from = way > 0 ? Math.min(from, valueBefore(plant, back + 1)) : Math.max(from, valueBefore(plant, back + 1));
  return from;
}

/**
 * A trim (a move of the load's setpoint under TRIM_BANDS dead bands) waits for the next reading to ask for it the same
 * way, and then goes to the mean of the two: on a noisy meter one reading at the band's edge would set the grid at the
 * other edge, and the next such reading would move it back (a reversal). Returns the mean once confirmed; undefined
 * otherwise (the trim then waits: `trimAsked` is this reading's).
 */
function confirmedTrim(s: ReadingSnapshot, memory: Memory, wanted: number, current: number | undefined, reason: DecisionReason) {
  const asked = memory.trimAsked;
  memory.trimAsked = undefined;
  if (current === undefined || reason !== 'load' || s.shortfall !== undefined || Math.abs(wanted - current) >= TRIM_BANDS * s.deadBand)
    return undefined;
  // A trim that continues a ramp is its tail, no noise: the setpoint is still behind the load.
  if (continuesRamp(s.plant, wanted - current, s.now)) return undefined;
  if (asked && asked.reading === s.readings - 1 && Math.sign(asked.wanted - current) === Math.sign(wanted - current))
    return (asked.wanted + wanted) / 2;
  memory.trimAsked = { wanted, reading: s.readings };
  return undefined;
}

/** Inside the dead band: the readings may have shown the battery slower than the fastest plant of the start, then a pulse speeds it on. */
function boost(s: ReadingSnapshot, memory: Memory, current: number): Outcome {
  const last = s.plant.history.at(-1);
  const ramp = last !== undefined && continuesRamp(s.plant, current - valueBefore(s.plant, 1), last.startAt, 1);
  const pulse = memory.boosted !== 0 || ramp || s.shortfall !== undefined ? undefined : overdrive(s, current, s.want.floor);
  if (pulse !== undefined) {
    memory.boosted = Math.sign(pulse.value - current);
    return { action: 'set', reason: 'overdrive', setpoint: pulse.value, steady: false, startsPulse: pulse.pulse, ownMove: true };
  }
  return hold(s.want.high - s.want.low > 2 * s.deadBand ? 'settling' : 'dead band');
}

/** A deadbeat lands the battery on its need within this many of its lags, at least by when the next setpoint acts. */
const HORIZON_LAGS = 0.5;
/** Readings more than this many device slots apart get a pulse of one slot, followed up by time. */
const SPARSE_SLOTS = 1.5;
/** A move back of less than this (W) just after a move waits: the meter's noise or a ramp's zig-zag, not a new load. */
const REVERSAL_WAIT_W = 150;

/** A consistent plant's view of a reading: its need, its floor, the battery when a setpoint acts, what the horizon keeps. */
type Plan = { need: number; floor: number; ahead: number; keeps: number };

/** The setpoint that lands this plant's battery on `need` by the horizon, never below its floor. */
const deadbeat = (p: Plan, need: number) => Math.max((need - p.ahead * p.keeps) / (1 - p.keeps), p.floor);

/** The battery still answers the last pulse (its delay and two lags under the slowest plant have not passed). */
const answersPulse = (s: ReadingSnapshot, memory: Memory) => memory.pulsedAt !== undefined && s.now < memory.pulsedAt + showsMs(s.plant);

/**
 * Each consistent plant's view of the reading. A setpoint sent now acts until the next one does: that is decided at the
 * first reading after its answer, so the horizon is a reading's gap, or two where the answers take that long.
 */
function plansOf(s: ReadingSnapshot, memory: Memory): Plan[] {
  const { history, base, models } = s.plant;
  const last = history.at(-1);
  const answerMs = last ? last.ackAt - last.startAt : 0;
  const readingGap = memory.readingGap ?? s.slotMs;
  const horizon = Math.max(s.slotMs, readingGap * Math.ceil((answerMs + 1) / readingGap));
  return models.map((model) => {
    const modelShown = response(model, history, base, s.now);
    // Where the battery is known (a read of 6000, a group's estimate), each plant starts from there.
    const shown = Math.min(s.battery[1], Math.max(s.battery[0], modelShown));
    const { low: need, floor } = wanted(s.grid, shown, shown, false, s.settings);
    const ahead = response(model, history, base, s.now + model.delayMs) + (shown - modelShown);
    return { need, floor, ahead, keeps: Math.exp(-Math.max(horizon, HORIZON_LAGS * model.lagMs) / model.lagMs) };
  });
}

/**
 * The law (see the file's head): from the need stood behind (`held`) to a new one where every plant's deadbeat lies
 * beyond the band; otherwise a pulse in force shrinks, or a battery slower than its move's plants gets one pulse.
 */
function deadbeatMove(s: ReadingSnapshot, current: number, memory: Memory): Outcome {
  const plans = plansOf(s, memory);
  const held = s.steady ?? current;
  const [heldBelow, heldAbove] = band(s, held);
  const pulsing = current < heldBelow || current > heldAbove;
  const needs = { low: Math.min(...plans.map((p) => p.need)), high: Math.max(...plans.map((p) => p.need)) };
  const settle = () => (pulsing ? shrink(s, current, held, plans) : speedUp(s, memory, held, plans, needs));
  // A held sample is of an unknown age: a move waits until every need it allows lies beyond the band.
  if (s.settings.heldMeter && !beyondBand(s, s.want, held)) return settle();
  let atLow = { value: Infinity, need: 0 };
  let atHigh = { value: -Infinity, need: 0 };
  for (const p of plans) {
    const value = deadbeat(p, p.need);
    if (value < atLow.value) atLow = { value, need: p.need };
    if (value > atHigh.value) atHigh = { value, need: p.need };
  }
  const [below, above] = band(s, held, atHigh.value - atLow.value);
  const chosen = atLow.value > above ? atLow : atHigh.value < below ? atHigh : undefined;
  if (!chosen) return settle();
  // The need moves the way the deadbeat does, or stays (a plant that thinks the battery further behind needs less);
  // from a held sample of unknown age, to the nearest need any battery position of its age allows.
  const way = Math.sign(chosen.value - held);
  const need = s.settings.heldMeter ? (way > 0 ? s.want.low : s.want.high) : chosen.need;
  const final = limit(Math.round(way > 0 ? Math.max(need, held) : Math.min(need, held)), s.settings, s.soc);
  // Any move back needs a whole dead band; just after a move (before it has shown), a pulse's worth.
  const last = s.plant.history.at(-1);
  const recent = last !== undefined && s.now < last.ackAt + showsMs(s.plant);
  const back = memory.lastWay !== undefined && way !== memory.lastWay;
  const wait = back ? (recent ? REVERSAL_WAIT_W : s.deadBand) : 0;
  if ((final.value >= heldBelow && final.value <= heldAbove) || Math.abs(final.value - held) <= wait) return settle();
  // While the battery answers a pulse, a small change of its need is the plants' disagreement, not a new load.
  if (answersPulse(s, memory) && Math.abs(final.value - held) < SHORT_W) return settle();
  const ramp = continuesRamp(s.plant, final.value - held, s.now);
  const trimmed = confirmedTrim(s, memory, final.value, held, 'load');
  if (memory.trimAsked?.reading === s.readings) return settle();
  const needed = Math.round(trimmed ?? final.value);
  return moveTo(s, memory, { ...final, value: needed }, chosen.value, held, current, { ramp, backSoon: back && recent });
}

/**
 * The move to `final` (the new need), with the deadbeat's `value`: a pulse past the need by at most the battery's
 * distance from it, where the move is worth one (no trim, no ramp, not while the battery answers one, not at a SOC
 * limit); of one slot and followed up by time where readings come further apart than that, or as held samples, but
 * none there on a move back before the last move has shown.
 */
function moveTo(
  s: ReadingSnapshot,
  memory: Memory,
  final: { value: number; reason?: DecisionReason },
  value: number,
  held: number,
  current: number,
  { ramp, backSoon }: { ramp: boolean; backSoon: boolean },
): Outcome {
  const way = Math.sign(final.value - held);
  const distance = Math.abs(final.value - (s.battery[0] + s.battery[1]) / 2);
  const small = Math.abs(final.value - held) < pulseMinW(s.deadBand) || distance < pulseMinW(s.deadBand);
  const plain = final.reason === 'soc' || small || ramp || answersPulse(s, memory);
  const reason = final.reason ?? (s.want.floored ? 'grid charge' : 'load');
  const checked = (next: number) => batteryCheck(s, memory, next, held, way, answersPulse(s, memory) && way === memory.lastWay, held);
  if (!plain && ((memory.readingGap ?? 0) > SPARSE_SLOTS * s.slotMs || s.settings.heldMeter)) {
    const reachable = checked(final.value);
    if (reachable === undefined) return hold('battery check', true);
    // A held sample's age blurs a small step: only an appliance's gets a pulse.
    const large = !s.settings.heldMeter || Math.abs(final.value - held) >= CHECKED_STEP_W;
    // A move back before the last move has shown is a reversal already; the pulse's follow-up, by time, would end on a
    // need the late readings still put short of the load, and the next reading move on past it (a load that left for
    // 3.5 s and came back, seen on a meter every 3 s and 1.8 s late: three reversals).
    const pulse = reachable === final.value && large && !backSoon ? overdrive(s, final.value, s.want.floor) : undefined;
    memory.lastWay = way;
    if (!pulse) return { action: 'set', reason, setpoint: reachable, steady: true, ownMove: true };
    memory.pulsed = final.value;
    memory.pulsedAt = s.now;
    return { action: 'set', reason: 'overdrive', setpoint: pulse.value, steady: false, startsPulse: pulse.pulse, ownMove: true };
  }
  const past = plain ? 0 : Math.min(Math.max(0, (value - final.value) * way), distance);
  const limited = limit(final.value + way * past, s.settings, s.soc);
  const reachable = checked(limited.value);
  if (reachable === undefined) return hold('battery check', true);
  // Held at a limit: nothing new to send.
  const [nearBelow, nearAbove] = band(s, current);
  if (reachable >= nearBelow && reachable <= nearAbove) return hold(limited.reason ?? 'dead band');
  memory.lastWay = way;
  // Within the band past the need, the need itself.
  if ((reachable - final.value) * way <= s.deadBand) {
    const setpoint = (reachable - final.value) * way > 0 ? final.value : reachable;
    return { action: 'set', reason: limited.reason ?? reason, setpoint, steady: true, ownMove: true };
  }
  memory.pulsed = final.value;
  memory.pulsedAt = s.now;
  return { action: 'set', reason: 'overdrive', setpoint: reachable, steady: false, behind: final.value, ownMove: true };
}

/**
 * At the need stood behind, the battery still far from it under every plant the readings allow (slower than the
 * plants of the move's start): one pulse per need speeds it on, the least far of the plants' deadbeats. Not on a
 * ramp, nor on a held sample (its age makes any battery look slow).
 */
function speedUp(s: ReadingSnapshot, memory: Memory, held: number, plans: Plan[], needs: { low: number; high: number }): Outcome {
  const quiet = hold(needs.high - needs.low > 2 * s.deadBand ? 'settling' : 'dead band');
  if (memory.pulsed === held || answersPulse(s, memory) || s.shortfall !== undefined || s.settings.heldMeter) return quiet;
  const values = plans.map((p) => deadbeat(p, held));
  const [low, high] = [Math.min(...values), Math.max(...values)];
  const way = low > held ? 1 : high < held ? -1 : 0;
  const distance = Math.abs(held - (s.battery[0] + s.battery[1]) / 2);
  const last = s.plant.history.at(-1);
  const ramp = last !== undefined && continuesRamp(s.plant, last.value - valueBefore(s.plant, 1), last.startAt, 1);
  if (way === 0 || distance < pulseMinW(s.deadBand) || ramp) return quiet;
  const past = Math.min(((way > 0 ? low : high) - held) * way, distance);
  const value = limit(held + way * past, s.settings, s.soc).value;
  if ((value - held) * way <= s.deadBand) return quiet;
  memory.pulsed = held;
  memory.pulsedAt = s.now;
  return { action: 'set', reason: 'overdrive', setpoint: value, steady: false, behind: held, ownMove: true };
}

/**
 * A pulse past the need stood behind comes back towards it: the least far of the plants' deadbeats, never beyond the
 * last setpoint nor back past the need; it ends on the need within the band, or once some plant is there. Each write
 * costs a request: a pulse shrinks by a pulse's worth at least.
 */
function shrink(s: ReadingSnapshot, current: number, held: number, plans: Plan[]): Outcome {
  const way = Math.sign(current - held);
  const there = plans.some((p) => (p.ahead - held) * way >= 0);
  const least = plans.reduce((best, p) => way * Math.min(best * way, deadbeat(p, held) * way), current);
  const value = (least - held) * way < 0 ? held : least;
  if (there || (value - held) * way <= s.deadBand) return { action: 'set', reason: 'load', setpoint: held, steady: true, ownMove: true };
  if (Math.abs(value - current) < pulseMinW(s.deadBand)) return hold('settling');
  return { action: 'set', reason: 'overdrive', setpoint: Math.round(value), steady: false, behind: held, ownMove: true };
}
