/**
 * What the regulator knows of a plant's own estimate of its battery (a group's: each unit by its own lag,
 * src/control/group-plant.ts), and of the meter's delay against it.
 *
 * Why: the estimate counts instead of the consistent models' range, within what any plant of the family could show.
 * The consistent models cannot follow a hand-over from one unit to another that lags differently, and bounded by them
 * the estimate took their wrong edge. The estimate is the battery's power at a time; the meter shows it up to its
 * delay later, learned as the models' is (align()). `members` names the units that make up the plant now: when a unit
 * leaves (switched off) or comes back, the sum no longer follows the total setpoints the family saw, and the estimate
 * counts unbounded until the slowest consistent model has settled since (bounded, a unit switched off was still
 * counted and the others were driven past the load).
 *
 * Holds: the estimate (the battery's power at a time), each meter delay the family allows with its cost and the load it
 * implied last, the best delay; the units that make up the plant as last seen, and since when; until when the plant
 * pulses its units itself after one left. Written by the regulator's facade: align() with each reading that feeds the
 * identification, unitLeft() when a unit left; membersChanged() records the units it sees (the first look after a
 * change dates it). Read by the plant room (src/control/regulator-plant.ts) and the decisions (pulsesUntil).
 * Invariants: `delays`, `costs` and `implied` run in step; `delayMs` is one of `delays`.
 */
import { settleMs, type PlantModel } from './plant-family';
import type { RegulatorSettings } from './regulator-types';

/** The delays a plant's estimate may show in the meter are tried this far apart (ms)... */
const SHIFT_STEP_MS = 250;
/** ...each reading weighing this much less per newer one, as the models' (plant-family.ts). */
const SHIFT_FORGET = 0.995;

export class EstimateAlignment {
  private readonly delays: number[] = [];
  private costs: number[];
  private implied: (number | undefined)[] = [];
  private delayMs: number;
  private seen: { members: string; at: number } | undefined;
  private until = -Infinity;

  constructor(
    private readonly power: (at: number) => number | undefined,
    private readonly members: (() => string) | undefined,
    { fast, slow }: Pick<RegulatorSettings, 'fast' | 'slow'>,
  ) {
    for (let ms = fast.meterDelayS * 1000; ms <= slow.meterDelayS * 1000; ms += SHIFT_STEP_MS) this.delays.push(ms);
    this.costs = this.delays.map(() => 0);
    this.delayMs = this.delays[0]!;
  }

  /** A unit left and the plant pulses the others until then (ms; see the facade's unitLeft()). */
  get pulsesUntil(): number {
    return this.until;
  }

  /** The battery's power as the meter shows it at `now`: the estimate its delay before. */
  shown(now: number): number | undefined {
    return this.power(now - this.delayMs);
  }

  /**
   * The meter's delay against the plant's estimate: of the delays the family allows, the one under which the load the
   * meter implies (grid + estimate then) changes least from reading to reading, as a wrong model's shows a bump. A
   * meter 1 s late read against the estimate of now took the battery's own move for a load and swung (grid error
   * 2.5 times the family's with three units).
   */
  align(grid: number, now: number): void {
    const implied = this.delays.map((ms) => {
      const power = this.power(now - ms);
      return power === undefined ? undefined : grid + power;
    });
    implied.forEach((load, i) => {
      const before = this.implied[i];
      this.costs[i] = this.costs[i]! * SHIFT_FORGET + (load === undefined || before === undefined ? 0 : Math.abs(load - before));
    });
    this.implied = implied;
    this.delayMs = this.delays[this.costs.indexOf(Math.min(...this.costs))]!;
  }

  /**
   * A unit left: the plant pulses the others until `until`. The meter's delay learned against the estimate also made
   * up for the dead times of the units it does not know (a 1600 class's 1.5 s against the 1 s taken): with the units
   * left it is learned afresh (kept, the 2400 class left alone was taken 0.5 s late and the grid held 40 W for 3 s).
   */
  unitLeft(until: number): void {
    this.until = until;
    this.costs = this.costs.map(() => 0);
    this.implied = [];
  }

  /** Whether the plant's units changed less than the slowest of `models`' settling ago. */
  membersChanged(now: number, models: readonly PlantModel[]): boolean {
    const members = this.members?.();
    if (members === undefined) return false;
    if (this.seen === undefined) this.seen = { members, at: -Infinity };
    else if (this.seen.members !== members) this.seen = { members, at: now };
    return now < this.seen.at + Math.max(...models.map(settleMs));
  }
}
