/**
 * What the regulator knows of its meter: when it last spoke, whether it timed out, its last value (a held meter
 * repeats it), the battery's power read with a held meter's sample, the loads the last readings implied and a
 * reading held back as suspect, how many readings came, and the grid-charging floor of the last reading's load.
 *
 * Written by the regulator's facade only: taken() with each reading, timeOut() on the clock, resume() after a rest,
 * forget() at a hand-back, unitLeft() when a unit left, floor when a reading's wanted setpoints are known. Read by the
 * facade and, as plain data, by the decisions. Invariants: `readings` counts new samples only (no held repeat, none
 * while off); a suspect reading is held at most until the next one.
 */

/** A reading whose implied load jumped by more than this (W) waits for the next one to confirm it. */
export const SUSPECT_JUMP_W = 2500;

/** The gap (W) between two intervals of load; 0 where they overlap. */
const apart = (a: [number, number], b: [number, number]) => Math.max(0, a[0] - b[1], b[0] - a[1]);

export class MeterReadings {
  private readingAt: number;
  private silent = false;
  private count = 0;
  /** The grid-charging floor of the last reading's load (see wanted() in regulator-decide.ts). */
  floor = -Infinity;
  /** The last grid reading's value (a held meter repeats it until it refreshes). */
  private grid: number | undefined;
  /** A held meter: battery power (6000) read with the last reading, where one was read since the reading before. */
  private heldBattery: number | undefined;
  /** The implied load of the last reading taken, and of the reading before it. */
  private lastLoad: [number, number] | undefined;
  private loadBefore: [number, number] | undefined;
  private suspect: { grid: number; at: number; load: [number, number] } | undefined;

  constructor(now: number) {
    this.readingAt = now;
  }

  /** When the last reading came (ms), or when readings are due from (start, resume). */
  get lastReading(): number {
    return this.readingAt;
  }

  /** Whether the meter fell silent for the time-out, and no reading came since. */
  get timedOut(): boolean {
    return this.silent;
  }

  /** New readings so far (see confirmedTrim in regulator-decide.ts). */
  get readings(): number {
    return this.count;
  }

  get lastGrid(): number | undefined {
    return this.grid;
  }

  /**
   * A unit left the plant (see the facade's unitLeft()), whose `estimate` now gives the battery's power shown in the last reading: the load
   * from now on, or undefined where there is none to say. That reading may show the unit's power gone or not yet: of
   * the two, the load that changed least from the reading before is taken (a unit switched off is no change of the
   * house's load). Shown, the need is the reading with the units left; not yet, it is the need as decided.
   */
  unitLeft(estimate: () => number | undefined): number | undefined {
    if (this.grid === undefined || !this.lastLoad) return undefined;
    const left = estimate();
    if (left === undefined) return undefined;
    const middle = (load: [number, number]) => (load[0] + load[1]) / 2;
    const before = this.loadBefore && middle(this.loadBefore);
    const [withUnit, without] = [middle(this.lastLoad), this.grid + left];
    const load = before === undefined || Math.abs(without - before) <= Math.abs(withUnit - before) ? without : withUnit;
    this.lastLoad = [load, load];
    return load;
  }

  /**
   * A held meter's sample is new when its value changed: it was taken between the last reading and this one, so the
   * battery's power then lies between the 6000 read with each (the same requests as the meter), whatever the sample's
   * age. The models cannot say it: their delay is fixed, the age is anything up to a refresh (more after a pulse took
   * the slots). Undefined where either read is missing (then the models bridge the age). `readback`: the last read of
   * 6000 on its own.
   */
  heldBracket(
    heldMeter: boolean,
    battery: number | undefined,
    readback: { power: number; at: number } | undefined,
  ): [number, number] | undefined {
    if (!heldMeter) return undefined;
    const read = battery ?? (readback && readback.at > this.readingAt ? readback.power : undefined);
    const before = this.heldBattery;
    this.heldBattery = read;
    if (read === undefined || before === undefined) return undefined;
    return [Math.min(before, read), Math.max(before, read)];
  }

  /** A reading came at `now`: the meter speaks. */
  taken(now: number): void {
    this.readingAt = now;
    this.silent = false;
  }

  /**
   * Whether `grid` repeats a held meter's last sample (an old sample: taken with the battery's power now it would show
   * a load that is none). A repeat is no reading of its own: a trim's second reading is the next new sample.
   */
  repeats(grid: number, heldMeter: boolean): boolean {
    const repeat = heldMeter && grid === this.grid;
    this.grid = grid;
    if (!repeat) this.count++;
    return repeat;
  }

  /**
   * One bad reading moves nothing: a reading whose implied load (the interval the models allow) lies more than
   * SUSPECT_JUMP_W from the last one's is held back (`held`); the battery's own move, which the models follow, is no
   * jump. The next reading confirms it (it stays nearer the jump than the load before: both are taken, the step
   * followed one reading late, and `confirmed` is the suspect one, for the identification) or drops it; a reading that
   * drops it is screened as any other (two bad readings of opposite sign in a row: the second was taken for a step).
   */
  screen(grid: number, now: number, load: [number, number]): { held: boolean; confirmed?: { grid: number; at: number } } {
    const suspect = this.suspect;
    this.suspect = undefined;
    let confirmed: { grid: number; at: number } | undefined;
    if (suspect && apart(load, suspect.load) < apart(load, this.lastLoad!)) confirmed = { grid: suspect.grid, at: suspect.at };
    else if (this.lastLoad !== undefined && apart(load, this.lastLoad) > SUSPECT_JUMP_W) {
      this.suspect = { grid, at: now, load };
      return { held: true };
    }
    this.loadBefore = this.lastLoad;
    this.lastLoad = load;
    return { held: false, confirmed };
  }

  /** Whether the meter has now been silent for longer than `timeoutMs` for the first time; it then counts as timed out. */
  timeOut(now: number, timeoutMs: number): boolean {
    if (this.silent || now - this.readingAt <= timeoutMs) return false;
    this.silent = true;
    return true;
  }

  /** Readings are due from `now` again after a rest. */
  resume(now: number): void {
    this.readingAt = now;
    this.silent = false;
    // Readings were not taken meanwhile: a held meter's next sample may be from any time of the rest.
    this.heldBattery = undefined;
  }

  /** The battery was handed back: what the readings implied of the load no longer holds. */
  forget(): void {
    this.lastLoad = undefined;
    this.loadBefore = undefined;
    this.suspect = undefined;
    this.heldBattery = undefined;
  }
}
