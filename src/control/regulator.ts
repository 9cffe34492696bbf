/**
 * Zero feed-in regulator without Node-RED: from grid power readings it decides the battery setpoint that brings the
 * grid meter to its target. Time comes in as an argument (ms), so it runs against a simulated plant as well.
 *
 * What it measures: grid power g (W, positive importing, sign of 11016), from a message or the device's meter; the
 * acknowledged setpoint s (W, signed like battery power 6000: positive discharges) is its state; where the battery's
 * power b is read together with the meter (the device's own meter), or read back (6000) once the battery has settled,
 * that counts instead of the model.
 *
 * The plant: the battery follows an acknowledged setpoint after a dead time (0.5 to ~2 s) and a first-order lag (0.5
 * to 5 s); the meter may show the result up to 2 s late; the device takes one request per second, shared with every
 * other user of its queue. The house load L is what the meter would read without the battery: g = L - b, so L = g + b.
 *
 * The law: a deadbeat step onto the estimated load, s_next = L_est - target, limited. b is not measured with a meter
 * from elsewhere, so it is estimated by a family of battery models fed with the setpoint history (src/control/plant-family.ts:
 * delays and lags on a grid from the fastest plant the regulator is built for, `fast`, to the slowest, `slow`). At
 * first every model counts; the readings then rule out those whose implied load L = g + b_model shows a bump where a
 * setpoint moved (the battery's own response taken for a load change). The battery's power as the meter shows it now
 * lies between the consistent models' outputs, so the load lies in [g + b_lo, g + b_hi]. The regulator moves only
 * when that whole interval says so (beyond the dead band), and then only to the interval's edge nearest the present
 * setpoint. While the last move is still showing, the interval is wide and the lag cannot be mistaken for a load
 * change: no overshoot and no reversal caused by the battery's own response, for any plant the readings allow (a
 * Smith predictor whose model is a set of plants). Once the models have settled the interval is a point: L = g + s,
 * and one step lands on the load. A load change during a transient still moves the setpoint when it is larger than
 * the models' disagreement.
 *
 * The overdrive: a lag of 1.5 s needs 5.5 s to bring a 2 kW step within 50 W. Once the readings have shown the lag, a
 * large move starts with a pulse beyond its value, sized so that the battery reaches the value one request later, when
 * the value itself follows at once (ahead of waiting reads). Each consistent model gives its own pulse; the one that
 * goes least far is sent, so no plant the readings allow overshoots (the others arrive later, as without a pulse). At
 * a power limit the pulse lasts several requests; its follow-up is due by time (tick()), not by the next reading, and a
 * reading that shows a new load ends it (the next move starts from the pulse's value, not from the pulse). A pulse
 * goes past its value by at most the move itself, each follow-up at most as far as the one before, and never below
 * the grid-charging floor. One move gets one pulse: while the battery still answers it, a trim or more of the same way
 * gets none. A move at most twice the moves the same way that have not shown yet continues a ramp (a cloud over the
 * PV, seen late by a slow meter): it gets no pulse, which would zig-zag behind it. The dead band is widened to three
 * times the meter's noise (to 100 W at most), so that noise does not move a setpoint that the narrowed models no
 * longer shield; it leans toward import (a move down at half the band of export, up at a whole band of import). A
 * meter that holds its sample between refreshes (the device's own) repeats it: a repeat moves nothing. Its new sample
 * was taken since the reading before, so the battery's power then lies between the 6000 read with the two readings:
 * that range counts instead of the models', whose one delay each cannot follow a sample's age (up to a refresh, more
 * when a pulse took the slots).
 *
 * Exits: the regulator stands behind a steady setpoint (a pulse's value is none); exit() and a time-out with keep give
 * that setpoint where a pulse may be in force. One reading whose implied load jumped by more than 2.5 kW is held back
 * until the next confirms it. A read-back of 6000 short of every consistent model (during a transient too) shows a
 * battery that does not follow: the load is then taken between what it delivers and what the models expect (no
 * wind-up), and the identification skips it.
 *
 * Further rules: one setpoint in flight at a time (the next only after the device acknowledged the previous one,
 * which the shared queue paces); the state is the acknowledged setpoint after every limit, so nothing winds up at a
 * power or SOC limit; without grid charging the battery charges only by what the house would export (never below
 * min(0, L)); below the device's minimum power it stands by; a reading that is no number or beyond any house (10 MW)
 * is ignored and moves nothing; a meter silent for the time-out leads to standby, a hand-back to self-consumption or
 * nothing (keep), as configured.
 */
import { decimalNumber } from '../numbers';
import { PlantIdentifier, plantFamily, response, settleMs, type PlantBound, type PlantModel, type Step } from './plant-family';

export type { PlantBound };

/** What happens when the meter falls silent. */
export type OnTimeout = 'standby' | 'self-consumption' | 'keep';
export const ON_TIMEOUT: readonly OnTimeout[] = ['standby', 'self-consumption', 'keep'];

export interface RegulatorSettings {
  /** Grid power to hold, W (positive: import). */
  target: number;
  /** The setpoint moves only when the new one differs by more than this, W. */
  deadBand: number;
  /** W, positive. */
  maxCharge: number;
  maxDischarge: number;
  /** No charging at or above this SOC (%); no discharging at or below dischargeSoc. */
  chargeSoc: number;
  dischargeSoc: number;
  meterTimeoutMs: number;
  onTimeout: OnTimeout;
  /** The battery may charge from the grid (otherwise only from what would be exported). */
  gridCharge: boolean;
  /** The device's smallest power; a smaller setpoint is standby. */
  minPower: number;
  /**
   * SOC points (% of capacity) each real-time command lets the battery go past the SOC now by itself, within chargeSoc
   * and dischargeSoc: the device stops there if its sender is gone (it has no watchdog). Undefined: to those SOCs.
   */
  leash?: number;
  /** The fastest and the slowest plant the regulator must be right for. */
  fast: PlantBound;
  slow: PlantBound;
  /** The device's minimum interval between requests (ms, default 1000): an overdrive's halves are that far apart. */
  requestIntervalMs?: number;
  /**
   * The meter holds each sample until its next refresh (the device's own, every 3 s): a reading equal to the one before
   * is that sample again, up to a refresh old, and tells nothing new. Without this, a repeat is a reading like any.
   */
  heldMeter?: boolean;
}

/**
 * The family's ends. The slowest: dead time 2 s, lag 5 s, the meter 2 s late. The fastest is taken as instant
 * (the device may carry a setpoint out when it arrives, up to a second before its answer, and a meter reading may be
 * newer than the answer), which costs nothing on a step and keeps every faster battery inside the bounds.
 */
export const PLANT_BOUNDS: { fast: PlantBound; slow: PlantBound } = {
  fast: { deadTimeS: 0, lagS: 0.1, meterDelayS: 0 },
  slow: { deadTimeS: 2, lagS: 5, meterDelayS: 2 },
};

/** Grid readings beyond this (W, either way) are no house's: a broken meter or a wrong unit. */
export const MAX_PLAUSIBLE_GRID_W = 50000;

export type DecisionAction = 'set' | 'hold' | 'standby' | 'self-consumption';

/** Why a decision was taken, for the output message and the status. */
export type DecisionReason =
  | 'start'
  | 'load'
  | 'overdrive'
  | 'dead band'
  | 'settling'
  | 'in flight'
  | 'limit'
  | 'soc'
  | 'grid charge'
  | 'meter timeout'
  | 'disabled'
  | 'suspect'
  | 'battery check'
  | 'meter check'
  | 'mode';

export interface Decision {
  action: DecisionAction;
  /** The setpoint to send ('set'), or the one in force (W, signed like 6000); undefined when not known. */
  setpoint: number | undefined;
  grid: number | undefined;
  /** Battery power as measured or estimated for this reading (the middle of the models' interval). */
  battery: number | undefined;
  soc: number | undefined;
  reason: DecisionReason;
  /** The setpoint the regulator stands behind (a pulse's value is not one): what an exit leaves. */
  steady?: number;
  /** The dead band in force (W): steady, the grid stays within half of it below the target and all of it above. */
  deadBand?: number;
  /** The battery delivers less than its setpoint: `delivered` W (signed like 6000) is what it gives. */
  limitedBy?: 'battery';
  delivered?: number;
}

/** A grid reading from a message payload: a number, numeric text or {meterPower}; undefined for anything else. */
export function gridReading(payload: unknown): number | undefined {
  const value =
    payload && typeof payload === 'object' && !Array.isArray(payload) ? (payload as { meterPower?: unknown }).meterPower : payload;
  const number = decimalNumber(value);
  return number !== undefined && Math.abs(number) <= MAX_PLAUSIBLE_GRID_W ? number : undefined;
}

/** Steps kept for the models: older ones have long settled into the base (minutes at the pace of a pulse). */
const HISTORY = 64;

/** Added to the device's interval for the gap between a setpoint's request and the next one's, until seen (ms). */
const SLOT_MARGIN_MS = 200;
/** Gaps remembered: the pulse is sized for the longest of them, so that a late return cannot overshoot. */
const SLOTS_KEPT = 4;
/** A setpoint decided within this long (ms) after the last acknowledgement was sent at once. */
const AT_ONCE_MS = 50;
/** A move smaller than this (W) or this many dead bands is a plain step, not worth a pulse. */
const MIN_PULSE_W = 150;
const PULSE_DEAD_BANDS = 4;
/** A move of the setpoint under this many dead bands is a trim: it needs two readings (see confirmedTrim). */
const TRIM_BANDS = 2;
/** A move up to this many times the moves the same way still showing continues a ramp. */
const RAMP_RATIO = 2;
/** The dead band is at least this many times the meter's noise (the mean change between readings)... */
const NOISE_BANDS = 3;
/** ...but the noise widens it to this much at most (W): real small loads are no noise. */
const NOISE_BAND_CAP_W = 100;
/** A reading whose implied load jumped by more than this (W) waits for the next one to confirm it. */
export const SUSPECT_JUMP_W = 2500;
/** A read-back (6000) this far (W, or this share of the setpoint) short of every model: the battery does not follow. */
const SHORT_W = 100;
const SHORT_SHARE = 0.1;
/** What the battery was seen to deliver counts this long (ms); the caller reads it again well before. */
const DELIVERED_KEPT_MS = 15000;
/** A plain step this large (W) is checked for a shortfall as a pulse is: an appliance's; a ramp's first move is smaller. */
const CHECKED_STEP_W = 500;
/** The delays a plant's estimate may show in the meter are tried this far apart (ms)... */
const SHIFT_STEP_MS = 250;
/** ...each reading weighing this much less per newer one, as the models' (plant-family.ts). */
const SHIFT_FORGET = 0.995;

type Pending = { value: number; decidedAt: number; startAt?: number; steady: boolean };
/**
 * The setpoints a reading's load asks for, [low, high], and the grid-charging floor: without grid charging, no setpoint
 * below min(0, load) for any load the models allow (-Infinity with it); `read`: the battery's power was read with the
 * reading, not modelled.
 */
type Wanted = { low: number; high: number; floored: boolean; floor: number; read: boolean };
/** An overdrive under way towards `final`, `direction` +1 (up) or -1; at most `bound` W past it and never below `floor`. */
type Pulse = { final: number; direction: number; bound: number; floor: number; failed?: boolean };

export class Regulator {
  /** The acknowledged setpoint; undefined when not known (at start, after a hand-back). */
  private acknowledged: number | undefined;
  /** The last acknowledged setpoint that was no pulse's value: what an exit leaves unless a pulse is heading on. */
  private stands: number | undefined;
  /** A setpoint decided and not yet acknowledged; `startAt` once its request left. */
  private pending: Pending | undefined;
  private history: Step[] = [];
  /** Battery power before the first step of the history. */
  private base = 0;
  private readback: { power: number; at: number } | undefined;
  /** The battery delivers only this (read back, short of every model): it is steered from there. */
  private delivered: { power: number; at: number; direction: number } | undefined;
  private socValue: { value: number; at: number } | undefined;
  private lastReading = -Infinity;
  /** The last grid reading's value (a held meter repeats it until it refreshes). */
  private lastGrid: number | undefined;
  /** The grid-charging floor of the last reading's load (see wanted()). */
  private lastFloor = -Infinity;
  /** A held meter: battery power (6000) read with the last reading, where one was read since the reading before. */
  private heldBattery: number | undefined;
  private timedOut = false;
  private on = true;
  private readonly identifier: PlantIdentifier;
  /** Readings taken while a setpoint was in flight: they count for the identification once it is settled. */
  private unsettled: { grid: number; at: number }[] = [];
  /** The implied load of the last reading taken, and a reading held back because it jumped far from it. */
  private lastLoad: [number, number] | undefined;
  /** The implied load of the reading before the last one (see unitLeft()). */
  private loadBefore: [number, number] | undefined;
  /** A unit left and the plant pulses the others until then (ms; see unitLeft()). */
  private plantPulsesUntil = -Infinity;
  private suspect: { grid: number; at: number; load: [number, number] } | undefined;
  private pulse: Pulse | undefined;
  /** Gaps (ms) seen between a setpoint's request and the next one's, when the next was sent at once. */
  private slots: number[] = [];
  private followingUp = false;
  private lastAckAt = -Infinity;
  /**
   * The way (+1 up, -1 down) of the last move that had its pulse (from the start, or added once the readings showed the
   * battery slower); 0 when it had none. One is enough.
   */
  private boosted = 0;
  /** Readings so far, and a trim the last one asked for (see confirmedTrim). */
  private readings = 0;
  /** The move whose followers wait for a battery check, until when (see checksBattery). */
  private checkWindow: { move: number; until: number } | undefined;
  private trimAsked: { wanted: number; reading: number } | undefined;

  private current: RegulatorSettings;
  /**
   * The plant's own estimate of the battery's power (useEstimate()), and the meter's delay against it: each delay
   * tried, its cost and the load it implied last; the best (ms).
   */
  private estimate:
    | {
        power: (at: number) => number | undefined;
        delays: number[];
        costs: number[];
        implied: (number | undefined)[];
        delayMs: number;
        /** Which units make up the plant (see useEstimate()), as last seen, and since when (ms). */
        members?: () => string;
        seen?: { members: string; at: number };
      }
    | undefined;

  constructor(settings: RegulatorSettings, now: number) {
    this.current = settings;
    this.lastReading = now;
    this.identifier = new PlantIdentifier(plantFamily(settings.fast, settings.slow));
  }

  /**
   * A plant that knows its battery's power better than one model of the family (a group: each unit by its own lag,
   * src/control/group-plant.ts): its estimate counts instead of the consistent models' range, within what any plant of
   * the family could show. The consistent models cannot follow a hand-over from one unit to another that lags
   * differently, and bounded by them the estimate took their wrong edge. Undefined: the range. The estimate is the
   * battery's power at a time; the meter shows it up to its delay later, learned as the models' is (alignEstimate()).
   * `members` names the units that make up the plant now: when a unit leaves (switched off) or comes back, the sum no
   * longer follows the total setpoints the family saw, and the estimate counts unbounded until the slowest consistent
   * model has settled since (bounded, a unit switched off was still counted and the others were driven past the load).
   */
  useEstimate(power: (at: number) => number | undefined, members?: () => string): void {
    const { fast, slow } = this.settings;
    const delays: number[] = [];
    for (let ms = fast.meterDelayS * 1000; ms <= slow.meterDelayS * 1000; ms += SHIFT_STEP_MS) delays.push(ms);
    this.estimate = { power, delays, costs: delays.map(() => 0), implied: [], delayMs: delays[0]!, members };
  }

  /**
   * The meter's delay against the plant's estimate: of the delays the family allows, the one under which the load the
   * meter implies (grid + estimate then) changes least from reading to reading, as a wrong model's shows a bump. A
   * meter 1 s late read against the estimate of now took the battery's own move for a load and swung (grid error
   * 2.5 times the family's with three units).
   */
  private alignEstimate(grid: number, now: number): void {
    const estimate = this.estimate;
    if (!estimate) return;
    const implied = estimate.delays.map((ms) => {
      const power = estimate.power(now - ms);
      return power === undefined ? undefined : grid + power;
    });
    implied.forEach((load, i) => {
      const before = estimate.implied[i];
      estimate.costs[i] = estimate.costs[i]! * SHIFT_FORGET + (load === undefined || before === undefined ? 0 : Math.abs(load - before));
    });
    estimate.implied = implied;
    estimate.delayMs = estimate.delays[estimate.costs.indexOf(Math.min(...estimate.costs))]!;
  }

  /** The settings in force: those given, with a target changed by setTarget(). */
  get settings(): RegulatorSettings {
    return this.current;
  }

  /**
   * A new grid power to hold (W, positive: import; checked by the caller): the next reading steers to it. The settings
   * given to the constructor stay as they were.
   */
  setTarget(target: number): void {
    this.current = { ...this.current, target };
  }

  get enabled(): boolean {
    return this.on;
  }

  get setpoint(): number | undefined {
    return this.acknowledged;
  }

  /** The setpoint the regulator stands behind: a pulse's final value, or the last steady one. */
  get steady(): number | undefined {
    if (this.pulse) return this.pulse.final;
    return this.pending?.steady ? this.pending.value : this.stands;
  }

  /**
   * The grid-charging floor of the last reading's load (W, signed like 6000): without grid charging no setpoint below
   * it, a pulse's neither; -Infinity with grid charging or before a reading.
   */
  get floor(): number {
    return this.lastFloor;
  }

  /** Whether the meter fell silent for the time-out, and no reading came since. */
  get meterTimedOut(): boolean {
    return this.timedOut;
  }

  /** Whether this regulator has sent a setpoint since its start or the last hand-back. */
  get steering(): boolean {
    return this.acknowledged !== undefined || this.pending !== undefined;
  }

  get inFlight(): boolean {
    return this.pending !== undefined;
  }

  /** A setpoint in flight or an overdrive under way: the device's slots are this regulator's. */
  get moving(): boolean {
    return this.pending !== undefined || this.pulse !== undefined;
  }

  get soc(): number | undefined {
    return this.socValue?.value;
  }

  /** What the battery delivers where it falls short of the setpoint (W, signed like 6000); undefined while it follows. */
  get shortfall(): number | undefined {
    return this.delivered?.power;
  }

  /** The plants still consistent with what the meter showed: their range of delays and lags (s). */
  get plant(): { delayS: [number, number]; lagS: [number, number] } {
    const models = this.identifier.consistent();
    const span = (values: number[]): [number, number] => [Math.min(...values) / 1000, Math.max(...values) / 1000];
    return { delayS: span(models.map((m) => m.delayMs)), lagS: span(models.map((m) => m.lagMs)) };
  }

  /**
   * The dead band in force: the one set, widened to three times the meter's noise, but by the noise to 100 W at most.
   * It leans toward import: steady, the grid is between half of it below the target and all of it above.
   */
  get deadBand(): number {
    const set = this.settings.deadBand;
    return Math.max(set, Math.min(NOISE_BANDS * this.identifier.noiseW, NOISE_BAND_CAP_W));
  }

  /**
   * The discharge bound (W) a battery mode sets (src/control/modes.ts; hold: 0): the state stays the acknowledged
   * setpoint within it, so nothing winds up. The settings given to the constructor stay as they were.
   */
  setMaxDischarge(maxDischarge: number): void {
    this.current = { ...this.current, maxDischarge };
  }

  /** The charge bound (W) where the device's own limit is under Charge at most. Like setMaxDischarge. */
  setMaxCharge(maxCharge: number): void {
    this.current = { ...this.current, maxCharge };
  }

  /**
   * The discharge floor (%) where the device's own backup SOC raises it: the state stays the acknowledged setpoint
   * within it. The settings given to the constructor stay as they were.
   */
  setDischargeSoc(dischargeSoc: number): void {
    this.current = { ...this.current, dischargeSoc };
  }

  /**
   * The setpoint in force again, as one in flight (its command's SOC field moved with the SOC, or the device dropped
   * it); undefined while another is in flight, a pulse runs, or none is in force.
   */
  renew(now: number): number | undefined {
    const value = this.acknowledged;
    if (value === undefined || this.moving) return undefined;
    this.pending = { value, decidedAt: now, steady: value === this.stands };
    return value;
  }

  /** Turns the loop on or off; off, readings are ignored (the caller hands back as configured, see exit()). */
  enable(on: boolean, now: number): void {
    if (on && !this.on) this.resume(now);
    this.on = on;
  }

  /** Steers again after a rest (off, or a battery mode that set the setpoint itself): readings are due from `now`, no pulse runs. */
  resume(now: number): void {
    this.lastReading = now;
    this.timedOut = false;
    this.pulse = undefined;
    // Readings were not taken meanwhile: a held meter's next sample may be from any time of the rest.
    this.heldBattery = undefined;
  }

  /**
   * An exit that keeps the battery as it is (disable, close or time-out with *keep*): where a pulse may be in force,
   * the setpoint it was heading to, to send; undefined when the battery already has a steady one.
   */
  exit(now: number, reason: DecisionReason = 'disabled'): Decision | undefined {
    const steady = this.steady;
    const atPulse = this.pulse !== undefined || (this.pending ? !this.pending.steady : this.acknowledged !== this.stands);
    this.pulse = undefined;
    if (!atPulse || steady === undefined) return undefined;
    this.pending = { value: steady, decidedAt: now, steady: true };
    return { action: 'set', setpoint: steady, steady, grid: undefined, battery: undefined, soc: this.soc, reason };
  }

  /** The SOC (%) read from the device or a message. */
  observeSoc(value: unknown, now: number): void {
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 100) this.socValue = { value, at: now };
  }

  /**
   * Battery power (6000, positive discharging) read on its own. It replaces the models once they have settled; short
   * of what every model says the battery gives by now, it shows a battery that does not follow (derating, a SOC stop,
   * a smaller unit): the regulator then steers from what is delivered, and the identification leaves it out.
   */
  observeBattery(power: unknown, now: number, askedAt = now): void {
    if (typeof power !== 'number' || !Number.isFinite(power)) return;
    this.readback = { power, at: now };
    // Not steering (start, after a hand-back): the battery's power is all that is known.
    if (this.acknowledged === undefined && !this.pending) {
      this.base = power;
      this.history = [];
      return;
    }
    const short = this.fallsShort(power, askedAt, now);
    if (short !== (this.delivered !== undefined)) this.identifier.interrupt();
    // The way the setpoint asks: during a transient what is delivered may still lie on the other side of zero.
    this.delivered = short ? { power, at: now, direction: Math.sign(this.acknowledged!) } : undefined;
  }

  /**
   * Whether a battery power given with a reading (msg.payload.batteryPower: W, positive discharging like 6000) can be
   * this battery's: between standstill and what the models allow, with a margin. A value of the other sign (a meter
   * that counts charging as positive) or far beyond the setpoint is not, and would make every step twice too big.
   */
  plausibleBattery(power: number, now: number): boolean {
    if (!this.steering) return true;
    const [low, high] = this.modelInterval(now);
    const [lowLater, highLater] = this.modelInterval(now + this.settings.slow.meterDelayS * 1000);
    const margin = Math.max(SHORT_W, SHORT_SHARE * Math.max(Math.abs(low), Math.abs(high)));
    return power >= Math.min(0, low, lowLater) - margin && power <= Math.max(0, high, highLater) + margin;
  }

  /**
   * Whether `power` (asked for at `askedAt`, answered at `now`) is short of what every model says the battery gives
   * then, in the setpoint's way.
   */
  private fallsShort(power: number, askedAt: number, now: number): boolean {
    const setpoint = this.acknowledged;
    if (setpoint === undefined || setpoint === 0) return false;
    // The plant's units changed: the history of the sum counts a unit that left, and says nothing of the units left (a
    // slower unit taking over looked short of it, and was held at a setpoint it was still answering). Until the family's
    // slowest plant has settled, the plant's estimate steers alone; a unit that falls short is the group's to leave out.
    if (this.estimate && this.membersChanged(now, this.identifier.models)) return false;
    // Short of every plant the readings allow, during a transient too (every plant the regulator is built for would
    // see it only once the slowest, 4 s and 5 s, had settled: a derated battery was found 12 s into a kettle's step,
    // after the setpoint had wound up). A battery a little off the identified ones is within the margin.
    const models = this.identifier.consistent();
    const direction = Math.sign(setpoint);
    // 6000 was taken between the ask and the answer; the models show it as the meter will, up to its delay later.
    const [low, high] = this.modelInterval(askedAt, models);
    const [lowLater, highLater] = this.modelInterval(now + this.settings.slow.meterDelayS * 1000, models);
    const least = Math.min(...[low, high, lowLater, highLater].map((p) => p * direction));
    return direction * power < least - this.shortMarginW(setpoint);
  }

  /** How far (W) a read of 6000 may lie from a setpoint or a model and still follow it. */
  private shortMarginW(setpoint: number): number {
    return Math.max(SHORT_W, SHORT_SHARE * Math.abs(setpoint));
  }

  /** The request of the setpoint in flight left at `now` (the device may carry it out from then on). */
  started(now: number): void {
    if (!this.pending) return;
    this.pending.startAt = now;
    const last = this.history.at(-1);
    if (this.followingUp && last) {
      this.slots.push(now - last.startAt);
      if (this.slots.length > SLOTS_KEPT) this.slots.shift();
    }
  }

  /**
   * The device acknowledged `value` at `now`. For this regulator's own setpoint the models start from when its request
   * left (or was decided); for another writer's, give `startAt` (the earliest the device may have carried it out).
   */
  acknowledge(
    value: number,
    now: number,
    startAt = this.pending?.value === value ? (this.pending.startAt ?? this.pending.decidedAt) : now,
  ): void {
    const before = this.history.at(-1)?.value ?? this.base;
    const own = this.pending?.value === value;
    // Another writer's setpoint is the last command: a pulse of this regulator ends there, and it is what stands.
    if (!own) this.pulse = undefined;
    if (!own || this.pending!.steady) this.stands = value;
    this.lastAckAt = now;
    this.pending = undefined;
    this.acknowledged = value;
    // A setpoint within what the battery delivered can be followed: the shortfall no longer holds.
    const short = this.delivered;
    if (short && value * short.direction <= short.power * short.direction) this.delivered = undefined;
    // The same setpoint again (a repeat the device already has) changes nothing the models follow.
    if (this.history.length > 0 && value === before) return;
    this.identifier.moved(value - before, now);
    this.history.push({ value, startAt, ackAt: now });
    if (this.history.length > HISTORY) {
      const dropped = this.history.shift()!;
      this.base = dropped.value;
    }
  }

  /**
   * A unit left the plant (switched off: its requests fail) and the plant hands its share to the units left: the steady
   * total the last reading asks for with the plant's estimate as it is now, or undefined where there is none to say.
   * That reading may show the unit's power gone or not yet: of the two, the load that changed least from the reading
   * before is taken (a unit switched off is no change of the house's load). Shown, the need is the reading with the
   * units left; not yet, it is the need as decided. The regulator's pulse ends: its models of the sum cannot size one
   * for the units left (the plant gives each its own, by its lag), and with the old estimate it had counted the unit's
   * lost power as load once more (a unit switched off drove the one left 100 W past the load).
   */
  unitLeft(now: number): number | undefined {
    const { estimate, lastGrid: grid, lastLoad } = this;
    if (!this.on || !estimate || grid === undefined || !lastLoad || this.acknowledged === undefined) return undefined;
    const left = estimate.power(this.lastReading - estimate.delayMs);
    if (left === undefined) return undefined;
    const middle = (load: [number, number]) => (load[0] + load[1]) / 2;
    const before = this.loadBefore && middle(this.loadBefore);
    const [withUnit, without] = [middle(lastLoad), grid + left];
    const load = before === undefined || Math.abs(without - before) <= Math.abs(withUnit - before) ? without : withUnit;
    this.lastLoad = [load, load];
    this.pulse = undefined;
    this.boosted = 0;
    this.plantPulsesUntil = now + Math.max(...this.identifier.consistent().map(settleMs));
    // The meter's delay learned against the estimate also made up for the dead times of the units it does not know (a
    // 1600 class's 1.5 s against the 1 s taken): with the units left it is learned afresh (kept, the 2400 class left
    // alone was taken 0.5 s late and the grid held 40 W for 3 s).
    estimate.costs = estimate.costs.map(() => 0);
    estimate.implied = [];
    return this.limit(this.wanted(grid, load - grid, load - grid, false).low).value;
  }

  /**
   * The setpoint was not acknowledged (error, replaced): the one before stays in force as far as is known. An overdrive
   * under way ends: after an error its final value is what follows (once); replaced by another writer's, nothing does.
   */
  failed(replaced = false): void {
    this.pending = undefined;
    if (this.pulse && !replaced) this.pulse.failed = true;
    else this.pulse = undefined;
  }

  /**
   * The device moved by itself (it stopped at its SOC): the battery is where `power` (6000, read at `now`) says, the
   * setpoint it holds stays, and the models start again from there.
   */
  restartFrom(power: number, now: number): void {
    const { acknowledged, stands } = this;
    this.handedBack();
    [this.acknowledged, this.stands] = [acknowledged, stands];
    this.base = power;
    this.readback = { power, at: now };
  }

  /** The battery was handed back (self-consumption): its power is no longer the setpoint's. */
  handedBack(): void {
    this.pending = undefined;
    this.acknowledged = undefined;
    this.stands = undefined;
    this.history = [];
    this.readback = undefined;
    this.delivered = undefined;
    this.base = 0;
    this.pulse = undefined;
    this.unsettled = [];
    this.lastLoad = undefined;
    this.loadBefore = undefined;
    this.suspect = undefined;
    this.heldBattery = undefined;
    this.identifier.interrupt();
  }

  /**
   * A grid reading (already checked, W). `battery` is the battery's power read together with it (same request), which
   * then replaces the models. Returns the decision; a 'set' must be followed by acknowledge() or failed().
   */
  meter(grid: number, now: number, battery?: number): Decision {
    const bracket = this.heldBracket(battery);
    this.lastReading = now;
    this.timedOut = false;
    const [low, high] = bracket ?? this.batteryNow(now, battery);
    const decision = this.decider(grid, (low + high) / 2);
    if (!this.on) return decision('hold', 'disabled');
    // A held meter's repeat is an old sample: taken with the battery's power now it would show a load that is none.
    const repeat = this.settings.heldMeter === true && grid === this.lastGrid;
    this.lastGrid = grid;
    if (repeat) return decision('hold', this.pending ? 'in flight' : 'settling');
    // A repeat is no reading of its own: a trim's second reading is the next new sample.
    this.readings++;
    if (this.screen(grid, now, [grid + low, grid + high])) return decision('hold', 'suspect');
    this.identify(grid, now);
    if (this.pending) return decision('hold', 'in flight');
    const want = this.wanted(grid, low, high, battery !== undefined || bracket !== undefined);
    if (this.pulse) {
      // A held pulse ends when the reading shows a new load; otherwise its follow-up is due by time, above the floor
      // this reading's load sets.
      if (!this.beyondBand(want, this.pulse.final)) {
        this.pulse.floor = want.floor;
        const next = this.followUp(now);
        return next ? { ...next, grid, battery: decision('hold', 'settling').battery } : decision('hold', 'settling');
      }
      // The move starts from what the pulse was heading to: from the pulse's own value, the edge nearest to it would
      // overshoot while a slow battery is still answering.
      const { final } = this.pulse;
      this.pulse = undefined;
      const moved = this.move(want, final, now, decision);
      if (moved.action === 'set' || this.acknowledged === final) return moved;
      this.pending = { value: final, decidedAt: now, steady: true };
      return decision('set', 'load', final);
    }
    return this.move(want, this.acknowledged, now, decision);
  }

  /**
   * A held meter's sample is new when its value changed: it was taken between the last reading and this one, so the
   * battery's power then lies between the 6000 read with each (the same requests as the meter), whatever the sample's
   * age. The models cannot say it: their delay is fixed, the age is anything up to a refresh (more after a pulse took
   * the slots). Undefined where either read is missing (then the models bridge the age).
   */
  private heldBracket(battery: number | undefined): [number, number] | undefined {
    if (!this.settings.heldMeter) return undefined;
    const read = battery ?? (this.readback && this.readback.at > this.lastReading ? this.readback.power : undefined);
    const before = this.heldBattery;
    this.heldBattery = read;
    if (read === undefined || before === undefined) return undefined;
    return [Math.min(before, read), Math.max(before, read)];
  }

  /** Builds this reading's decisions. */
  private decider(grid: number, battery: number) {
    return (action: DecisionAction, reason: DecisionReason, setpoint = this.acknowledged): Decision => ({
      action,
      setpoint,
      steady: this.steady,
      grid,
      battery: Math.round(battery),
      soc: this.soc,
      reason,
      deadBand: Math.round(this.deadBand),
      ...(this.delivered ? { limitedBy: 'battery' as const, delivered: this.delivered.power } : {}),
    });
  }

  /**
   * One bad reading moves nothing: a reading whose implied load (the interval the models allow) lies more than
   * SUSPECT_JUMP_W from the last one's is held back (true); the battery's own move, which the models follow, is no
   * jump. The next reading confirms it (it stays nearer the jump than the load before: both are taken, the step
   * followed one reading late) or drops it.
   */
  private screen(grid: number, now: number, load: [number, number]): boolean {
    const apart = (a: [number, number], b: [number, number]) => Math.max(0, a[0] - b[1], b[0] - a[1]);
    const suspect = this.suspect;
    this.suspect = undefined;
    if (suspect) {
      if (apart(load, suspect.load) < apart(load, this.lastLoad!)) this.identify(suspect.grid, suspect.at);
    } else if (this.lastLoad !== undefined && apart(load, this.lastLoad) > SUSPECT_JUMP_W) {
      this.suspect = { grid, at: now, load };
      return true;
    }
    this.loadBefore = this.lastLoad;
    this.lastLoad = load;
    return false;
  }

  /** The setpoints the estimated load asks for, [low, high], within the grid-charging floor. */
  private wanted(grid: number, low: number, high: number, read: boolean): Wanted {
    const { target, gridCharge } = this.settings;
    let wantLow = grid + low - target;
    let wantHigh = grid + high - target;
    let floored = false;
    let floor = -Infinity;
    if (!gridCharge) {
      // Charging only by what the house would export: never below min(0, load), edge by edge, so that a charge
      // grows only by what the upper estimate of the load allows.
      const floorLow = Math.min(0, grid + low);
      const floorHigh = Math.min(0, grid + high);
      floored = wantHigh < floorHigh;
      floor = floorHigh;
      wantLow = Math.max(wantLow, floorLow);
      wantHigh = Math.max(wantHigh, floorHigh);
    }
    this.lastFloor = floor;
    return { low: wantLow, high: wantHigh, floored, floor, read };
  }

  /**
   * The setpoints that hold at `current`: the band leans toward import, a move down (export) comes at half the band,
   * a move up (import) at the whole band. So a steady grid lies in [target - band/2, target + band]. Charging without
   * grid charging it leans toward export ([target - band, target + band/2]): an import then is the grid's energy
   * going into the battery. `width`: of the interval of wanted setpoints.
   */
  private band(current: number, width = 0): [number, number] {
    const band = this.deadBand;
    // A wide interval of wanted setpoints (a transient the models still disagree on) is its own margin: its nearest edge
    // is where every model still wants to go, so half the band is enough either way.
    if (width > band) return [current - band / 2, current + band / 2];
    if (current < 0 && !this.settings.gridCharge) return [current - band, current + band / 2];
    return [current - band / 2, current + band];
  }

  /** Whether the whole interval of wanted setpoints lies outside the dead band around `current`. */
  private beyondBand(want: { low: number; high: number }, current: number): boolean {
    const [below, above] = this.band(current, want.high - want.low);
    return want.low > above || want.high < below;
  }

  /** The decision on a reading with no pulse under way: a move (plain or with a pulse) when the load asks for it. */
  private move(want: Wanted, current: number | undefined, now: number, decision: ReturnType<Regulator['decider']>): Decision {
    let reason: DecisionReason = current === undefined ? 'start' : want.floored ? 'grid charge' : 'load';
    if (current !== undefined && !this.beyondBand(want, current)) return this.boost(current, now, want, decision);
    const wanted = current === undefined ? (want.low + want.high) / 2 : want.low > current ? want.low : want.high;

    const limited = this.limit(this.confirmedTrim(wanted, current, reason, now) ?? wanted);
    if (limited.reason) reason = limited.reason;
    const next = limited.value;
    const [below, above] = current === undefined ? [0, 0] : this.band(current, want.high - want.low);
    if (current !== undefined && next >= below && next <= above) return decision('hold', reason);
    if (this.trimAsked?.reading === this.readings) return decision('hold', 'dead band');
    this.followingUp = false;
    // One move, one pulse: while the battery still answers a move that had its pulse, a trim or more of the same way gets
    // none. A trim would get a pulse sized for all the way a slow battery still has to go (an overshoot); more of the
    // same way is also what a battery falling short of its setpoint looks like until a read-back shows it (a wind-up).
    const way = Math.sign(next - (current ?? next));
    const lastAck = this.history.at(-1)?.ackAt ?? -Infinity;
    const answering =
      this.boosted !== 0 && (way === this.boosted || Math.abs(next - current!) < this.pulseMinW()) && now < lastAck + this.showsMs();
    // A stop at a SOC limit needs no haste; a ramp is followed step by step.
    const plain =
      current === undefined || reason === 'soc' || this.delivered !== undefined || answering || this.continuesRamp(next - current, now);
    if (current !== undefined && this.checksBattery(next - current, want, now, answering && way === this.boosted))
      return decision('hold', 'battery check');
    const overdrive = plain ? undefined : this.overdrive(next, now, want.floor);
    if (!answering) this.boosted = overdrive === undefined ? 0 : way;
    if (overdrive !== undefined) {
      this.pending = { value: overdrive, decidedAt: now, steady: false };
      return decision('set', 'overdrive', overdrive);
    }
    this.pending = { value: next, decidedAt: now, steady: true };
    return decision('set', reason, next);
  }

  /**
   * Whether more of the same way while the battery still answers a large move (a pulse's, or a step of CHECKED_STEP_W
   * or more that continues no ramp) waits for a read of 6000, asked by the decision's reason ('battery check'): it is
   * what a battery that falls short looks like until a read shows it, and moved on it winds up. It waits until a read
   * shows the battery short (then it is steered from what it delivers) or arrived, or the slowest plant the readings
   * allowed at the first check would have shown the move. Not where this reading's battery power is known (read with
   * it, or a group's estimate from its units' reads), nor for a move too small to tell a shortfall by.
   */
  private checksBattery(move: number, want: Wanted, now: number, afterPulse: boolean): boolean {
    const last = this.history.at(-1);
    if (!last || this.delivered || this.settings.heldMeter || this.estimate || want.read || Math.abs(move) < SHORT_W) return false;
    const lastMove = last.value - this.valueBefore(1);
    // A step, not a ramp's: on a ramp more of the same way is the ramp.
    const step = Math.abs(lastMove) >= CHECKED_STEP_W && !this.continuesRamp(lastMove, last.startAt, 1);
    if (!afterPulse && !(Math.sign(lastMove) === Math.sign(move) && step)) return false;
    // The window is the one of the first check: a battery that stops short looks like a fast one to the identification.
    if (this.checkWindow?.move !== last.startAt) this.checkWindow = { move: last.startAt, until: last.ackAt + this.showsMs() };
    if (now >= this.checkWindow.until) return false;
    const read = this.readback;
    const arrived = read !== undefined && read.at > last.startAt && Math.abs(read.power - last.value) <= this.shortMarginW(last.value);
    return !arrived;
  }

  /**
   * A trim (a move of the load's setpoint under TRIM_BANDS dead bands) waits for the next reading to ask for it the same
   * way, and then goes to the mean of the two: on a noisy meter one reading at the band's edge would set the grid at the
   * other edge, and the next such reading would move it back (a reversal). Returns the mean once confirmed; undefined
   * otherwise (the trim then waits: `trimAsked` is this reading's).
   */
  private confirmedTrim(wanted: number, current: number | undefined, reason: DecisionReason, now: number): number | undefined {
    const asked = this.trimAsked;
    this.trimAsked = undefined;
    if (current === undefined || reason !== 'load' || this.delivered || Math.abs(wanted - current) >= TRIM_BANDS * this.deadBand)
      return undefined;
    // A trim that continues a ramp is its tail, no noise: the setpoint is still behind the load.
    if (this.continuesRamp(wanted - current, now)) return undefined;
    if (asked && asked.reading === this.readings - 1 && Math.sign(asked.wanted - current) === Math.sign(wanted - current))
      return (asked.wanted + wanted) / 2;
    this.trimAsked = { wanted, reading: this.readings };
    return undefined;
  }

  /** Inside the dead band: the readings may have shown the battery slower than the fastest plant of the start, then a pulse speeds it on. */
  private boost(current: number, now: number, want: Wanted, decision: ReturnType<Regulator['decider']>): Decision {
    const last = this.history.at(-1);
    const ramp = last !== undefined && this.continuesRamp(current - this.valueBefore(1), last.startAt, 1);
    const boost = this.boosted !== 0 || ramp || this.delivered ? undefined : this.overdrive(current, now, want.floor);
    if (boost !== undefined) {
      this.boosted = Math.sign(boost - current);
      this.followingUp = false;
      this.pending = { value: boost, decidedAt: now, steady: false };
      return decision('set', 'overdrive', boost);
    }
    return decision('hold', want.high - want.low > 2 * this.deadBand ? 'settling' : 'dead band');
  }

  /**
   * While an overdrive is under way: the next setpoint, to be sent at once (the caller asks right after each
   * acknowledgement, after a failure, and tick() asks as time passes); undefined when none is due.
   */
  followUp(now: number): Decision | undefined {
    const pulse = this.pulse;
    if (!pulse || this.pending || !this.on) return undefined;
    const last = this.history.at(-1);
    if (!last) {
      this.pulse = undefined;
      return undefined;
    }
    const slot = this.slotMs();
    const step = this.pulseStep(pulse.final, pulse.direction, Math.max(now, last.startAt + slot), slot);
    let { value, reason = 'overdrive' } = this.limit(this.bounded(step.value, pulse));
    let steady = false;
    // Held at a limit: nothing to send now; tick() looks again as time passes.
    if (value === this.acknowledged && !pulse.failed && !step.reached) return undefined;
    // Close enough, or some plant the readings allow is there already: the pulse ends on its value.
    if (pulse.failed || step.reached || (value - pulse.final) * pulse.direction <= this.deadBand) {
      ({ value, reason = 'load' } = this.limit(pulse.final));
      this.pulse = undefined;
      steady = true;
    } else pulse.bound = (value - pulse.final) * pulse.direction;
    this.pending = { value, decidedAt: now, steady };
    // Its gap from the setpoint before shows the queue's pace only when it was asked for as that one was acknowledged.
    this.followingUp = now - this.lastAckAt <= AT_ONCE_MS;
    const battery = Math.round(step.power);
    return {
      action: 'set',
      setpoint: value,
      steady: this.steady,
      grid: undefined,
      battery,
      soc: this.soc,
      reason,
      deadBand: Math.round(this.deadBand),
    };
  }

  /** A pulse's value within its bounds: at most `bound` W past its final value, and never below the grid-charging floor. */
  private bounded(value: number, pulse: Pulse): number {
    const within = (value - pulse.final) * pulse.direction > pulse.bound ? pulse.final + pulse.direction * pulse.bound : value;
    return Math.max(within, pulse.floor);
  }

  /**
   * As time passes: a pulse's follow-up when due, and every reading ought to come within the time-out; then the
   * configured action once, while the regulator steers (a meter that never spoke since the start or a hand-back leaves
   * the battery alone). With *keep*, a pulse in force gives way to the setpoint it was heading to.
   */
  tick(now: number): Decision | undefined {
    if (!this.on) return undefined;
    const { meterTimeoutMs, onTimeout } = this.settings;
    if (this.timedOut || now - this.lastReading <= meterTimeoutMs || !this.steering) return this.followUp(now);
    this.timedOut = true;
    if (onTimeout === 'keep') return this.exit(now, 'meter timeout');
    this.pulse = undefined;
    const action: DecisionAction = onTimeout === 'standby' ? 'standby' : 'self-consumption';
    return {
      action,
      setpoint: onTimeout === 'standby' ? 0 : undefined,
      steady: onTimeout === 'standby' ? 0 : undefined,
      grid: undefined,
      battery: undefined,
      soc: this.soc,
      reason: 'meter timeout',
    };
  }

  /**
   * A move to `next` of a battery that lags: a setpoint beyond it, so that the battery gets there by the time the
   * following setpoint can act (one slot later); undefined for a small move or where a pulse would gain little. The
   * pulse goes past `next` by at most the move itself (the battery's distance from `next`): at most twice the step.
   */
  private overdrive(next: number, now: number, floor: number): number | undefined {
    // Just after a unit left, the plant pulses each unit by its own lag (see unitLeft()).
    if (now < this.plantPulsesUntil) return undefined;
    const deadBand = this.deadBand;
    const [low, high] = this.batteryInterval(now);
    const direction = Math.sign(next - (low + high) / 2);
    const distance = Math.min(Math.abs(next - low), Math.abs(next - high));
    if (distance < this.pulseMinW()) return undefined;
    const step = this.pulseStep(next, direction, now, this.slotMs());
    const pulse = { final: next, direction, bound: distance, floor };
    const value = this.limit(this.bounded(step.value, pulse)).value;
    if (step.reached || (value - next) * direction <= deadBand) return undefined;
    // Each follow-up goes at most as far past the value as the setpoint before it: the pulse only shrinks (a zig-zag
    // of follow-ups, as the models' answers differ from slot to slot, would be reversals).
    pulse.bound = (value - next) * direction;
    this.pulse = pulse;
    return value;
  }

  /**
   * The setpoint to hold from `startAt` for `slotMs` so that the battery reaches `final` then, under every plant the
   * readings allow: each model's own answer, and of them the one that moves least beyond `final`. So no such plant
   * overshoots; the others get there later, as they would without the pulse. `reached`: under some plant the battery is
   * at `final` already when the setpoint would act. `power`: the battery then, under the plant that decided.
   */
  private pulseStep(final: number, direction: number, startAt: number, slotMs: number): { value: number; power: number; reached: boolean } {
    const last = this.history.at(-1);
    const answerMs = last ? last.ackAt - last.startAt : 0;
    let best: { value: number; power: number } | undefined;
    let reached = false;
    for (const model of this.identifier.consistent()) {
      const actsAt = startAt + model.delayMs + (model.from === 'ackAt' ? answerMs : 0);
      const power = response(model, this.history, this.base, actsAt);
      if ((final - power) * direction <= 0) reached = true;
      const value = power + (final - power) / (1 - Math.exp(-slotMs / model.lagMs));
      if (!best || (value - best.value) * direction < 0) best = { value, power };
    }
    return { ...(best ?? { value: final, power: final }), reached };
  }

  /** The setpoint before the last `back` steps of the history. */
  private valueBefore(back: number): number {
    return this.history.at(-1 - back)?.value ?? this.base;
  }

  /**
   * Whether a move by `move` W at `at` continues a ramp (a cloud passing over the PV): the moves just before it went the
   * same way, have not shown yet (their delay and two lags, under the slowest plant the readings allow) and add up to
   * at least half of it. The newest `skip` steps are left out. A pulse on each step of a ramp would make the setpoint
   * zig-zag behind it; a kettle is far larger than the trims before it.
   */
  private continuesRamp(move: number, at: number, skip = 0): boolean {
    const showsMs = this.showsMs();
    let showing = 0;
    for (let back = skip; back < this.history.length; back++) {
      const step = this.history.at(-1 - back)!;
      const moved = step.value - this.valueBefore(back + 1);
      if (Math.sign(moved) !== Math.sign(move) || at >= step.ackAt + showsMs) break;
      showing += Math.abs(moved);
    }
    return move !== 0 && RAMP_RATIO * showing >= Math.abs(move);
  }

  /** How long a move takes to show (ms): its delay and two lags, under the slowest plant the readings allow. */
  private showsMs(): number {
    return Math.max(...this.identifier.consistent().map((model) => model.delayMs + 2 * model.lagMs));
  }

  /** The smallest move (W) worth a pulse. */
  private pulseMinW(): number {
    return Math.max(MIN_PULSE_W, PULSE_DEAD_BANDS * this.deadBand);
  }

  /** The longest gap seen from one setpoint's request to the next one's when sent at once. */
  private slotMs(): number {
    return this.slots.length ? Math.max(...this.slots) : (this.settings.requestIntervalMs ?? 1000) + SLOT_MARGIN_MS;
  }

  /** Feeds the identification: readings wait until no setpoint of theirs is in flight. */
  private identify(grid: number, now: number): void {
    this.alignEstimate(grid, now);
    // A battery that does not follow would teach the models a wrong one.
    if (this.delivered) return;
    this.unsettled.push({ grid, at: now });
    if (this.pending) return;
    for (const reading of this.unsettled) this.identifier.observe(reading.grid, reading.at, this.history, this.base);
    this.unsettled = [];
  }

  /** Whether the plant's units changed (useEstimate()) less than the slowest of `models`' settling ago. */
  private membersChanged(now: number, models: readonly PlantModel[]): boolean {
    const estimate = this.estimate!;
    const members = estimate.members?.();
    if (members === undefined) return false;
    if (estimate.seen === undefined) estimate.seen = { members, at: -Infinity };
    else if (estimate.seen.members !== members) estimate.seen = { members, at: now };
    return now < estimate.seen.at + Math.max(...models.map(settleMs));
  }

  /** Power and SOC limits and the minimum power; the reason names the limit that bound. */
  private limit(wanted: number): { value: number; reason?: DecisionReason } {
    const s = this.settings;
    let value = Math.round(wanted);
    let reason: DecisionReason | undefined;
    const bound = (next: number, why: DecisionReason) => {
      if (next !== value) {
        value = next;
        reason = why;
      }
    };
    bound(Math.min(s.maxDischarge, Math.max(-s.maxCharge, value)), 'limit');
    const soc = this.soc;
    if (soc !== undefined && soc >= s.chargeSoc) bound(Math.max(0, value), 'soc');
    if (soc !== undefined && soc <= s.dischargeSoc) bound(Math.min(0, value), 'soc');
    if (Math.abs(value) < s.minPower) value = 0;
    return { value, reason };
  }

  /** The battery's power for a reading: read with it, or what it was seen to deliver, or the models' interval. */
  private batteryNow(now: number, measured?: number): [number, number] {
    if (typeof measured === 'number' && Number.isFinite(measured)) return [measured, measured];
    if (this.delivered && now - this.delivered.at > DELIVERED_KEPT_MS) this.delivered = undefined;
    const [low, high] = this.delivered ? this.modelInterval(now) : this.batteryInterval(now);
    // Short of the setpoint: the load lies between what is delivered and what the models expect, and the regulator
    // moves only where the whole interval says so (no wind-up; no jump down when the cap lifts).
    if (this.delivered) return [Math.min(low, this.delivered.power), Math.max(high, this.delivered.power)];
    return [low, high];
  }

  /** The battery's power as the meter shows it now: the range over every plant consistent with the readings. */
  private batteryInterval(now: number): [number, number] {
    const models = this.identifier.consistent();
    // A read-back taken after the slowest of them has settled is the battery's real power.
    const last = this.history.at(-1);
    const settledAt = last ? last.ackAt + Math.max(...models.map(settleMs)) : -Infinity;
    if (this.readback && this.readback.at >= settledAt && !this.pending) return [this.readback.power, this.readback.power];
    const known = this.estimate?.power(now - this.estimate.delayMs);
    if (known === undefined) return this.modelInterval(now);
    if (this.membersChanged(now, models)) return [known, known];
    const [low, high] = this.modelInterval(now, this.identifier.models);
    const point = Math.min(high, Math.max(low, known));
    return [point, point];
  }

  /** The range of the battery's power as the meter shows it at `at`, over every plant consistent with the readings. */
  private modelInterval(at: number, models = this.identifier.consistent()): [number, number] {
    let low = Infinity;
    let high = -Infinity;
    for (const model of models) {
      const power = response(model, this.history, this.base, at);
      low = Math.min(low, power);
      high = Math.max(high, power);
    }
    return [low, high];
  }
}
