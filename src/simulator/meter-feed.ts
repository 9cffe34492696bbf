/**
 * A grid meter outside the device, as a bench feeds it to a regulator by message: a reading every `everyS` or at
 * random gaps (a Tibber-Pulse style feed; seeded, so a run repeats), each delivered `lateS` after it was taken, with
 * seeded noise, and single bad readings at given times. It samples the true grid power as the device model steps.
 */
import { seededRandom } from './house';

export interface MeterFeedOptions {
  /** A reading every this many simulated seconds (default 1); ignored when `gapsS` is given. */
  everyS?: number;
  /** Random gaps between readings, [min, max] s, drawn from `seed`. */
  gapsS?: readonly [number, number];
  /** Each reading is delivered this many seconds after it was taken (default 0). */
  lateS?: number;
  seed?: number;
  /** The first reading is taken at this simulated second (default 0). */
  startS?: number;
  /** Each reading is off by up to ± this, W (default 0), drawn from `seed` apart from the gaps. */
  noiseW?: number;
  /** The first reading taken at or after `atS` is off by `offsetW` (a bad reading: one only). */
  bad?: readonly { atS: number; offsetW: number }[];
}

/** A reading as delivered; `battery` and `trueGrid` are the plant's truth when it was taken (for an oracle, not a regulator). */
export interface FeedReading {
  sampledS: number;
  deliveredS: number;
  grid: number;
  trueGrid: number;
  battery: number;
  bad: boolean;
}

export class MeterFeed {
  private readonly everyS: number;
  private readonly gapsS: readonly [number, number] | undefined;
  private readonly lateS: number;
  private readonly random: () => number;
  private readonly noiseW: number;
  private readonly noise: () => number;
  private readonly bad: { atS: number; offsetW: number }[];
  private nextS = 0;
  private readonly waiting: FeedReading[] = [];

  constructor(options: MeterFeedOptions) {
    this.everyS = options.everyS ?? 1;
    this.gapsS = options.gapsS;
    this.lateS = options.lateS ?? 0;
    this.random = seededRandom(options.seed ?? 1);
    this.noiseW = options.noiseW ?? 0;
    // A stream of its own: the same seed gives the same gaps with or without noise.
    this.noise = seededRandom((options.seed ?? 1) ^ 0x5bd1e995);
    this.bad = [...(options.bad ?? [])].sort((a, b) => a.atS - b.atS);
    this.nextS = options.startS ?? 0;
    const [low, high] = this.gapsS ?? [this.everyS, this.everyS];
    if (!(low > 0 && high >= low) || !(this.lateS >= 0) || !(this.nextS >= 0) || !(this.noiseW >= 0))
      throw new RangeError('meter feed: everyS > 0, gapsS [min, max] with 0 < min <= max, lateS >= 0, startS >= 0, noiseW >= 0');
  }

  /** The model stepped to `t` (s): takes a reading when one is due. */
  step(t: number, grid: number, battery: number): void {
    if (t + 1e-9 < this.nextS) return;
    let offset = 0;
    if (this.bad.length > 0 && this.bad[0]!.atS <= t + 1e-9) offset = this.bad.shift()!.offsetW;
    const noise = this.noiseW > 0 ? this.noiseW * (2 * this.noise() - 1) : 0;
    const reading = {
      sampledS: t,
      deliveredS: t + this.lateS,
      grid: Math.round(grid + offset + noise),
      trueGrid: grid,
      battery,
      bad: offset !== 0,
    };
    this.waiting.push(reading);
    const [low, high] = this.gapsS ?? [this.everyS, this.everyS];
    this.nextS += low + (high - low) * this.random();
  }

  /** The readings delivered by `t`, oldest first; each once. */
  take(t: number): FeedReading[] {
    let count = 0;
    while (count < this.waiting.length && this.waiting[count]!.deliveredS <= t + 1e-9) count++;
    return this.waiting.splice(0, count);
  }
}
