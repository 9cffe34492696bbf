/**
 * The simulated house behind the device's meter: a base load with a little noise, appliances that cycle (a fridge),
 * timed events (a 2 kW kettle, a cloud over the PV). Everything is a function of simulated time and a seed, so a
 * scenario plays the same way at any step size and time scale. Without a scenario the house is the smooth one the
 * simulator always had.
 */

/** A timed change: extra load while it lasts, or a cloud that takes a share of the PV. */
export interface HouseEvent {
  /** Simulated second it starts. */
  atS: number;
  /** How long it lasts, s (default: to the end). */
  durationS?: number;
  /** Repeats with this period, s. */
  everyS?: number;
  /** Load added while it lasts, W. */
  loadW?: number;
  /** Share of the PV a cloud takes away while it lasts, 0..1. */
  cloud?: number;
  /** Seconds a cloud takes to come and to go (default 10); loads switch at once unless `loadRampS`. */
  rampS?: number;
  /** Seconds a load takes to come and to go (default 0: at once; a heat pump's compressor ramps). */
  loadRampS?: number;
  name?: string;
}

/** An appliance that switches on for `onS` and off for `offS`, over and over (a fridge's compressor). */
export interface ApplianceCycle {
  name?: string;
  powerW: number;
  onS: number;
  offS: number;
  /** Simulated second of its first switch-on (default 0). */
  startS?: number;
}

export interface HouseScenario {
  /** Seed of the load noise. */
  seed?: number;
  /** W (default 300). */
  baseLoadW?: number;
  /** The base load varies by up to ± this, a new value each second (default 0). */
  noiseW?: number;
  appliances?: readonly ApplianceCycle[];
  /** Clear-sky PV power, W (default 0); at noon when `pvDay` is given. */
  pvW?: number;
  /** A day's PV: a bell (sin²) from sunrise to sunset, simulated seconds, repeating every 24 h; none at night. */
  pvDay?: { sunriseS: number; sunsetS: number };
  events?: readonly HouseEvent[];
}

/** A small seeded generator (mulberry32): numbers in [0, 1), the same sequence for the same seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A house with a fridge, a kettle every 5 minutes for 90 s, and a cloud every 10 minutes: for the demo and `--house demo`. */
export const DEMO_HOUSE: HouseScenario = {
  seed: 1,
  baseLoadW: 280,
  noiseW: 15,
  appliances: [{ name: 'fridge', powerW: 110, onS: 50, offS: 70 }],
  pvW: 900,
  events: [
    { name: 'kettle', atS: 60, durationS: 90, everyS: 300, loadW: 2000 },
    { name: 'cloud', atS: 200, durationS: 120, everyS: 600, cloud: 0.8, rampS: 8 },
  ],
};

export const HOUSE_PRESETS: Readonly<Record<string, HouseScenario>> = { demo: DEMO_HOUSE };

/** How far into an event's current occurrence `t` is, or undefined when the event is not on. */
function into(event: HouseEvent, t: number): number | undefined {
  if (t < event.atS) return undefined;
  const since = event.everyS ? (t - event.atS) % event.everyS : t - event.atS;
  return event.durationS === undefined || since < event.durationS ? since : undefined;
}

/** How far an event's occurrence has come in, 0..1: it ramps in over `ramp` s and out over the last `ramp` s. */
function depth(event: HouseEvent, since: number, ramp: number): number {
  const left = event.durationS === undefined ? Infinity : event.durationS - since;
  return ramp > 0 ? Math.min(1, since / ramp, left / ramp) : 1;
}

const cloudRamp = (event: HouseEvent): number => event.rampS ?? 10;
const loadRamp = (event: HouseEvent): number => event.loadRampS ?? 0;

const DAY_S = 86400;

/** The share of the clear-sky PV the sun gives at `t`: 1 without a day's curve. */
function daylight(day: HouseScenario['pvDay'], t: number): number {
  if (!day) return 1;
  const since = (t % DAY_S) - day.sunriseS;
  const length = day.sunsetS - day.sunriseS;
  return since <= 0 || since >= length ? 0 : Math.sin((Math.PI * since) / length) ** 2;
}

export class House {
  constructor(private readonly scenario?: HouseScenario) {
    if (!scenario) return;
    for (const event of scenario.events ?? [])
      if (
        !(event.atS >= 0) ||
        (event.everyS !== undefined && !(event.everyS > 0)) ||
        (event.cloud !== undefined && !(event.cloud >= 0 && event.cloud <= 1)) ||
        (event.loadRampS !== undefined && !(event.loadRampS >= 0))
      )
        throw new RangeError(`house event ${event.name ?? event.atS}: atS >= 0, everyS > 0, cloud in 0..1 and loadRampS >= 0`);
    for (const appliance of scenario.appliances ?? [])
      if (!(appliance.onS > 0 && appliance.offS >= 0)) throw new RangeError(`appliance ${appliance.name ?? ''}: onS > 0 and offS >= 0`);
    const day = scenario.pvDay;
    if (day && !(day.sunriseS >= 0 && day.sunsetS > day.sunriseS && day.sunsetS <= DAY_S))
      throw new RangeError('pvDay: 0 <= sunriseS < sunsetS <= 86400');
  }

  /** House load at simulated second `t`, W. */
  load(t: number): number {
    const s = this.scenario;
    if (!s) return 420 + 90 * Math.sin((2 * Math.PI * t) / 900) + 30 * Math.sin((2 * Math.PI * t) / 137);
    let load = s.baseLoadW ?? 300;
    if (s.noiseW) load += s.noiseW * (2 * seededRandom(((s.seed ?? 0) * 0x9e3779b1) ^ Math.floor(t))() - 1);
    for (const a of s.appliances ?? []) {
      const start = a.startS ?? 0;
      if (t >= start && (t - start) % (a.onS + a.offS) < a.onS) load += a.powerW;
    }
    for (const event of s.events ?? []) {
      const since = event.loadW ? into(event, t) : undefined;
      if (since !== undefined) load += event.loadW! * depth(event, since, loadRamp(event));
    }
    return Math.max(0, load);
  }

  /** PV power at simulated second `t`, W. */
  pv(t: number): number {
    const s = this.scenario;
    if (!s) return Math.max(0, 260 + 120 * Math.sin((2 * Math.PI * t) / 3600));
    let share = 1;
    for (const event of s.events ?? []) {
      if (!event.cloud) continue;
      const since = into(event, t);
      if (since === undefined) continue;
      share *= 1 - event.cloud * depth(event, since, cloudRamp(event));
    }
    return Math.max(0, (s.pvW ?? 0) * share * daylight(s.pvDay, t));
  }

  /**
   * The moments in (0, untilS) where the load or the PV starts or stops changing: events' edges and ramps, appliances'
   * switches (the noise and a day's curve aside). Between two of them the house is constant.
   */
  changes(untilS: number): number[] {
    const times: number[] = [];
    for (const event of this.scenario?.events ?? []) {
      const ramps = [...(event.cloud ? [cloudRamp(event)] : []), ...(event.loadW ? [loadRamp(event)] : [])];
      for (let start = event.atS; start < untilS; start += event.everyS ?? Infinity)
        for (const ramp of ramps) {
          times.push(start, start + ramp);
          if (event.durationS !== undefined) times.push(start + event.durationS - ramp, start + event.durationS);
        }
    }
    for (const a of this.scenario?.appliances ?? [])
      for (let on = a.startS ?? 0; on < untilS; on += a.onS + a.offS) times.push(on, on + a.onS);
    return [...new Set(times)].filter((t) => t > 0 && t < untilS).sort((x, y) => x - y);
  }
}
