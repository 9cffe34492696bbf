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
 * from elsewhere, so it is estimated by two models of the battery fed with the setpoint history: the fastest plant
 * the regulator is built for (`fast`: short dead time, short lag, no meter delay) and the slowest (`slow`). Whatever
 * the real battery is between the two, its power as the meter shows it now lies between the two models' outputs, so
 * the load lies in [g + b_lo, g + b_hi]. The regulator moves only when that whole interval says so (beyond the dead
 * band), and then only to the interval's edge nearest the present setpoint. While the last move is still showing,
 * the interval is wide and the lag cannot be mistaken for a load change: no overshoot and no reversal caused by the
 * battery's own response, for any plant between the bounds (a Smith predictor whose model is a set of plants). Once
 * the models have settled the interval is a point: L = g + s, and one step lands on the load (as fast as the plant).
 * A load change during a transient still moves the setpoint when it is larger than the models' disagreement.
 *
 * Further rules: one setpoint in flight at a time (the next only after the device acknowledged the previous one,
 * which the shared queue paces); the state is the acknowledged setpoint after every limit, so nothing winds up at a
 * power or SOC limit; without grid charging the battery charges only by what the house would export (never below
 * min(0, L)); below the device's minimum power it stands by; a reading that is no number or beyond any house (10 MW)
 * is ignored and moves nothing; a meter silent for the time-out leads to standby, a hand-back to self-consumption or
 * nothing (keep), as configured.
 */
import { decimalNumber } from './numbers';
import type { NumberRule } from './inputs';

/** A plant the regulator is built for: dead time and first-order lag of the battery, delay of the meter (s). */
export interface PlantBound {
  deadTimeS: number;
  lagS: number;
  meterDelayS: number;
}

/** What happens when the meter falls silent, and when the regulator is stopped or turned off. */
export type OnTimeout = 'standby' | 'self-consumption' | 'keep';
export type OnStop = 'self-consumption' | 'standby' | 'keep';

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
  /** The fastest and the slowest plant the regulator must be right for. */
  fast: PlantBound;
  slow: PlantBound;
}

/**
 * The slowest plant is the range's end: dead time 2 s, lag 5 s, the meter 2 s late. The fastest is taken as instant
 * (the device may carry a setpoint out when it arrives, up to a second before its answer, and a meter reading may be
 * newer than the answer), which costs nothing on a step and keeps every faster battery inside the bounds.
 */
export const PLANT_BOUNDS: { fast: PlantBound; slow: PlantBound } = {
  fast: { deadTimeS: 0, lagS: 0.1, meterDelayS: 0 },
  slow: { deadTimeS: 2, lagS: 5, meterDelayS: 2 },
};

/** Grid readings beyond this (W, either way) are no house's: a broken meter or a wrong unit. */
export const MAX_PLAUSIBLE_GRID_W = 50000;

export const REGULATOR_DEFAULTS = {
  target: 0,
  deadBand: 20,
  chargeSoc: 100,
  dischargeSoc: 10,
  meterTimeoutS: 10,
  meterIntervalS: 1,
  onTimeout: 'standby' as OnTimeout,
  onStop: 'self-consumption' as OnStop,
  gridCharge: false,
} as const;

/** Bounds of the node's number settings (the power and SOC ones come from the control write's points). */
export const ZERO_FEED_IN_RULES = {
  target: { min: -10000, max: 10000, unit: 'W' },
  deadBand: { min: 0, max: 1000, unit: 'W' },
  meterInterval: { min: 1, max: 3600, unit: 'seconds' },
  meterTimeout: { min: 1, max: 3600, unit: 'seconds' },
} as const satisfies Record<string, NumberRule>;

export const METER_SOURCES = ['message', 'device'] as const;
export type MeterSource = (typeof METER_SOURCES)[number];
export const ON_TIMEOUT: readonly OnTimeout[] = ['standby', 'self-consumption', 'keep'];
export const ON_STOP: readonly OnStop[] = ['self-consumption', 'standby', 'keep'];

export type DecisionAction = 'set' | 'hold' | 'standby' | 'self-consumption';

/** Why a decision was taken, for the output message and the status. */
export type DecisionReason =
  'start' | 'load' | 'dead band' | 'settling' | 'in flight' | 'limit' | 'soc' | 'grid charge' | 'meter timeout' | 'disabled';

export interface Decision {
  action: DecisionAction;
  /** The setpoint to send ('set'), or the one in force (W, signed like 6000); undefined when not known. */
  setpoint: number | undefined;
  grid: number | undefined;
  /** Battery power as measured or estimated for this reading (the middle of the models' interval). */
  battery: number | undefined;
  soc: number | undefined;
  reason: DecisionReason;
}

/** A grid reading from a message payload: a number, numeric text or {meterPower}; undefined for anything else. */
export function gridReading(payload: unknown): number | undefined {
  const value =
    payload && typeof payload === 'object' && !Array.isArray(payload) ? (payload as { meterPower?: unknown }).meterPower : payload;
  const number = decimalNumber(value);
  return number !== undefined && Math.abs(number) <= MAX_PLAUSIBLE_GRID_W ? number : undefined;
}

/** One setpoint of the history: from `sentAt` the fast model follows it, from `ackAt` the slow one. */
interface Step {
  value: number;
  sentAt: number;
  ackAt: number;
}

/** Steps kept for the models: older ones have long settled into the base. */
const HISTORY = 16;

export class Regulator {
  /** The acknowledged setpoint; undefined when not known (at start, after a hand-back). */
  private acknowledged: number | undefined;
  /** A setpoint sent and not yet acknowledged. */
  private pending: { value: number; sentAt: number } | undefined;
  private history: Step[] = [];
  /** Battery power before the first step of the history. */
  private base = 0;
  private readback: { power: number; at: number } | undefined;
  private socValue: { value: number; at: number } | undefined;
  private lastReading = -Infinity;
  private timedOut = false;
  private on = true;

  private current: RegulatorSettings;

  constructor(settings: RegulatorSettings, now: number) {
    this.current = settings;
    this.lastReading = now;
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

  get inFlight(): boolean {
    return this.pending !== undefined;
  }

  get soc(): number | undefined {
    return this.socValue?.value;
  }

  /** Turns the loop on or off; off, readings are ignored (the caller hands back as configured). */
  enable(on: boolean, now: number): void {
    if (on && !this.on) {
      this.lastReading = now;
      this.timedOut = false;
    }
    this.on = on;
  }

  /** The SOC (%) read from the device or a message. */
  observeSoc(value: unknown, now: number): void {
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 100) this.socValue = { value, at: now };
  }

  /** Battery power (6000) read on its own: it replaces the models once they have settled. */
  observeBattery(power: unknown, now: number): void {
    if (typeof power !== 'number' || !Number.isFinite(power)) return;
    this.readback = { power, at: now };
    // Not steering (start, after a hand-back): the battery's power is all that is known.
    if (this.acknowledged === undefined && !this.pending) {
      this.base = power;
      this.history = [];
    }
  }

  /**
   * The device acknowledged `value` at `now`. For this regulator's own setpoint the fast model starts from when it was
   * decided; for another writer's, give `sentAt` (the earliest the device may have carried it out).
   */
  acknowledge(value: number, now: number, sentAt = this.pending?.value === value ? this.pending.sentAt : now): void {
    this.pending = undefined;
    this.acknowledged = value;
    this.history.push({ value, sentAt, ackAt: now });
    if (this.history.length > HISTORY) {
      const dropped = this.history.shift()!;
      this.base = dropped.value;
    }
  }

  /** The setpoint was not acknowledged (error, replaced): the one before stays in force as far as is known. */
  failed(): void {
    this.pending = undefined;
  }

  /** The battery was handed back (self-consumption): its power is no longer the setpoint's. */
  handedBack(): void {
    this.pending = undefined;
    this.acknowledged = undefined;
    this.history = [];
    this.readback = undefined;
    this.base = 0;
  }

  /**
   * A grid reading (already checked, W). `battery` is the battery's power read together with it (same request), which
   * then replaces the models. Returns the decision; a 'set' must be followed by acknowledge() or failed().
   */
  meter(grid: number, now: number, battery?: number): Decision {
    const { settings } = this;
    this.lastReading = now;
    this.timedOut = false;
    const measured = typeof battery === 'number' && Number.isFinite(battery);
    const [low, high] = measured ? [battery, battery] : this.batteryInterval(now);
    const estimate = (low + high) / 2;
    const decision = (action: DecisionAction, reason: DecisionReason, setpoint = this.acknowledged): Decision => ({
      action,
      setpoint,
      grid,
      battery: Math.round(estimate),
      soc: this.soc,
      reason,
    });
    if (!this.on) return decision('hold', 'disabled');
    if (this.pending) return decision('hold', 'in flight');

    const current = this.acknowledged;
    let wantLow = grid + low - settings.target;
    let wantHigh = grid + high - settings.target;
    let reason: DecisionReason = current === undefined ? 'start' : 'load';
    if (!settings.gridCharge) {
      // Charging only by what the house would export: never below min(0, load), edge by edge, so that a charge
      // grows only by what the upper estimate of the load allows.
      const floorLow = Math.min(0, grid + low);
      const floorHigh = Math.min(0, grid + high);
      if (wantHigh < floorHigh) reason = 'grid charge';
      wantLow = Math.max(wantLow, floorLow);
      wantHigh = Math.max(wantHigh, floorHigh);
    }
    let wanted: number;
    if (current === undefined) wanted = (wantLow + wantHigh) / 2;
    else if (wantLow > current + settings.deadBand) wanted = wantLow;
    else if (wantHigh < current - settings.deadBand) wanted = wantHigh;
    else return decision('hold', wantHigh - wantLow > 2 * settings.deadBand ? 'settling' : 'dead band');

    const limited = this.limit(wanted);
    if (limited.reason) reason = limited.reason;
    const next = limited.value;
    if (current !== undefined && (next === current || Math.abs(next - current) <= settings.deadBand)) return decision('hold', reason);
    this.pending = { value: next, sentAt: now };
    return decision('set', reason, next);
  }

  /**
   * Every reading ought to come within the time-out: returns the configured action once when it has not, while the
   * regulator steers (a meter that never spoke since the start or a hand-back leaves the battery alone).
   */
  tick(now: number): Decision | undefined {
    const { meterTimeoutMs, onTimeout } = this.settings;
    const steering = this.acknowledged !== undefined || this.pending !== undefined;
    if (!this.on || !steering || this.timedOut || now - this.lastReading <= meterTimeoutMs) return undefined;
    this.timedOut = true;
    if (onTimeout === 'keep') return undefined;
    const action: DecisionAction = onTimeout === 'standby' ? 'standby' : 'self-consumption';
    return {
      action,
      setpoint: onTimeout === 'standby' ? 0 : undefined,
      grid: undefined,
      battery: undefined,
      soc: this.soc,
      reason: 'meter timeout',
    };
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

  /** The battery's power as the meter shows it now, between the fast and the slow plant. */
  private batteryInterval(now: number): [number, number] {
    const { fast, slow } = this.settings;
    // A read-back taken after the slow plant has settled is the battery's real power.
    const last = this.history.at(-1);
    const settledAt = last ? last.ackAt + settleMs(slow) : -Infinity;
    if (this.readback && this.readback.at >= settledAt && !this.pending) return [this.readback.power, this.readback.power];
    const a = this.model(fast, now, 'sentAt');
    const b = this.model(slow, now, 'ackAt');
    return [Math.min(a, b), Math.max(a, b)];
  }

  /** First-order lag after a dead time, fed with the setpoint history, as the meter shows it at `now`. */
  private model(plant: PlantBound, now: number, from: 'sentAt' | 'ackAt'): number {
    const t = now - plant.meterDelayS * 1000;
    const lagMs = plant.lagS * 1000;
    let power = this.base;
    for (let i = 0; i < this.history.length; i++) {
      const start = this.history[i]![from] + plant.deadTimeS * 1000;
      if (start >= t) break;
      const next = this.history[i + 1];
      const end = next ? Math.min(t, next[from] + plant.deadTimeS * 1000) : t;
      const value = this.history[i]!.value;
      power = value + (power - value) * Math.exp(-(Math.max(end, start) - start) / lagMs);
    }
    return power;
  }
}

/** Time for a plant to show a step within 1 %: meter delay, dead time and about five lags. */
function settleMs(plant: PlantBound): number {
  return (plant.meterDelayS + plant.deadTimeS + 5 * plant.lagS) * 1000;
}
