/**
 * Houses and plants the regulator never saw (issue 36): from a seed, a house of the simulator (house.ts) with
 * appliances of their real shapes, PV under clouds and a meter's noise, and per named condition a battery and a meter
 * drawn from the field's ranges. No I/O; the same seed and length give the same house.
 */
import type { Derating } from './device';
import { House, seededRandom, type ApplianceCycle, type HouseEvent, type HouseScenario } from './house';
import type { MeterFeedOptions } from './meter-feed';

const range = (from: number, count: number): number[] => Array.from({ length: count }, (_, i) => from + i);

/**
 * The seeds, split once. Tuning, tests and thresholds may use TUNING_SEEDS only; HELD_OUT_SEEDS are for the bench that
 * judges (scripts/bench-unseen.js) and nothing else: no tuning, test or threshold may use the held-out seeds.
 */
export const TUNING_SEEDS: readonly number[] = range(1, 200);
export const HELD_OUT_SEEDS: readonly number[] = range(90001, 200);

export interface GeneratedHouse {
  seed: number;
  durationS: number;
  scenario: HouseScenario;
  /** Each reading of an outside meter is off by up to ± this, W. */
  meterNoiseW: number;
}

type Random = () => number;
/** A number in [low, high). */
const between = (random: Random, low: number, high: number): number => low + (high - low) * random();
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
/** `value` to a multiple of `step`, without binary fractions' tails. */
const round = (value: number, step = 1): number => Number((Math.round(value / step) * step).toFixed(2));

/** When an appliance's episode starts: mostly inside the window, sometimes already under way at its start. */
interface Window {
  durationS: number;
  /** A start inside the window, leaving the regulator time to answer. */
  start(): number;
}

type Appliance = (random: Random, window: Window) => HouseEvent[];

/** A load on for `onS` from `atS`; one already on at the window's start ends inside it. */
function episode(random: Random, window: Window, name: string, loadW: number, onS: number): HouseEvent {
  if (random() < 0.2) return { name, atS: 0, durationS: round(between(random, 0.2, 0.8) * window.durationS, 0.1), loadW };
  return { name, atS: window.start(), durationS: round(onS, 0.1), loadW };
}

/** A heating element under a thermostat: on and off, over and over, from its first switch-on. */
function thermostat(random: Random, window: Window, name: string, powerW: [number, number], onS: [number, number], offS: [number, number]) {
  const on = round(between(random, ...onS), 0.1);
  const off = round(between(random, ...offS), 0.1);
  return { name, atS: window.start(), durationS: on, everyS: on + off, loadW: round(between(random, ...powerW), 10) };
}

/** A washing machine or dishwasher: its motor or pump runs; its heater takes ~2 kW for 10-20 minutes. */
function heatingMachine(name: string, motorW: [number, number], motorOnS: [number, number]): Appliance {
  return (random, window) => {
    const motorOn = round(between(random, ...motorOnS), 0.1);
    const motor = { name: `${name} motor`, atS: 0, durationS: motorOn, everyS: motorOn + round(between(random, 2, 10), 0.1) };
    return [
      { ...motor, loadW: round(between(random, ...motorW), 10) },
      episode(random, window, `${name} heating`, round(between(random, 1800, 2200), 10), between(random, 600, 1200)),
    ];
  };
}

const APPLIANCES: Readonly<Record<string, Appliance>> = {
  kettle: (random, window) => [episode(random, window, 'kettle', round(between(random, 2000, 3000), 10), between(random, 120, 240))],
  oven: (random, window) => [thermostat(random, window, 'oven', [1000, 3000], [20, 60], [20, 90])],
  hob: (random, window) => [thermostat(random, window, 'hob', [1000, 2000], [5, 20], [5, 25])],
  'washing machine': heatingMachine('washing machine', [100, 300], [8, 20]),
  dishwasher: heatingMachine('dishwasher', [40, 120], [60, 600]),
  'heat pump': (random, window) => [
    {
      ...episode(random, window, 'heat pump', round(between(random, 500, 2000), 10), between(random, 180, 900)),
      loadRampS: round(between(random, 5, 40), 0.1),
    },
  ],
};

/** Kettles are the commonest step; the others come as often as each other. */
const KINDS = ['kettle', ...Object.keys(APPLIANCES)];

/** Clouds over the PV: random depth, length and edge (seconds to come and to go). */
function clouds(random: Random, window: Window): HouseEvent[] {
  return Array.from({ length: Math.floor(between(random, 0, 4)) }, () => {
    const durationS = round(between(random, 5, 60), 0.1);
    const rampS = round(between(random, 0.5, Math.min(15, durationS / 2)), 0.1);
    return { name: 'cloud', atS: window.start(), durationS, cloud: round(between(random, 0.2, 0.95), 0.01), rampS };
  });
}

/** The largest import or export of a house over its window (noise aside), W: what a battery would have to cover. */
function peakNetW(scenario: HouseScenario, durationS: number): number {
  const house = new House({ ...scenario, noiseW: 0 });
  let peak = 0;
  for (let t = 0; t <= durationS; t += 0.5) peak = Math.max(peak, Math.abs(house.load(t) - house.pv(t)));
  return peak;
}

/**
 * A house for a window of `durationS` seconds from `seed`: base load with noise, a fridge, PV under clouds, and 2-4
 * appliances, each redrawn (up to 4 times, else left out) where it would take the house beyond `reachW` either way:
 * a battery's reach, so that a bench judges regulation, not a saturated battery.
 */
export function generateHouse(seed: number, durationS: number, reachW = Infinity): GeneratedHouse {
  if (!(Number.isInteger(seed) && durationS >= 10 && reachW > 0))
    throw new RangeError('generateHouse: an integer seed, durationS >= 10, reachW > 0');
  const random = seededRandom(seed);
  const window: Window = { durationS, start: () => round(between(random, 0.05, 0.85) * durationS, 0.1) };
  const onS = round(between(random, 600, 1200));
  const fridge: ApplianceCycle = {
    name: 'fridge',
    powerW: round(between(random, 70, 150), 5),
    onS,
    offS: round(between(random, 900, 2400)),
    startS: round(between(random, 0, durationS * 2), 0.1),
  };
  const baseLoadW = round(between(random, 150, 450), 5);
  const noiseW = round(between(random, 5, 25));
  // A quarter of the houses have no sun: the evening, or no PV.
  const pvW = random() < 0.25 ? 0 : round(between(random, 300, 2400), 10);
  const scenario: HouseScenario = { seed, baseLoadW, noiseW, appliances: [fridge], pvW, events: pvW > 0 ? clouds(random, window) : [] };
  const count = 2 + Math.floor(random() * 3);
  for (let i = 0; i < count; i++)
    for (let tries = 0; tries < 4; tries++) {
      const events = [...scenario.events!, ...APPLIANCES[pick(random, KINDS)]!(random, window)];
      if (peakNetW({ ...scenario, events }, durationS) > reachW) continue;
      scenario.events = events;
      break;
    }
  return { seed, durationS, scenario, meterNoiseW: round(between(random, 0, 15)) };
}

/** A battery and a meter, as a DeviceSimulator and the zero feed-in node take them. */
export interface SampledPlant {
  deadTimeS: number;
  lagS: number;
  derating?: Derating[];
  /** The outside meter, delivered by message; undefined: the device's own meter, refreshing every `meterRefreshS`. */
  feed?: MeterFeedOptions;
  meterRefreshS?: number;
  /** The node's meter interval and time-out, s. */
  meterIntervalS: number;
  meterTimeoutS: number;
}

export interface Condition {
  label: string;
  plant(random: Random, house: GeneratedHouse): SampledPlant;
}

const REFERENCE = { deadTimeS: 1, lagS: 1.5 };
/** A meter every second, its first reading at a random phase, with the house's own meter noise. */
const everySecond = (random: Random, house: GeneratedHouse): MeterFeedOptions => ({
  everyS: 1,
  startS: round(between(random, 0.1, 1), 0.1),
  seed: house.seed,
  noiseW: house.meterNoiseW,
});
const referencePlant = (random: Random, house: GeneratedHouse): SampledPlant => ({
  ...REFERENCE,
  feed: everySecond(random, house),
  meterIntervalS: 1,
  meterTimeoutS: 10,
});

/** The reference plant with a battery's dead time and lag drawn from these ranges, s. */
const battery =
  (deadTimeS: [number, number], lagS: [number, number]): Condition['plant'] =>
  (random, house) => ({
    ...referencePlant(random, house),
    deadTimeS: round(between(random, ...deadTimeS), 0.1),
    lagS: round(between(random, ...lagS), 0.1),
  });

/** The conditions, each a group of plants and meters drawn from the case's seed. */
export const CONDITIONS: Readonly<Record<string, Condition>> = {
  reference: { label: 'battery dead time 1 s, lag 1.5 s; meter every 1 s', plant: referencePlant },
  quick: { label: 'battery dead time 0.5-0.8 s, lag 0.5-1 s', plant: battery([0.5, 0.8], [0.5, 1]) },
  slow: { label: 'battery dead time 1.5-2 s, lag 3-5 s', plant: battery([1.5, 2], [3, 5]) },
  'any-battery': {
    label: 'battery dead time 0.5-2 s, lag 0.5-5 s; meter every 1-3 s, 0-2 s late',
    plant: (random, house) => {
      const everyS = round(between(random, 1, 3), 0.5);
      return {
        deadTimeS: round(between(random, 0.5, 2), 0.1),
        lagS: round(between(random, 0.5, 5), 0.1),
        feed: { ...everySecond(random, house), everyS, lateS: round(between(random, 0, 2), 0.1) },
        meterIntervalS: Math.ceil(everyS),
        meterTimeoutS: 10,
      };
    },
  },
  'meter-3s-late': {
    label: 'meter every 3 s, 0.5-2 s late',
    plant: (random, house) => ({
      ...referencePlant(random, house),
      feed: { ...everySecond(random, house), everyS: 3, lateS: round(between(random, 0.5, 2), 0.1) },
      meterIntervalS: 3,
    }),
  },
  gaps: {
    label: 'meter at random gaps of 1 to 4-8 s',
    plant: (random, house) => ({
      ...referencePlant(random, house),
      feed: { ...everySecond(random, house), gapsS: [1, round(between(random, 4, 8), 0.5)] },
      meterIntervalS: 8,
      meterTimeoutS: 20,
    }),
  },
  'bad-readings': {
    label: 'two bad readings of ±3-5 kW at random times',
    plant: (random, house) => {
      const plant = referencePlant(random, house);
      const sign = random() < 0.5 ? 1 : -1;
      const bad = [sign, -sign].map((s) => ({
        atS: round(between(random, 5, house.durationS - 5), 0.1),
        offsetW: s * round(between(random, 3000, 5000), 10),
      }));
      return { ...plant, feed: { ...plant.feed, bad } };
    },
  },
  derated: {
    label: 'battery delivers at most 300-900 W for 20-60 % of the run',
    plant: (random, house) => {
      const durationS = round(between(random, 0.2, 0.6) * house.durationS, 0.1);
      const atS = round(between(random, 0, house.durationS - durationS), 0.1);
      return { ...referencePlant(random, house), derating: [{ atS, durationS, maxW: round(between(random, 300, 900), 10) }] };
    },
  },
  'device-meter': {
    label: "the device's own meter, refreshing every 3 s",
    plant: () => ({ ...REFERENCE, meterRefreshS: 3, meterIntervalS: 1, meterTimeoutS: 10 }),
  },
  'noise-50W': {
    label: '±50 W meter noise',
    plant: (random, house) => {
      const plant = referencePlant(random, house);
      return { ...plant, feed: { ...plant.feed, noiseW: 50 } };
    },
  },
};

export interface UnseenCase {
  condition: string;
  house: GeneratedHouse;
  plant: SampledPlant;
}

/** The house of `seed` (within `reachW`) under `condition`: the plant's draws come from the seed and the condition's name. */
export function generateCase(condition: string, seed: number, durationS: number, reachW = Infinity): UnseenCase {
  const chosen = CONDITIONS[condition];
  if (!chosen) throw new RangeError(`condition: one of ${Object.keys(CONDITIONS).join(', ')}`);
  const house = generateHouse(seed, durationS, reachW);
  let salt = 0;
  for (const char of condition) salt = Math.imul(salt, 31) + char.charCodeAt(0);
  return { condition, house, plant: chosen.plant(seededRandom(seed ^ salt), house) };
}
