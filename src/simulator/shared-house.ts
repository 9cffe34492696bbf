/**
 * One house behind one grid meter, with one or more batteries in it: the simulated clock, the house's load and PV, the
 * meter (its delay, refresh and an outside feed) and the energy the units move. Each simulated device joins one; a
 * device made without one gets its own, so a single battery behaves as it always did. Every unit steps on the same
 * clock, so grid = load − PV − Σ battery + Σ self-use holds at every step, whichever device's request moved the time.
 */
import { performance } from 'node:perf_hooks';
import { House, type HouseScenario } from './house';
import { MeterFeed, type FeedReading, type MeterFeedOptions } from './meter-feed';

/** A battery in the house, as the house steps it. */
export interface HouseUnit {
  /**
   * Moves the battery to simulated second `t` over `dt`; `netLoadW` is what the meter would show without this unit's
   * own power (its self-consumption mode covers that). Returns its power, W, positive discharging.
   */
  stepBattery(t: number, dt: number, netLoadW: number): number;
  /** W it draws from the house while its converter runs. */
  readonly selfUseW: number;
  /** True while its converter runs: commanded to charge or discharge, or still moving power. */
  readonly active: boolean;
  readonly batteryPowerW: number;
  /** Counts the step's energy, once the house knows the grid. */
  account(dt: number): void;
}

export interface SharedHouseOptions {
  /** The house behind the meter; default: a smooth load of 330-540 W and PV of 140-380 W. */
  house?: HouseScenario;
  /** Simulated seconds per real second (default 1); 0 freezes the clock (then `run` moves it). */
  timeScale?: number;
  /** The meter's reading is the true grid power this many simulated seconds ago. */
  meterDelayS?: number;
  /** The meter takes a new reading only every this many simulated seconds (0: always new). */
  meterRefreshS?: number;
  /** A grid meter outside the devices, for a bench to deliver by message. */
  meterFeed?: MeterFeedOptions;
  /**
   * W each active unit draws from the house, unless the unit sets its own. Default 30 (field notes: about 30 W per
   * active unit); a device's own house (one battery, made without a shared one) uses 0, so its figures stay as they were.
   */
  selfUseW?: number;
}

/** The longest step of the model, simulated s: short against the battery's lag and dead time. */
const MAX_STEP_S = 0.05;

export class SharedHouse {
  private readonly house: House;
  private readonly meterDelayS: number;
  private readonly meterRefreshS: number;
  private readonly feed: MeterFeed | undefined;
  readonly selfUseW: number;
  private readonly units: HouseUnit[] = [];
  /** True grid power by simulated time, kept for the meter's delay. */
  private readonly grids: { t: number; v: number }[] = [];
  private nextMeterRefreshS = 0;
  private started = false;
  private lastAdvance = performance.now();
  timeScale: number;
  simSeconds = 0;
  loadW = 0;
  pvW = 0;
  /** True grid power now, W, positive = import. */
  gridW = 0;
  /** The meter's reading (the true grid power meterDelayS ago). */
  meterW = 0;
  /** The simulated second the meter's reading (meterW) shows. */
  meterSampledS = 0;
  /** Wh that went from one unit into another: per step, min(Σ charging, Σ discharging). */
  movedBetweenUnitsWh = 0;
  /** Wh the active units drew for themselves. */
  selfUseWh = 0;
  /** Wh charged and discharged by all units together. */
  chargedWh = 0;
  dischargedWh = 0;

  constructor(options: SharedHouseOptions = {}) {
    this.house = new House(options.house);
    this.timeScale = options.timeScale ?? 1;
    this.meterDelayS = options.meterDelayS ?? 0;
    this.meterRefreshS = options.meterRefreshS ?? 0;
    this.selfUseW = options.selfUseW ?? 30;
    for (const [name, value] of [
      ['timeScale', this.timeScale],
      ['meterDelayS', this.meterDelayS],
      ['meterRefreshS', this.meterRefreshS],
      ['selfUseW', this.selfUseW],
    ] as const)
      if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a number >= 0`);
    this.feed = options.meterFeed ? new MeterFeed(options.meterFeed) : undefined;
  }

  /** A battery joins the house; the reported flows include it at once. */
  join(unit: HouseUnit): void {
    this.units.push(unit);
  }

  /** The clock starts when the first device starts (later starts keep it running). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.lastAdvance = performance.now();
  }

  /** Moves the model forward by the real time since the last call, times timeScale. */
  advance(): void {
    const now = performance.now();
    const seconds = ((now - this.lastAdvance) / 1000) * this.timeScale;
    this.lastAdvance = now;
    this.run(seconds);
  }

  /** Moves the model forward by `seconds` of simulated time, in steps of at most MAX_STEP_S (at most ~1000 per call). */
  run(seconds: number): void {
    let remaining = seconds;
    const stepSeconds = Math.max(MAX_STEP_S, remaining / 1000);
    while (remaining > 1e-9) {
      const dt = Math.min(stepSeconds, remaining);
      this.step(dt);
      remaining -= dt;
    }
  }

  /** The readings of the outside meter delivered by now (none without a feed). */
  takeFeed(): FeedReading[] {
    return this.feed ? this.feed.take(this.simSeconds) : [];
  }

  /** One step of every unit on the common clock; `dt` 0 lets a new setting show in the flows at once. */
  step(dt: number): void {
    this.simSeconds += dt;
    const t = this.simSeconds;
    this.loadW = this.house.load(t);
    this.pvW = this.house.pv(t);
    // Each unit sees the others as they were at the step before: what its own meter would show. Plain loops: this
    // runs twenty times a simulated second, for days in the benches.
    let allBefore = 0;
    let selfUseBefore = 0;
    for (const u of this.units) {
      allBefore += u.batteryPowerW;
      if (u.active) selfUseBefore += u.selfUseW;
    }
    let charging = 0;
    let discharging = 0;
    let selfUse = 0;
    for (const u of this.units) {
      const power = u.stepBattery(t, dt, this.loadW - this.pvW + selfUseBefore - (allBefore - u.batteryPowerW));
      if (power < 0) charging -= power;
      else discharging += power;
      if (u.active) selfUse += u.selfUseW;
    }
    this.movedBetweenUnitsWh += (Math.min(charging, discharging) * dt) / 3600;
    this.selfUseWh += (selfUse * dt) / 3600;
    this.chargedWh += (charging * dt) / 3600;
    this.dischargedWh += (discharging * dt) / 3600;
    const battery = discharging - charging;
    this.gridW = this.loadW - this.pvW - battery + selfUse;
    const meter = this.delayedGrid(t);
    // A meter that refreshes every meterRefreshS holds its reading in between (the BK1600 Ultra's own: 3 s).
    if (t + 1e-9 >= this.nextMeterRefreshS) {
      this.meterW = meter;
      this.meterSampledS = Math.max(0, t - this.meterDelayS);
      if (this.meterRefreshS > 0) this.nextMeterRefreshS = (Math.floor((t + 1e-9) / this.meterRefreshS) + 1) * this.meterRefreshS;
    }
    this.feed?.step(t, this.gridW, battery);
    for (const unit of this.units) unit.account(dt);
  }

  /** Records the grid now and gives the one meterDelayS ago (the oldest while nothing is that old). */
  private delayedGrid(t: number): number {
    if (this.meterDelayS === 0) return this.gridW;
    const entries = this.grids;
    if (entries.length > 0 && entries[entries.length - 1]!.t === t) entries[entries.length - 1]!.v = this.gridW;
    else entries.push({ t, v: this.gridW });
    // Times are sums of steps: a nanosecond's tolerance.
    const then = t - this.meterDelayS + 1e-9;
    while (entries.length > 1 && entries[1]!.t <= then) entries.shift();
    return entries[0]!.v;
  }
}
