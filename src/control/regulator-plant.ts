/**
 * What the regulator knows of its battery: the models consistent with the meter, the setpoint history they run on,
 * read-backs of battery power (6000), a battery that falls short, the SOC, and a plant's own estimate.
 *
 * Holds: the identifier (src/control/plant-family.ts), the acknowledged setpoints that changed (`history`, at most
 * HISTORY, older ones folded into `base`), the last read-back, what a battery short of every model delivers, the SOC,
 * readings waiting for the identification while a setpoint is in flight, and the estimate (regulator-estimate.ts).
 * Written by the regulator's facade only: `estimate` by useEstimate(), moved() on an acknowledgement, observeBattery()/observeSoc() on reads,
 * identify() with a reading, restartFrom()/forget() when the battery moved by itself or was handed back. Read by the
 * facade and, through view() and batteryInterval(), by the decisions (regulator-decide.ts, regulator-pulse.ts).
 * Invariants: `history` holds no repeat of its last value; `delivered` is set only while a setpoint is acknowledged;
 * readings of a battery that falls short never reach the identification.
 */
import { PlantIdentifier, plantFamily, response, settleMs, type PlantModel, type Step } from './plant-family';
import { EstimateAlignment } from './regulator-estimate';
import type { RegulatorSettings } from './regulator-types';

/** Steps kept for the models: older ones have long settled into the base (minutes at the pace of a pulse). */
const HISTORY = 64;
/** A read-back (6000) this far (W, or this share of the setpoint) short of every model: the battery does not follow. */
export const SHORT_W = 100;
const SHORT_SHARE = 0.1;
/** What the battery was seen to deliver counts this long (ms); the caller reads it again well before. */
const DELIVERED_KEPT_MS = 15000;
/** The device's own figure of 6000 may be this old (ms) when it is read. */
const READ_BACK_AGE_MS = 1000;
/** A move up to this many times the moves the same way still showing continues a ramp. */
const RAMP_RATIO = 2;

/** The plant as the decisions see it: plain data, read only. */
export interface PlantView {
  /** The models consistent with the readings so far. */
  models: readonly PlantModel[];
  /** Those consistent when the battery last started a move from rest (see PlantKnowledge.modelsAtRest). */
  atRest: readonly PlantModel[];
  history: readonly Step[];
  /** Battery power before the first step of the history. */
  base: number;
}

/** The range of the battery's power as the meter shows it at `at`, over `models` (the consistent ones by default). */
export function modelInterval(view: PlantView, at: number, models = view.models): [number, number] {
  let low = Infinity;
  let high = -Infinity;
  for (const model of models) {
    const power = response(model, view.history, view.base, at);
    low = Math.min(low, power);
    high = Math.max(high, power);
  }
  return [low, high];
}

/** The setpoint before the last `back` steps of the history. */
export function valueBefore(view: PlantView, back: number): number {
  return view.history.at(-1 - back)?.value ?? view.base;
}

/** How long a move takes to show (ms): its delay and two lags, under the slowest plant the readings allow. */
export function showsMs(view: PlantView): number {
  return Math.max(...view.models.map((model) => model.delayMs + 2 * model.lagMs));
}

/**
 * Whether a move by `move` W at `at` continues a ramp (a cloud passing over the PV): the moves just before it went the
 * same way, have not shown yet (their delay and two lags, under the slowest plant the readings allow) and add up to
 * at least half of it. The newest `skip` steps are left out. A pulse on each step of a ramp would make the setpoint
 * zig-zag behind it; a kettle is far larger than the trims before it.
 */
export function continuesRamp(view: PlantView, move: number, at: number, skip = 0): boolean {
  const shows = showsMs(view);
  let showing = 0;
  for (let back = skip; back < view.history.length; back++) {
    const step = view.history.at(-1 - back)!;
    const moved = step.value - valueBefore(view, back + 1);
    if (Math.sign(moved) !== Math.sign(move) || at >= step.ackAt + shows) break;
    showing += Math.abs(moved);
  }
  return move !== 0 && RAMP_RATIO * showing >= Math.abs(move);
}

/** How far (W) a read of 6000 may lie from a setpoint or a model and still follow it. */
export function shortMarginW(setpoint: number): number {
  return Math.max(SHORT_W, SHORT_SHARE * Math.abs(setpoint));
}

export class PlantKnowledge {
  readonly identifier: PlantIdentifier;
  private history: Step[] = [];
  private base = 0;
  private readbackSeen: { power: number; at: number } | undefined;
  /** The battery delivers only this (read back, short of every model): it is steered from there. */
  private delivered: { power: number; at: number; direction: number } | undefined;
  private socValue: { value: number; at: number } | undefined;
  /**
   * The models consistent when the battery last started a move from rest: what a shortfall is judged against too. A
   * battery that stops short teaches the identification a wrong plant (a capped one looked like one lagging 3-5 s,
   * and a read of its cap then short of none).
   */
  private modelsAtRest: readonly PlantModel[] | undefined;
  /** Readings taken while a setpoint was in flight: they count for the identification once it is settled. */
  private unsettled: { grid: number; at: number }[] = [];
  /** The plant's own estimate of the battery's power (see the facade's useEstimate()). */
  estimate: EstimateAlignment | undefined;

  constructor(private readonly settings: () => RegulatorSettings) {
    const { fast, slow } = settings();
    this.identifier = new PlantIdentifier(plantFamily(fast, slow));
  }

  /** The models, their history and base, for the decisions. */
  view(): PlantView {
    const models = this.identifier.consistent();
    return { models, atRest: this.modelsAtRest ?? models, history: this.history, base: this.base };
  }

  /** The plants still consistent with what the meter showed: their range of delays and lags (s). */
  range(): { delayS: [number, number]; lagS: [number, number] } {
    const models = this.identifier.consistent();
    const span = (values: number[]): [number, number] => [Math.min(...values) / 1000, Math.max(...values) / 1000];
    return { delayS: span(models.map((m) => m.delayMs)), lagS: span(models.map((m) => m.lagMs)) };
  }

  get soc(): number | undefined {
    return this.socValue?.value;
  }

  get readback(): { power: number; at: number } | undefined {
    return this.readbackSeen;
  }

  /** What the battery delivers where it falls short of the setpoint (W, signed like 6000); undefined while it follows. */
  get shortfall(): number | undefined {
    return this.delivered?.power;
  }

  /** The SOC (%) read from the device or a message. */
  observeSoc(value: unknown, now: number): void {
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 100) this.socValue = { value, at: now };
  }

  /**
   * A read-back of 6000 at `now` (asked at `askedAt`) while `setpoint` is acknowledged (`steering`: one is acknowledged
   * or in flight). Not steering (start, after a hand-back), the battery's power is all that is known. It replaces the
   * models once they have settled; short of what every model says the battery gives by now, it shows a battery that
   * does not follow (derating, a SOC stop, a smaller unit): the regulator then steers from what is delivered, in the
   * setpoint's way (during a transient what is delivered may still lie on the other side of zero), and the
   * identification leaves it out.
   */
  observeBattery(power: number, now: number, askedAt: number, setpoint: number | undefined, steering: boolean, inFlight: boolean): void {
    this.readbackSeen = { power, at: now };
    if (!steering) {
      this.base = power;
      this.history = [];
      return;
    }
    const short = this.fallsShort(power, askedAt, now, setpoint);
    if (short !== (this.delivered !== undefined)) this.identifier.interrupt();
    this.delivered = short ? { power, at: now, direction: Math.sign(setpoint!) } : undefined;
    // A battery that follows tells the plants apart; one in flight may already answer a setpoint they do not know yet.
    if (!short && !inFlight && setpoint !== undefined) {
      const { fast, slow } = this.settings();
      const meterLate: [number, number] = [fast.meterDelayS * 1000, slow.meterDelayS * 1000];
      this.identifier.readBack(power, askedAt - READ_BACK_AGE_MS, now, meterLate, shortMarginW(setpoint), this.history, this.base);
    }
  }

  /**
   * Whether `power` (asked for at `askedAt`, answered at `now`) is short of what every model says the battery gives
   * then, in the setpoint's way.
   */
  private fallsShort(power: number, askedAt: number, now: number, setpoint: number | undefined): boolean {
    if (setpoint === undefined || setpoint === 0) return false;
    // The plant's units changed: the history of the sum counts a unit that left, and says nothing of the units left (a
    // slower unit taking over looked short of it, and was held at a setpoint it was still answering). Until the family's
    // slowest plant has settled, the plant's estimate steers alone; a unit that falls short is the group's to leave out.
    if (this.estimate && this.estimate.membersChanged(now, this.identifier.models)) return false;
    // Short of every plant the readings allow, during a transient too (every plant the regulator is built for would
    // see it only once the slowest, 4 s and 5 s, had settled: a derated battery was found 12 s into a kettle's step,
    // after the setpoint had wound up). A battery a little off the identified ones is within the margin.
    const view = this.view();
    const both = view.models.filter((model) => view.atRest.includes(model));
    const models = both.length > 0 ? both : view.atRest;
    const direction = Math.sign(setpoint);
    // 6000 was taken between the ask and the answer; the models show it as the meter will, up to its delay later.
    const [low, high] = modelInterval(view, askedAt, models);
    const [lowLater, highLater] = modelInterval(view, now + this.settings().slow.meterDelayS * 1000, models);
    const least = Math.min(...[low, high, lowLater, highLater].map((p) => p * direction));
    return direction * power < least - shortMarginW(setpoint);
  }

  /**
   * Whether a battery power given with a reading (msg.payload.batteryPower: W, positive discharging like 6000) can be
   * this battery's while it is steered: between standstill and what the models allow, with a margin. A value of the
   * other sign (a meter that counts charging as positive) or far beyond the setpoint is not, and would make every step
   * twice too big.
   */
  plausibleBattery(power: number, now: number): boolean {
    const view = this.view();
    const [low, high] = modelInterval(view, now);
    const [lowLater, highLater] = modelInterval(view, now + this.settings().slow.meterDelayS * 1000);
    const margin = Math.max(SHORT_W, SHORT_SHARE * Math.max(Math.abs(low), Math.abs(high)));
    return power >= Math.min(0, low, lowLater) - margin && power <= Math.max(0, high, highLater) + margin;
  }

  /**
   * The device acknowledged `value` (asked from `startAt`) at `now`: a setpoint within what the battery delivered can
   * be followed, so the shortfall no longer holds; a new value is a step of the history the models run on.
   */
  moved(value: number, startAt: number, now: number): void {
    const short = this.delivered;
    if (short && value * short.direction <= short.power * short.direction) {
      this.delivered = undefined;
      // The models ran from a setpoint the battery never reached: they start again from what it delivered.
      this.history = [];
      this.base = short.power;
      this.identifier.interrupt();
    }
    const before = this.history.at(-1)?.value ?? this.base;
    // The same setpoint again (a repeat the device already has) changes nothing the models follow.
    if (this.history.length > 0 && value === before) return;
    const last = this.history.at(-1);
    if (!last || now >= last.ackAt + showsMs(this.view())) this.modelsAtRest = this.identifier.consistent();
    this.identifier.moved(value - before, now);
    this.history.push({ value, startAt, ackAt: now });
    if (this.history.length > HISTORY) {
      const dropped = this.history.shift()!;
      this.base = dropped.value;
    }
  }

  /** Feeds the identification: readings wait until no setpoint of theirs is in flight. */
  identify(grid: number, now: number, inFlight: boolean): void {
    this.estimate?.align(grid, now);
    // A battery that does not follow would teach the models a wrong one.
    if (this.delivered) return;
    this.unsettled.push({ grid, at: now });
    if (inFlight) return;
    for (const reading of this.unsettled) this.identifier.observe(reading.grid, reading.at, this.history, this.base);
    this.unsettled = [];
  }

  /** The battery's power for a reading: read with it, or what it was seen to deliver, or the models' interval. */
  batteryNow(now: number, inFlight: boolean, measured?: number): [number, number] {
    if (typeof measured === 'number' && Number.isFinite(measured)) return [measured, measured];
    if (this.delivered && now - this.delivered.at > DELIVERED_KEPT_MS) this.delivered = undefined;
    const [low, high] = this.delivered ? modelInterval(this.view(), now) : this.batteryInterval(now, inFlight);
    // Short of the setpoint: the load lies between what is delivered and what the models expect, and the regulator
    // moves only where the whole interval says so (no wind-up; no jump down when the cap lifts).
    if (this.delivered) return [Math.min(low, this.delivered.power), Math.max(high, this.delivered.power)];
    return [low, high];
  }

  /** The battery's power as the meter shows it now: the range over every plant consistent with the readings. */
  batteryInterval(now: number, inFlight: boolean): [number, number] {
    const models = this.identifier.consistent();
    // A read-back taken after the slowest of them has settled is the battery's real power.
    const last = this.history.at(-1);
    const settledAt = last ? last.ackAt + Math.max(...models.map(settleMs)) : -Infinity;
    if (this.readbackSeen && this.readbackSeen.at >= settledAt && !inFlight) return [this.readbackSeen.power, this.readbackSeen.power];
    const known = this.estimate?.shown(now);
    if (known === undefined) return modelInterval(this.view(), now);
    if (this.estimate!.membersChanged(now, models)) return [known, known];
    const [low, high] = modelInterval(this.view(), now, this.identifier.models);
    const point = Math.min(high, Math.max(low, known));
    return [point, point];
  }

  /** The device moved by itself (it stopped at its SOC): the models start again from `power`, read at `now`. */
  restartFrom(power: number, now: number): void {
    this.forget();
    this.base = power;
    this.readbackSeen = { power, at: now };
  }

  /** The battery was handed back (self-consumption): its power is no longer the setpoint's. */
  forget(): void {
    this.history = [];
    this.readbackSeen = undefined;
    this.delivered = undefined;
    this.modelsAtRest = undefined;
    this.base = 0;
    this.unsettled = [];
    this.identifier.interrupt();
  }
}
