/**
 * A meter that cannot be right, caught while the zero feed-in loop steers (issue 34). No I/O: the controller
 * (src/control/zero-feed-in-meter.ts) feeds it each reading with the battery power the regulator took for it and the
 * setpoint it stands behind, sends its probes, holds the loop while one shows, and stops when it names a fault.
 *
 * Two rules find a wrong sign. (1) Each setpoint move of MOVE_W or more is judged by the readings after it: they move
 * with it (more discharge, more import) or against it by MOVE_SHARE of the move. One move answered the wrong way may
 * be a kettle switched on after it; the same way again at once (a probe of PROBE_W, the loop holding meanwhile) tells:
 * a right meter answers the probe the right way (the kettle is still on), a wrong one the wrong way again, and two in
 * a row stop the loop (a quick battery under a wrong sign reached its limit in two moves, where rule 2 waited for
 * four). The device's own meter is wired by the device: rule 1 leaves it alone. (2) The slope s of the grid readings
 * on the battery's power over the readings since steering began, s = cov(grid, battery) / var(battery), once the
 * battery spanned EXCITATION_W: a right meter gives s ≈ -1, a wrong sign s ≈ +1, a kW meter given as W s ≈ -0.001.
 * Levels, not changes: the battery's power as the regulator takes it may be a second off the meter's timing. A wrong
 * sign from s ≥ +0.5 where the loop also runs away (four setpoint moves one way, each making the reading worse), too
 * small only where every reading also lay within KW_READING_W. A right meter confirmed (s ≤ -0.5) ends the check: a later load or a battery that falls short cannot raise a false alarm.
 * A kW meter never moves the regulator (0.35 is within any dead band), so nothing excites it: where the first readings
 * all lie within KW_READING_W and one is no whole number, the check asks once for a probe (PROBE_W more discharge,
 * which a right meter's next reading undoes as a load change).
 */

/** How grid readings given by message count (node settings). */
export const METER_SIGNS = ['import-positive', 'export-positive'] as const;
export const METER_UNITS = ['W', 'kW'] as const;
export type MeterSign = (typeof METER_SIGNS)[number];
export type MeterUnit = (typeof METER_UNITS)[number];

/** Why the meter cannot be right: it moves the wrong way, reads about 1000× too small, or (the device's) is not set up. */
export type MeterFault = 'inverted' | 'kilowatts' | 'not connected';

/** A reading as given, in the regulator's terms: W, positive importing. The only place a reading is converted. */
export function meterWatts(value: number, sign: MeterSign, unit: MeterUnit): number {
  const watts = unit === 'kW' ? value * 1000 : value;
  return sign === 'export-positive' ? -watts : watts;
}

/** The battery's power must have spanned this much (W) over the readings before a verdict. */
const EXCITATION_W = 250;
/** The slope's margins: a wrong sign from +WRONG_SLOPE (and a runaway), a right meter from -RIGHT_SLOPE. */
const WRONG_SLOPE = 0.5;
const RIGHT_SLOPE = 0.5;
/** A runaway: this many setpoint moves one way, and the reading moved away from where they ask by this share of them. */
const RUNAWAY_MOVES = 4;
const RUNAWAY_SHARE = 0.8;
/** A kW meter's readings stay this small (W as given: a house of up to 30 kW); a W meter's move with the battery. */
const KW_READING_W = 30;
/** ...and it moves less than this share of the battery's moves. */
const KW_SLOPE = 0.01;

/** A probe's size (W); a kW meter's comes after this many readings that steered. */
export const PROBE_W = 400;
const PROBE_AFTER = 3;

/** A move's verdict (rule 1): moves of at least MOVE_W, readings that moved MOVE_SHARE of it, WRONG_MOVES in a row. */
const MOVE_W = 300;
const MOVE_SHARE = 0.3;
const WRONG_MOVES = 2;
/** The loop holds for a probe's verdict at most this many readings (a battery at its limit does not answer). */
const PROBE_READINGS = 8;

/** The device's meter repeats its sample between refreshes: the same value this long after it came is no sign yet. */
const HELD_SAMPLE_MS = 6000;
/** The battery's power moved this much (W) while the device's meter kept one value: the meter is frozen. */
const FROZEN_MOVE_W = 100;

export class MeterCheck {
  private lastGrid: number | undefined;
  /** Setpoint moves one way in a row: their direction, count, and where the setpoint and the reading were before. */
  private run: { direction: number; moves: number; setpoint: number; grid: number } | undefined;
  private lastSetpoint: { setpoint: number; grid: number } | undefined;
  /** The last large move not yet judged (its size, signed, and the reading that made it); wrong verdicts in a row. */
  private move: { size: number; grid: number } | undefined;
  private wrongMoves = 0;
  /** The way of a move answered the wrong way, until the next verdict. */
  private suspectWay: number | undefined;
  /** Readings since the probe after such a move, while the loop holds for its verdict. */
  private probeReadings: number | undefined;
  /** Sums over the readings: n, Σb, Σg, Σb², Σbg; the battery's range. */
  private n = 0;
  private sumB = 0;
  private sumG = 0;
  private sumBB = 0;
  private sumBG = 0;
  private low = Infinity;
  private high = -Infinity;
  private largest = 0;
  private fractional = false;
  private probed = false;
  private confirmed = false;
  /** The device meter's value as first seen, and the battery's range read since. */
  private held: { grid: number; since: number; low: number; high: number } | undefined;

  /** `heldMeter`: the device's meter, which repeats its sample between refreshes (a repeat is no new reading). */
  constructor(private readonly heldMeter = false) {}

  /** Whether the meter moved the right way with the battery: nothing more to check. */
  get cleared(): boolean {
    return this.confirmed;
  }

  /** The loop holds while the probe after a move answered the wrong way shows: its answer alone decides. */
  get holding(): boolean {
    return this.probeReadings !== undefined;
  }

  /** Starts over (the loop steers again after a rest, or was re-enabled after a fault). */
  reset(): void {
    this.lastGrid = undefined;
    this.run = this.lastSetpoint = this.move = undefined;
    this.wrongMoves = 0;
    this.suspectWay = this.probeReadings = undefined;
    this.n = this.sumB = this.sumG = this.sumBB = this.sumBG = this.largest = 0;
    this.low = Infinity;
    this.high = -Infinity;
    this.confirmed = this.fractional = this.probed = false;
    this.held = undefined;
  }

  /** A gap in the readings (a rest, a hand-back): the device meter's next value is new. */
  gap(): void {
    this.lastGrid = undefined;
    this.move = undefined;
  }

  /**
   * A reading (W, positive importing) before the regulator decides on it, while the loop holds for a probe's answer:
   * where it answers the probe, the hold ends with it, and the regulator's decision on it goes out (a sparse meter's
   * next reading may be seconds away). The fault it shows, if any; observe() follows with the same reading.
   */
  answer(grid: number): MeterFault | undefined {
    if (this.confirmed || this.heldMeter || this.probeReadings === undefined) return undefined;
    return this.judgeMove(grid, 0) ? 'inverted' : undefined;
  }

  /**
   * A reading the regulator took (W, positive importing) with the battery power it took for it (W, positive
   * discharging, measured or modelled), the setpoint the loop stands behind and `held`, the one before this reading's
   * decision (the battery's power where there was none); the fault it shows, if any.
   */
  observe(grid: number, battery: number | undefined, setpoint?: number, held?: number): MeterFault | undefined {
    if (this.confirmed || battery === undefined) return undefined;
    const from = this.lastSetpoint?.setpoint ?? held ?? battery;
    this.follow(grid, setpoint);
    if (this.probeReadings !== undefined && ++this.probeReadings > PROBE_READINGS) this.probeReadings = undefined;
    if (!this.heldMeter && this.judgeMove(grid, setpoint === undefined ? 0 : setpoint - from)) return 'inverted';
    if (this.heldMeter && grid === this.lastGrid) return undefined;
    this.lastGrid = grid;
    this.largest = Math.max(this.largest, Math.abs(grid));
    this.fractional ||= !Number.isInteger(grid);
    this.n++;
    this.sumB += battery;
    this.sumG += grid;
    this.sumBB += battery * battery;
    this.sumBG += battery * grid;
    this.low = Math.min(this.low, battery);
    this.high = Math.max(this.high, battery);
    if (!this.excited) return undefined;
    const slope = (this.n * this.sumBG - this.sumB * this.sumG) / (this.n * this.sumBB - this.sumB * this.sumB);
    if (slope >= WRONG_SLOPE && this.runsAway(grid, setpoint)) return 'inverted';
    if (Math.abs(slope) < KW_SLOPE && this.largest <= KW_READING_W) return 'kilowatts';
    if (slope <= -RIGHT_SLOPE) this.confirmed = true;
    return undefined;
  }

  /** Judges the last large move with this reading; `size`: the setpoint's move at this reading (0: none). */
  private judgeMove(grid: number, size: number): boolean {
    const move = this.move;
    if (move) {
      const withIt = (grid - move.grid) * Math.sign(move.size);
      if (Math.abs(withIt) >= MOVE_SHARE * Math.abs(move.size)) {
        this.move = undefined;
        this.wrongMoves = withIt > 0 ? this.wrongMoves + 1 : 0;
        if (this.wrongMoves >= WRONG_MOVES) return true;
        this.suspectWay = this.wrongMoves > 0 ? Math.sign(move.size) : undefined;
        this.probeReadings = undefined;
      }
    }
    // A move the same way before the last one was judged waits: replaced, the last went unjudged.
    if (Math.abs(size) >= MOVE_W && !(this.move && size * this.move.size > 0)) this.move = { size, grid };
    return false;
  }

  /** The setpoint's moves in a row one way (a reversal starts a new run). */
  private follow(grid: number, setpoint: number | undefined): void {
    if (setpoint === undefined) return;
    const last = this.lastSetpoint;
    this.lastSetpoint = { setpoint, grid };
    // Trims do not count: a load's ramp makes many small moves one way, and a step then looked like a run.
    if (!last || Math.abs(setpoint - last.setpoint) < MOVE_W) return;
    const direction = Math.sign(setpoint - last.setpoint);
    if (this.run?.direction === direction) this.run.moves++;
    else this.run = { direction, moves: 1, setpoint: last.setpoint, grid: last.grid };
  }

  /** The run's moves made the reading worse by about as much as they moved: more discharge, more import. */
  private runsAway(grid: number, setpoint: number | undefined): boolean {
    const run = this.run;
    if (!run || setpoint === undefined || run.moves < RUNAWAY_MOVES) return false;
    return (grid - run.grid) * run.direction >= RUNAWAY_SHARE * Math.abs(setpoint - run.setpoint);
  }

  private get excited(): boolean {
    return this.high - this.low >= EXCITATION_W;
  }

  /**
   * A probe due now (W to add to the setpoint), at most one until the check starts over (a right meter pays for one at
   * most): after a move answered the wrong way, the same way again at once (a slow battery's next move came 5 s later;
   * a kettle switched on after the move is told from a wrong sign by the probe's answer); readings so small, and one
   * no whole number, that only a kW meter gives them: more discharge. Nothing changes until the caller says it sent it
   * (probeSent()).
   */
  get probeDue(): number | undefined {
    if (this.confirmed || this.probed) return undefined;
    if (this.suspectWay !== undefined) return this.suspectWay * PROBE_W;
    if (this.n < PROBE_AFTER || this.excited || this.largest > KW_READING_W || !this.fractional) return undefined;
    return PROBE_W;
  }

  /** Whether the probe due goes instead of a move the regulator decided: the suspect's does, a kW meter's waits for a hold. */
  get probeReplacesMoves(): boolean {
    return this.suspectWay !== undefined;
  }

  /** The probe due was sent: after a suspect move the loop holds for its answer. */
  probeSent(): void {
    this.probed = true;
    if (this.suspectWay !== undefined) this.probeReadings = 0;
  }

  /**
   * The device's meter (read with the battery's power, `battery`, at `now` ms): whether this reading is a repeat too old
   * to be a held sample while the battery moved, i.e. a frozen meter (the caller then lets the time-out run).
   */
  frozen(grid: number, battery: number | undefined, now: number): boolean {
    const held = this.held;
    if (!held || held.grid !== grid) {
      this.held = { grid, since: now, low: battery ?? Infinity, high: battery ?? -Infinity };
      return false;
    }
    if (battery !== undefined) {
      held.low = Math.min(held.low, battery);
      held.high = Math.max(held.high, battery);
    }
    return now - held.since > HELD_SAMPLE_MS && held.high - held.low >= FROZEN_MOVE_W;
  }
}
