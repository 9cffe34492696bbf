/**
 * The batteries a zero feed-in regulator may face, as a family of models, and which of them the meter has shown to be
 * this one. No Node-RED here; time is an argument (ms).
 *
 * A model: the battery follows a setpoint after a delay (its dead time plus the meter's) and a first-order lag. The
 * delay counts from when the request left, or from its acknowledgement (devices that act when they answer). The
 * family spans the regulator's fastest and slowest plant on a grid of delays and lags.
 *
 * Identification: the house load the meter implies, L = g + b, is the same for every model except for the battery's
 * own response. Under the right model L is flat through a setpoint's transient; under a wrong one it shows a bump
 * (too fast a model: L dips then recovers; too slow: the other way). So each model's cost is the total variation of
 * its implied load over the readings; a real load step adds the same to every model and cancels out. Models within a
 * tolerance of the best are consistent with what was seen; until setpoints have moved enough (excitation), all are.
 */
/** A plant a regulator is built for: dead time and first-order lag of the battery, delay of the meter (s). */
export interface PlantBound {
  deadTimeS: number;
  lagS: number;
  meterDelayS: number;
}

/** One setpoint of the history: in force from when its request left (`startAt`), acknowledged at `ackAt`. */
export interface Step {
  value: number;
  startAt: number;
  ackAt: number;
}

export interface PlantModel {
  /** Delay from the reference moment to the meter showing the battery's response (ms). */
  delayMs: number;
  lagMs: number;
  /** The device carries a setpoint out when its request arrives (`startAt`) or when it answers (`ackAt`). */
  from: 'startAt' | 'ackAt';
}

const LAGS_S = [0.1, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3, 4, 5];
const DELAY_STEP_S = 0.5;

/** The grid of models between the fastest and the slowest plant (dead time and meter delay add up). */
export function plantFamily(fast: PlantBound, slow: PlantBound): PlantModel[] {
  const models: PlantModel[] = [];
  const lags = LAGS_S.filter((lag) => lag >= fast.lagS && lag <= slow.lagS);
  if (!lags.includes(fast.lagS)) lags.unshift(fast.lagS);
  if (!lags.includes(slow.lagS)) lags.push(slow.lagS);
  const minDelay = fast.deadTimeS + fast.meterDelayS;
  const maxDelay = slow.deadTimeS + slow.meterDelayS;
  for (const from of ['startAt', 'ackAt'] as const)
    for (let delay = minDelay; delay <= maxDelay + 1e-9; delay += DELAY_STEP_S)
      for (const lag of lags) models.push({ delayMs: Math.round(delay * 1000), lagMs: lag * 1000, from });
  return models;
}

/** The battery's power as the meter shows it at `now` under `model`, from `base` and the setpoint history. */
export function response(model: PlantModel, history: readonly Step[], base: number, now: number): number {
  const t = now - model.delayMs;
  let power = base;
  for (let i = 0; i < history.length; i++) {
    const start = history[i]![model.from];
    if (start >= t) break;
    const next = history[i + 1];
    const end = next ? Math.min(t, Math.max(start, next[model.from])) : t;
    const value = history[i]!.value;
    power = value + (power - value) * Math.exp(-(end - start) / model.lagMs);
  }
  return power;
}

/** Time for a model to show a step within 1 %: its delay and about five lags. */
export const settleMs = (model: PlantModel) => model.delayMs + 5 * model.lagMs;

/** Each reading weighs this much less per newer one: about the last 200 readings count. */
const FORGET = 0.995;
/** Setpoint moves (W, summed with the same forgetting) before the readings may rule models out. */
const MIN_EXCITATION_W = 400;
/** A move counts towards the tolerance once readings have shown it this long (ms): the tolerance grows with evidence. */
const SEEN_AFTER_MS = 3000;
/** A model is consistent while its cost is within this share of the excitation of the best one's... */
const TOLERANCE_SHARE = 0.12;
/** ...or within this much (W), for the meter's noise. */
const TOLERANCE_W = 60;

/** A change of the implied load beyond this (W) is a load step, not the meter's noise. */
const NOT_NOISE_W = 200;
/**
 * The noise is measured on the change of the change from reading to reading, which is √3 times the change for noise
 * that is independent from reading to reading: divided by it, the estimate is on the change's scale.
 */
const RAMP_FREE_SCALE = Math.sqrt(3);
/** The noise estimate is the median over this many readings: a load's step or a ramp's corner is one reading or two. */
const NOISE_READINGS = 20;
/** The median of the absolute change is this much smaller than its mean (normally distributed noise). */
const MEDIAN_TO_MEAN = 0.798 / 0.674;

export class PlantIdentifier {
  private readonly cost: Float64Array;
  /** How far (W) each model missed the read-backs of 6000, forgotten as the cost is. */
  private readonly missed: Float64Array;
  /** The models the meter's readings allow (all until setpoints have moved enough). */
  private byMeter: readonly PlantModel[];
  private implied: Float64Array | undefined;
  /** The implied loads of the reading before `implied`. */
  private before: Float64Array | undefined;
  private excitation = 0;
  private unseen: { delta: number; at: number }[] = [];
  private consistentModels: PlantModel[];
  private noise = 0;
  private readonly changes: number[] = [];

  constructor(readonly models: readonly PlantModel[]) {
    this.cost = new Float64Array(models.length);
    this.missed = new Float64Array(models.length);
    this.consistentModels = [...models];
    this.byMeter = models;
  }

  /** A setpoint moved by `delta` W at `at`: the readings that follow can tell the models apart. */
  moved(delta: number, at: number): void {
    if (delta !== 0) this.unseen.push({ delta: Math.abs(delta), at });
  }

  /** A gap in what is known of the battery (a hand-back): the next reading starts afresh. */
  interrupt(): void {
    this.implied = undefined;
    this.before = undefined;
  }

  /** A grid reading at `at`, once every setpoint that may show in it is in `history`. */
  observe(grid: number, at: number, history: readonly Step[], base: number): void {
    const implied = new Float64Array(this.models.length);
    for (let i = 0; i < this.models.length; i++) {
      implied[i] = grid + response(this.models[i]!, history, base, at);
      this.cost[i] = this.cost[i]! * FORGET + (this.implied ? Math.abs(implied[i]! - this.implied[i]!) : 0);
    }
    if (this.implied && this.before) {
      // A change of the change: a ramp (a cloud over the PV) changes the load steadily, that is no noise.
      const best = this.cost.indexOf(Math.min(...this.cost));
      const change = Math.abs(implied[best]! - 2 * this.implied[best]! + this.before[best]!) / RAMP_FREE_SCALE;
      if (change < NOT_NOISE_W) {
        this.changes.push(change);
        if (this.changes.length > NOISE_READINGS) this.changes.shift();
        const sorted = [...this.changes].sort((a, b) => a - b);
        this.noise = sorted[Math.floor(sorted.length / 2)]! * MEDIAN_TO_MEAN;
      }
    }
    this.before = this.implied;
    this.implied = implied;
    this.excitation *= FORGET;
    for (let i = 0; i < this.models.length; i++) this.missed[i] = this.missed[i]! * FORGET;
    while (this.unseen.length && this.unseen[0]!.at + SEEN_AFTER_MS <= at) this.excitation += this.unseen.shift()!.delta;
    if (this.excitation >= MIN_EXCITATION_W) {
      const best = Math.min(...this.cost);
      const tolerance = Math.max(TOLERANCE_W, TOLERANCE_SHARE * this.excitation);
      this.byMeter = this.models.filter((_, i) => this.cost[i]! <= best + tolerance);
    }
    this.consistentModels = this.ruled();
  }

  /**
   * A read of the battery's own power (6000), `power`, taken between `from` and `to` (the meter would show it up to
   * `meterLate` = [least, most] ms later; a model's delay holds the meter's part): a model under which the battery
   * cannot have got that far towards the setpoint by then, by more than `marginW`, misses by the difference. On a
   * ramp (a cloud, a heat pump starting) the meter favours plants too slow, whose implied load rises least; a read-back
   * is not confounded so. A battery behind a model proves nothing: a slow one and one that falls short look alike.
   */
  readBack(
    power: number,
    from: number,
    to: number,
    meterLate: [number, number],
    marginW: number,
    history: readonly Step[],
    base: number,
  ): void {
    const setpoint = history.at(-1)?.value ?? base;
    for (let i = 0; i < this.models.length; i++) {
      const model = this.models[i]!;
      const early = response(model, history, base, from + meterLate[0]);
      const late = response(model, history, base, to + Math.min(meterLate[1], model.delayMs));
      const [low, high] = [Math.min(early, late), Math.max(early, late)];
      const ahead = setpoint > high ? power - high : setpoint < low ? low - power : 0;
      this.missed[i] = this.missed[i]! + Math.max(0, ahead - marginW);
    }
    this.consistentModels = this.ruled();
  }

  /**
   * The models the meter allows that also come within the tolerance of the best by the read-backs; where none does,
   * the read-backs' alone.
   */
  private ruled(): PlantModel[] {
    const leastMissed = Math.min(...this.missed);
    const byReadBack = this.models.filter((_, i) => this.missed[i]! <= leastMissed + TOLERANCE_W);
    const both = byReadBack.filter((model) => this.byMeter.includes(model));
    return both.length > 0 ? both : byReadBack;
  }

  /**
   * The mean change (W) of the load the best model implies from one reading to the next, load steps and ramps left out
   * (measured on the change of the change).
   */
  get noiseW(): number {
    return this.noise;
  }

  /** The models consistent with the readings and the read-backs so far (all of them until setpoints have moved enough). */
  consistent(): readonly PlantModel[] {
    return this.consistentModels;
  }
}
