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
 * lies between the consistent models' outputs, so the load lies in [g + b_lo, g + b_hi]. At each reading each
 * consistent model gives the setpoint that lands its battery on its need by the time the next setpoint acts (a
 * deadbeat), and the least far of them is sent where all lie beyond the dead band (regulator-decide.ts): no plant the
 * readings allow overshoots. The need it heads to is what the regulator stands behind; a setpoint past it is a pulse,
 * brought back towards it by the next readings. While the last move is still showing, the models disagree and the
 * lag cannot be mistaken for a load change (a Smith predictor whose model is a set of plants). One move gets one pulse,
 * a ramp (a cloud over the PV, seen late by a slow meter) none; readings further apart than the device's slot get a
 * pulse of one slot followed up by time (tick()), ahead of waiting reads. A group's plant estimates its units' power
 * itself (a point, no plant of the family): it keeps the interval law, a move to the interval's edge nearest the
 * setpoint where the whole interval lies beyond the dead band, with pulses of one slot. The dead band is widened to
 * three times the meter's noise (to 100 W at most), so that noise does not move a setpoint that the narrowed models no
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
 * wind-up), and the identification skips it; charging, its setpoint goes no further than the house exports with the
 * battery at what it delivers (no charge from the grid when the cap lifts).
 *
 * Further rules: one setpoint in flight at a time (the next only after the device acknowledged the previous one,
 * which the shared queue paces); the state is the acknowledged setpoint after every limit, so nothing winds up at a
 * power or SOC limit; without grid charging the battery charges only by what the house would export (never below
 * min(0, L)); below the device's minimum power it stands by; a reading that is no number or beyond any house (10 MW)
 * is ignored and moves nothing; a meter silent for the time-out leads to standby, a hand-back to self-consumption or
 * nothing (keep), as configured.
 *
 * Rooms (each with its contract at its top): this file is the facade that keeps the public API and the order of calls
 * (docs/regulator.md, "Rooms and the order of calls"). What it knows: src/control/regulator-plant.ts (models,
 * read-backs, shortfall, SOC), regulator-estimate.ts (a plant's own estimate), regulator-meter.ts (the meter's timing
 * and suspect readings). What it wants: regulator-decide.ts and regulator-pulse.ts, pure decisions on a snapshot
 * within regulator-bounds.ts. What it sent: regulator-sent.ts.
 */
import { decimalNumber } from '../numbers';
import { settleMs, type PlantBound } from './plant-family';
import { deadBandInForce, limit, wanted, type Snapshot } from './regulator-bounds';
import { decideReading, readingDecision, silentMeter, type Memory } from './regulator-decide';
import { EstimateAlignment } from './regulator-estimate';
import { MeterReadings } from './regulator-meter';
import { PlantKnowledge } from './regulator-plant';
import { decideFollowUp, followUpDecision } from './regulator-pulse';
import { SentCommands } from './regulator-sent';
import type { Decision, DecisionAction, DecisionReason, RegulatorSettings } from './regulator-types';

export type { PlantBound };
export {
  ON_TIMEOUT,
  type Decision,
  type DecisionAction,
  type DecisionReason,
  type OnTimeout,
  type RegulatorSettings,
} from './regulator-types';
export { SUSPECT_JUMP_W } from './regulator-meter';

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

/** A grid reading from a message payload: a number, numeric text or {meterPower}; undefined for anything else. */
export function gridReading(payload: unknown): number | undefined {
  const value =
    payload && typeof payload === 'object' && !Array.isArray(payload) ? (payload as { meterPower?: unknown }).meterPower : payload;
  const number = decimalNumber(value);
  return number !== undefined && Math.abs(number) <= MAX_PLAUSIBLE_GRID_W ? number : undefined;
}

export class Regulator {
  private current: RegulatorSettings;
  private on = true;
  private readonly knowsPlant: PlantKnowledge;
  private readonly knowsMeter: MeterReadings;
  private readonly sent = new SentCommands();
  private memory: Memory = { boosted: 0 };

  constructor(settings: RegulatorSettings, now: number) {
    this.current = settings;
    this.knowsMeter = new MeterReadings(now);
    this.knowsPlant = new PlantKnowledge(() => this.current);
  }

  /**
   * A plant that knows its battery's power better than one model of the family (a group): its estimate counts instead
   * of the consistent models' range; `members` names its units now (src/control/regulator-estimate.ts says why).
   */
  useEstimate(power: (at: number) => number | undefined, members?: () => string): void {
    this.knowsPlant.estimate = new EstimateAlignment(power, members, this.settings);
  }

  /** The settings in force: those given, as adjust() changed them. */
  get settings(): RegulatorSettings {
    return this.current;
  }

  get enabled(): boolean {
    return this.on;
  }

  get setpoint(): number | undefined {
    return this.sent.acknowledged;
  }

  /** The setpoint the regulator stands behind: a pulse's final value, or the last steady one. */
  get steady(): number | undefined {
    return this.sent.steady;
  }

  /**
   * The grid-charging floor of the last reading's load (W, signed like 6000): without grid charging no setpoint below
   * it, a pulse's neither; -Infinity with grid charging or before a reading.
   */
  get floor(): number {
    return this.knowsMeter.floor;
  }

  /** Whether the meter fell silent for the time-out, and no reading came since. */
  get meterTimedOut(): boolean {
    return this.knowsMeter.timedOut;
  }

  /** Whether this regulator has sent a setpoint since its start or the last hand-back. */
  get steering(): boolean {
    return this.sent.steering;
  }

  get inFlight(): boolean {
    return this.sent.inFlight;
  }

  /** A setpoint in flight or an overdrive under way: the device's slots are this regulator's. */
  get moving(): boolean {
    return this.sent.moving;
  }

  /** A pulse of one slot is in force: its follow-ups come by time (a deadbeat's pulse has none). */
  get followsUp(): boolean {
    return this.sent.pulse !== undefined;
  }

  get soc(): number | undefined {
    return this.knowsPlant.soc;
  }

  /** What the battery delivers where it falls short of the setpoint (W, signed like 6000); undefined while it follows. */
  get shortfall(): number | undefined {
    return this.knowsPlant.shortfall;
  }

  /** The plants still consistent with what the meter showed: their range of delays and lags (s). */
  get plant(): { delayS: [number, number]; lagS: [number, number] } {
    return this.knowsPlant.range();
  }

  /** The dead band in force (see deadBandInForce() in src/control/regulator-bounds.ts). */
  get deadBand(): number {
    return deadBandInForce(this.settings.deadBand, this.knowsPlant.identifier.noiseW);
  }

  /**
   * Changes the settings in force, not those given to the constructor (checked by the caller), from the next reading on:
   * a new grid power to hold (W, positive: import); the discharge bound (W) a battery mode sets (src/control/modes.ts;
   * hold: 0); the charge bound (W) where the device's own limit is under Charge at most; the discharge floor (%) where
   * the device's own backup SOC raises it. The state stays the acknowledged setpoint within them: nothing winds up.
   */
  adjust(change: Partial<Pick<RegulatorSettings, 'target' | 'maxDischarge' | 'maxCharge' | 'dischargeSoc'>>): void {
    this.current = { ...this.current, ...change };
  }

  /**
   * The setpoint in force again, as one in flight (its command's SOC field moved with the SOC, or the device dropped
   * it); undefined while another is in flight, a pulse runs, or none is in force.
   */
  renew(now: number): number | undefined {
    return this.sent.renew(now);
  }

  /** Turns the loop on or off; off, readings are ignored (the caller hands back as configured, see exit()). */
  enable(on: boolean, now: number): void {
    if (on && !this.on) this.resume(now);
    this.on = on;
  }

  /** Steers again after a rest (off, or a battery mode that set the setpoint itself): readings are due from `now`, no pulse runs. */
  resume(now: number): void {
    this.knowsMeter.resume(now);
    this.sent.endPulse();
  }

  /**
   * An exit that keeps the battery as it is (disable, close or time-out with *keep*): where a pulse may be in force,
   * the setpoint it was heading to, to send; undefined when the battery already has a steady one.
   */
  exit(now: number, reason: DecisionReason = 'disabled'): Decision | undefined {
    const steady = this.sent.exitTo(now);
    if (steady === undefined) return undefined;
    return { action: 'set', setpoint: steady, steady, grid: undefined, battery: undefined, soc: this.soc, reason };
  }

  /** The SOC (%) read from the device or a message. */
  observeSoc(value: unknown, now: number): void {
    this.knowsPlant.observeSoc(value, now);
  }

  /** Battery power (6000, positive discharging) read on its own, asked at `askedAt` (see PlantKnowledge.observeBattery). */
  observeBattery(power: unknown, now: number, askedAt = now): void {
    if (typeof power !== 'number' || !Number.isFinite(power)) return;
    this.knowsPlant.observeBattery(power, now, askedAt, this.sent.acknowledged, this.sent.steering, this.sent.inFlight);
  }

  /** Whether a battery power given with a reading can be this battery's (see PlantKnowledge.plausibleBattery). */
  plausibleBattery(power: number, now: number): boolean {
    return !this.steering || this.knowsPlant.plausibleBattery(power, now);
  }

  /** The request of the setpoint in flight left at `now` (the device may carry it out from then on). */
  started(now: number): void {
    this.sent.started(now, this.knowsPlant.view().history.at(-1)?.startAt);
  }

  /**
   * The device acknowledged `value` at `now`. For this regulator's own setpoint the models start from when its request
   * left (or was decided); for another writer's, give `startAt` (the earliest the device may have carried it out).
   */
  acknowledge(value: number, now: number, startAt = this.sent.startOf(value, now)): void {
    this.sent.acknowledge(value, now);
    this.knowsPlant.moved(value, startAt, now);
  }

  /**
   * A unit left the plant (switched off: its requests fail) and the plant hands its share to the units left: the steady
   * total the last reading asks for with the plant's estimate as it is now (the load as src/control/regulator-meter.ts
   * takes it), or undefined where there is none to say. The regulator's pulse ends: its models of the sum cannot size one
   * for the units left (the plant gives each its own, by its lag), and with the old estimate it had counted the unit's
   * lost power as load once more (a unit switched off drove the one left 100 W past the load).
   */
  unitLeft(now: number): number | undefined {
    const estimate = this.knowsPlant.estimate;
    const grid = this.knowsMeter.lastGrid;
    if (!this.on || !estimate || grid === undefined || this.sent.acknowledged === undefined) return undefined;
    const load = this.knowsMeter.unitLeft(() => estimate.shown(this.knowsMeter.lastReading));
    if (load === undefined) return undefined;
    this.sent.endPulse();
    this.memory = { ...this.memory, boosted: 0, pulsedAt: undefined };
    estimate.unitLeft(now + Math.max(...this.knowsPlant.identifier.consistent().map(settleMs)));
    const want = wanted(grid, load - grid, load - grid, false, this.settings);
    this.knowsMeter.floor = want.floor;
    return limit(want.low, this.settings, this.soc).value;
  }

  /**
   * The setpoint was not acknowledged (error, replaced): the one before stays in force as far as is known. An overdrive
   * under way ends: after an error its final value is what follows (once); replaced by another writer's, nothing does.
   */
  failed(replaced = false): void {
    this.sent.failed(replaced);
  }

  /**
   * The device moved by itself (it stopped at its SOC): the battery is where `power` (6000, read at `now`) says, the
   * setpoint it holds stays, and the models start again from there.
   */
  restartFrom(power: number, now: number): void {
    this.sent.restart();
    this.knowsPlant.restartFrom(power, now);
    this.knowsMeter.forget();
  }

  /** The battery was handed back (self-consumption): its power is no longer the setpoint's. */
  handedBack(): void {
    this.sent.handedBack();
    this.knowsPlant.forget();
    this.knowsMeter.forget();
  }

  /**
   * A grid reading (already checked, W). `battery` is the battery's power read together with it (same request), which
   * then replaces the models. Returns the decision; a 'set' must be followed by acknowledge() or failed(). The order:
   * the reading is recorded in what the regulator knows, a snapshot taken, the decision made on it (regulator-decide.ts),
   * its record kept in what was sent, and the decision handed back to be sent.
   */
  meter(grid: number, now: number, battery?: number): Decision {
    const heldMeter = this.settings.heldMeter === true;
    const bracket = this.knowsMeter.heldBracket(heldMeter, battery, this.knowsPlant.readback);
    this.knowsMeter.taken(now);
    const [low, high] = bracket ?? this.knowsPlant.batteryNow(now, this.sent.inFlight, battery);
    const decision = (action: DecisionAction, reason: DecisionReason, setpoint = this.setpoint) =>
      readingDecision(action, reason, grid, (low + high) / 2, {
        setpoint,
        steady: this.steady,
        soc: this.soc,
        deadBand: this.deadBand,
        shortfall: this.shortfall,
      });
    if (!this.on) return decision('hold', 'disabled');
    if (this.knowsMeter.repeats(grid, heldMeter)) return decision('hold', this.sent.inFlight ? 'in flight' : 'settling');
    const screened = this.knowsMeter.screen(grid, now, [grid + low, grid + high]);
    if (screened.confirmed) this.knowsPlant.identify(screened.confirmed.grid, screened.confirmed.at, this.sent.inFlight);
    if (screened.held) return decision('hold', 'suspect');
    this.knowsPlant.identify(grid, now, this.sent.inFlight);
    if (this.sent.inFlight) return decision('hold', 'in flight');
    const want = wanted(grid, low, high, battery !== undefined || bracket !== undefined, this.settings);
    this.knowsMeter.floor = want.floor;
    const intent = decideReading({
      ...this.snapshot(now),
      grid,
      battery: [low, high],
      want,
      pulse: this.sent.pulse,
      shortfall: this.shortfall,
      readback: this.knowsPlant.readback,
      estimate: this.knowsPlant.estimate !== undefined,
      readings: this.knowsMeter.readings,
      memory: this.memory,
    });
    this.memory = intent.memory;
    if (intent.action === 'follow-up') {
      this.sent.pulseFloor(intent.floor!);
      const next = this.followUp(now);
      return next ? { ...next, grid, battery: Math.round((low + high) / 2) } : decision('hold', 'settling');
    }
    this.sent.record(intent, now);
    return decision(intent.action, intent.reason, intent.setpoint);
  }

  /** What every decision sees now (src/control/regulator-bounds.ts). */
  private snapshot(now: number): Snapshot {
    return {
      now,
      settings: this.settings,
      soc: this.soc,
      deadBand: this.deadBand,
      acknowledged: this.sent.acknowledged,
      steady: this.sent.steady,
      plant: this.knowsPlant.view(),
      batteryAt: (at) => this.knowsPlant.batteryInterval(at, this.sent.inFlight),
      slotMs: this.sent.slotMs(this.settings.requestIntervalMs),
      pulsesUntil: this.knowsPlant.estimate?.pulsesUntil ?? -Infinity,
    };
  }

  /**
   * While an overdrive is under way: the next setpoint, to be sent at once (the caller asks right after each
   * acknowledgement, after a failure, and tick() asks as time passes); undefined when none is due.
   */
  followUp(now: number): Decision | undefined {
    const pulse = this.sent.pulse;
    if (!pulse || this.sent.inFlight || !this.on) return undefined;
    const next = decideFollowUp(this.snapshot(now), pulse);
    if (next === 'no history') this.sent.endPulse();
    if (next === 'no history' || next === undefined) return undefined;
    this.sent.recordFollowUp(next, now);
    return followUpDecision(next, this.steady, this.soc, this.deadBand);
  }

  /**
   * As time passes: a pulse's follow-up when due, and every reading ought to come within the time-out; then the
   * configured action once, while the regulator steers (a meter that never spoke since the start or a hand-back leaves
   * the battery alone). With *keep*, a pulse in force gives way to the setpoint it was heading to.
   */
  tick(now: number): Decision | undefined {
    if (!this.on) return undefined;
    const { meterTimeoutMs, onTimeout } = this.settings;
    if (!this.steering || !this.knowsMeter.timeOut(now, meterTimeoutMs)) return this.followUp(now);
    if (onTimeout === 'keep') return this.exit(now, 'meter timeout');
    this.sent.endPulse();
    return silentMeter(onTimeout, this.soc);
  }
}
