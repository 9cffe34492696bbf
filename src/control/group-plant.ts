/**
 * Several batteries behind one meter as one plant for the zero feed-in controller (issue 25). The regulator steers the
 * group's total (its limits are the sums of the units'; its response is what the meter sees); each total is split
 * with splitGroup (src/control/group-split.ts: one direction, staging, balance by SOC) and each unit's share goes
 * through that unit (SteeredUnit, src/control/group-unit.ts: its own DevicePlant and queue, its command's life and
 * health), all units in parallel. A unit that is unreachable or far short of its share is left out for a while
 * (unitHealth) and the total is split again over the others at once; a unit whose last request failed is out of the
 * split already (until one succeeds): a unit switched off hands its share over at its first failed request, not three
 * later. Out, a unit is not steered: its power counts as load, as the meter sees it. What the units left take over is
 * what the regulator reads from its last reading now, without the unit (whenUnitLeaves(), Regulator.unitLeft()): the
 * total in force had counted the unit's lost power as a load, and held the regulator's pulse, sized for the units
 * before. Each unit whose share grows by much gets its own pulse.
 *
 * Hand-over: the regulator learns one plant for the group's total, but a re-split of the plant's own (a reversal's
 * second half, a unit left out or back) moves power from one unit to another while the total stays, and the joining
 * unit may lag far behind the one leaving (3 s against 1.5 s): the regulator's model cannot show that, and its pulse was
 * spent on the total before. So each unit learns its own lag from its reads, and a unit that joins in such a re-split
 * gets its own pulse (SteeredUnit.send()). The regulator is told the shares, never the pulse. Nor does the regulator's
 * model of the sum count for the battery's power: the plant's estimate() does, each unit's last read carried on under
 * its own lag through its setpoints (its pulses too), so that a hand-over is no load change to the regulator. An
 * overdrive of the regulator runs the units its steady setpoint needs, no more; each read counts from when its request
 * left. A pulse keeps the controller's grid-charging floor (steeredBy()).
 *
 * The end: the plant splits again, pulses and watches a reversal (ReversalWatch, src/control/group-reversal.ts) by
 * itself only while the controller steers. After a close, a disable, a hand-back or a time-out nothing is split or
 * sent again (a unit out or back sent the old total after the hand-back to self-consumption), a hand-back goes after
 * the plant's own requests under way, and keep ends each pulse on its share at once (keep()).
 */
import type { PowerLimits } from '../points/catalogue';
import type { BatteryPlant, OthersWrite, PlantOutcome, PlantReading, PlantSteering, ReadOptions, SendOptions } from './device-plant';
import { splitGroup, splitStaged, type GroupUnit, type SplitMemory, type SplitOptions } from './group-split';
import { estimateUnits, gridChargingUnits, holdCommands, readUnits, steeredIds, unitsWrote } from './group-read';
import { ReversalWatch } from './group-reversal';
import { SteeredUnit, floorRoom, type GroupMember, type UnitReport } from './group-unit';
import type { RegulatorSettings } from './regulator';
import { HAND_OVER_SLOT_MARGIN_MS } from './pulse';
import type { HealthOptions } from './unit-health';

export type { GroupMember, UnitReport } from './group-unit';

export interface GroupPlantOptions {
  split?: Partial<SplitOptions>;
  health?: Partial<HealthOptions>;
  /** A unit's failure (the group goes on without it), or a change worth a new status. */
  unitFailure?: (id: string, error: unknown) => void;
  changed?: () => void;
  now?: () => number;
}

/** A split's answers once all are in; undefined once the cut it adds to `waiting` is called (a unit out or back). */
function answersUnlessCut<T>(outcomes: readonly Promise<T>[], waiting: Set<() => void>): Promise<T[] | undefined> {
  return new Promise((resolve) => {
    const cut = () => {
      waiting.delete(cut);
      resolve(undefined);
    };
    waiting.add(cut);
    void Promise.all(outcomes).then((all) => {
      waiting.delete(cut);
      resolve(all);
    });
  });
}

/**
 * The centre: it only splits a total, one split at a time. It holds the total in force with its SOC and steady setpoint
 * (written by apply() and by a unit leaving, cleared by the hand-back), the split's memory (each split), what the
 * regulator was last told (apply's outcome, othersWrote()), the controller's steering (steeredBy()), the splits under
 * way and a unit out or back that came meanwhile (`queued`); each unit holds the rest (SteeredUnit). Read by the
 * controller (the BatteryPlant methods), the units (their context: the slot, closed, the total's SOC) and the reversal
 * watch. Invariants: no split starts inside another: a unit out or back while a split waits is queued and handled by
 * afterSplit() once none waits; the plant splits nothing again by itself while the controller rests or without a total.
 */
export class GroupPlant implements BatteryPlant {
  private readonly units: SteeredUnit[];
  private memory: SplitMemory = { units: {} };
  /** The sum the regulator was last told (apply's outcome or othersWrote()), W. */
  private told: number | undefined;
  /** The total the regulator asked for last (W), split again when a unit is left out or back. */
  private total: number | undefined;
  /** The charge mode's SOC the total was sent with, for a split again. */
  private totalSoc: number | undefined;
  /** The steady setpoint an overdrive's total heads to (the units staged by it), for a split again. */
  private totalSteady: number | undefined;
  /** The units whose SOC the last split knew (the others it took for the middle). */
  private socsSplit: boolean[] = [];
  /** The plant's own re-splits (again()) begun so far: a split whose every request failed may have been handed over. */
  private handOvers = 0;
  /** The total to hand over when a unit leaves (see whenUnitLeaves()). */
  private totalAfterLeave: (() => number | undefined) | undefined;
  /** Whether the controller steers, and its grid-charging floor (see steeredBy()). */
  private steering: PlantSteering | undefined;
  private readonly now: () => number;
  private readonly reversal: ReversalWatch;
  private closed = false;
  /** The splits under way, each waiting for its units' answers: a unit out or back cuts the wait short. */
  private readonly waiting = new Set<() => void>();
  /** A unit went out or came back while a split was under way (`left`: one went out): split again after it. */
  private queued: { left: boolean } | undefined;

  constructor(
    members: readonly GroupMember[],
    private readonly settings: Pick<RegulatorSettings, 'minPower' | 'chargeSoc' | 'dischargeSoc' | 'leash'>,
    private readonly options: GroupPlantOptions = {},
  ) {
    if (members.length === 0) throw new RangeError('a group needs at least one device');
    const ids = new Set(members.map((m) => m.id));
    if (ids.size !== members.length) throw new RangeError('the devices of a group must differ');
    const now = (this.now = options.now ?? (() => performance.now()));
    const context = {
      now,
      slotMs: () => this.minIntervalMs + HAND_OVER_SLOT_MARGIN_MS,
      closed: () => this.closed,
      soc: () => this.totalSoc,
      health: options.health,
      failure: options.unitFailure,
      outChanged: (was: boolean, at: number) => this.outChanged(was, at),
    };
    this.units = members.map((member) => new SteeredUnit(member, settings, context));
    this.reversal = new ReversalWatch({
      now,
      intervalMs: () => this.minIntervalMs,
      units: this.units,
      resting: () => this.resting,
      hasTotal: () => this.total !== undefined,
      again: () => this.again(false),
    });
  }

  /** The slowest unit's pace: an overdrive's halves must be apart for every unit. */
  get minIntervalMs(): number {
    return Math.max(...this.units.map((u) => u.plant.minIntervalMs));
  }

  get limits(): PowerLimits {
    const sum = (key: keyof PowerLimits) => this.units.reduce((total, u) => total + u.plant.limits[key], 0);
    return { chargeLimit: sum('chargeLimit'), dischargeLimit: sum('dischargeLimit') };
  }

  /** Each unit now, for the output message. */
  report(): UnitReport[] {
    const now = this.now();
    return this.units.map((u) => u.report(now));
  }

  async learn(): Promise<void> {
    await Promise.all(this.units.map((u) => u.learn()));
  }

  /** Splits `watts` and sends each unit its share in parallel; the outcome's watts are the units' acknowledged sum. */
  apply(watts: number, options: SendOptions): Promise<PlantOutcome> {
    return this.run(watts, options, false);
  }

  /**
   * One split and its outcome. `handOver`: the plant's own re-split of the total in force (the regulator learns it
   * through othersWrote()); `grows`: a unit left, and a unit whose share grows by much gets its pulse too. A unit out
   * or back during the split is handled after it (afterSplit()), never inside it.
   */
  private async run(watts: number, options: SendOptions, handOver: boolean, grows = false): Promise<PlantOutcome> {
    if (handOver) this.handOvers++;
    const handOversBefore = this.handOvers;
    const { reasons, answers } = await this.split(watts, options, handOver, grows);
    this.afterSplit();
    const now = this.now();
    // A failure handed the total over to the units left (outChanged()), superseding what this split sent them: the sum
    // of their shares is in force (told as failed or superseded, the regulator fell back while a unit carried its
    // pulse, and the two swung against each other for seconds).
    const handedOver = this.handOvers > handOversBefore && this.units.some((u) => !u.isOut(now));
    const failed = answers?.filter((o) => 'error' in o) ?? [];
    if (answers && answers.length > 0 && failed.length === answers.length && !handedOver) throw (failed[0] as { error: unknown }).error;
    const superseded = !handedOver && answers !== undefined && answers.some((o) => 'superseded' in o && o.superseded);
    if (reasons.includes('reversal') && !this.resting) this.reversal.start();
    const sum = this.units.reduce((total, u) => total + (u.isOut(now) ? 0 : u.share()), 0);
    if (!handOver) this.told = sum;
    return { superseded, watts: sum };
  }

  /**
   * The split of `watts`, each unit's share sent; its answers once in, or none where a unit out or back cut the wait
   * short (outChanged(): what it sent the units left is superseded by the split that follows).
   */
  private async split(watts: number, options: SendOptions, handOver: boolean, grows: boolean) {
    this.total = watts;
    this.totalSoc = options.soc;
    this.totalSteady = options.steady;
    const now = this.now();
    this.socsSplit = this.units.map((u) => u.soc !== undefined);
    const split = splitStaged(watts, options.steady, this.splitUnits(now), now, this.memory, this.options.split);
    this.memory = split.memory;
    let started = false;
    const onStart = () => {
      if (!started) options.onStart();
      started = true;
    };
    const steered = this.units.filter((u, i) => {
      u.reason = split.reasons[i]!;
      return !u.notSteered(now);
    });
    const room = floorRoom(this.units, split.setpoints, watts, this.steering?.floor());
    const { urgent, soc, force } = options;
    const outcomes = steered.map((u) =>
      u.send(split.setpoints[this.units.indexOf(u)]!, { urgent, soc, force, onStart }, handOver, grows, room),
    );
    // A failing unit's request (out of the split and of the sum) is not waited for while another unit is steered: it
    // waits for the failing unit's slot, and the regulator's setpoint was in flight for 2.5 s after a switch-off.
    const answering = steered.map((u) => !u.failing);
    const waited = answering.includes(true) ? outcomes.filter((_, i) => answering[i]) : outcomes;
    return { reasons: split.reasons, answers: await answersUnlessCut(waited, this.waiting) };
  }

  /**
   * The last total split again (the plant's own re-split: a reversal's units stopped, a unit out or back, SOCs moved);
   * `grows`: see split().
   */
  private async again(urgent: boolean, grows = false): Promise<void> {
    if (this.resting || this.total === undefined) return;
    await this.run(this.total, { urgent, soc: this.totalSoc, steady: this.totalSteady, onStart: () => undefined }, true, grows);
  }

  /**
   * The controller rests (closed, disabled, handing back or handed back, timed out): the plant splits nothing again by
   * itself, starts no pulse and reads no unit of its own.
   */
  private get resting(): boolean {
    return this.closed || this.steering?.steering() === false;
  }

  whenUnitLeaves(total: () => number | undefined): void {
    this.totalAfterLeave = total;
  }

  steeredBy(steering: PlantSteering): void {
    this.steering = steering;
  }

  /**
   * Stops following a reversal and the hand-over pulses' timers (the controller closes). A pulse stays in force as far
   * as is known: the hand-back replaces it (keep(), a standby, self-consumption).
   */
  close(): void {
    this.closed = true;
    this.reversal.close();
    for (const u of this.units) u.close();
  }

  /** An exit with keep: each pulse in force ends on its share, the setpoint needed, at once. */
  async keep(): Promise<void> {
    await Promise.all(this.units.map((u) => u.keep()));
  }

  /** The group reads the first unit's meter. */
  meterConnected(): Promise<boolean | undefined> {
    return this.units[0]!.plant.meterConnected?.() ?? Promise.resolve(undefined);
  }

  /** Every unit's battery power and SOC (the meter from the first unit's); the sum of the units that are steered. */
  async read(withMeter: boolean, options: ReadOptions = {}): Promise<PlantReading> {
    const reading = await readUnits(this.units, withMeter, options, this.now);
    this.rebalance(this.now());
    return reading;
  }

  leashMoved(): boolean {
    const now = this.now();
    return this.units.some((u) => !u.isOut(now) && u.plant.leashMoved?.() === true);
  }

  /** Whether every unit steered still holds its command (see BatteryPlant); false where one dropped it. */
  holdsCommand(): Promise<boolean | undefined> {
    return holdCommands(this.units, this.now());
  }

  /**
   * The SOCs moved on: where a split of the last total now runs other units (an idle unit passed the active one by the
   * rotate margin, or one reached its SOC limit), or the last split did not know a SOC a read has now brought, it is
   * sent again. Otherwise the balance waits for the regulator's next move, which a steady load (or the charge mode's
   * one total) may not bring for hours: the active unit went on past the others.
   */
  private rebalance(now: number): void {
    if (this.total === undefined || this.reversal.watching || this.resting) return;
    const learned = this.units.some((u, i) => u.soc !== undefined && this.socsSplit[i] === false);
    const split = splitGroup(this.total, this.splitUnits(now), now, this.memory, this.options.split);
    const moved = this.units.some((u, i) => !u.isOut(now) && Math.sign(split.setpoints[i]!) !== Math.sign(u.setpointW));
    if (moved || learned) void this.again(false).catch(() => undefined);
  }

  /** A unit went out of the split or came back (`was`: out before): the last total is split again, after a split under way. */
  private outChanged(was: boolean, now: number): void {
    this.options.changed?.();
    if (this.waiting.size === 0) return this.splitAgain(!was, now);
    if (this.resting || this.total === undefined) return;
    this.queued = { left: !was || this.queued?.left === true };
    // The units left take over at once: the splits under way stop waiting for answers their shares no longer need.
    if (this.units.some((u) => !u.isOut(now))) for (const cut of [...this.waiting]) cut();
  }

  /** The unit out or back that came during a split, once no split is under way. */
  private afterSplit(): void {
    const queued = this.queued;
    if (this.waiting.size > 0 || !queued) return;
    this.queued = undefined;
    this.splitAgain(queued.left, this.now());
  }

  /** The last total split again over the units now steered (`left`: a unit went out). */
  private splitAgain(left: boolean, now: number): void {
    if (this.total === undefined) return;
    // Re-decided where every unit left can get its own pulse (its lag known); otherwise the regulator's total, with its
    // pulse, goes over (a unit that never moved, taking over without one, left the grid short for 15 s and more).
    const pulsable = this.units.every((v) => v.isOut(now) || v.model.lagMs !== undefined);
    const total = !left || !pulsable ? undefined : this.totalAfterLeave?.();
    if (total !== undefined) [this.total, this.totalSteady] = [total, undefined];
    void this.again(true, total !== undefined).catch(() => undefined);
  }

  /** Every unit's grid charging; a unit that refuses it is reported, the others go on. False where a unit has none. */
  gridCharging(on: boolean): Promise<boolean> {
    return gridChargingUnits(this.units, on, this.options.unitFailure);
  }

  async selfConsumption(): Promise<void> {
    // Nothing of the total is split or sent again from here (a unit out or back meanwhile sent the old total again).
    this.total = undefined;
    for (const u of this.units) u.endPulse();
    const results = await Promise.allSettled(this.units.map((u) => u.handBack()));
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length === results.length) throw failed[0]!.reason;
  }

  /**
   * Another writer changed a unit, or the plant re-split the total itself: the group's setpoint is the sum of what each
   * unit has now (a pulse's share, not the pulse), told once the plant's own requests have all been answered. The
   * plant's own writes that leave that sum as the regulator knows it (a pulse and its follow-up) are no news.
   */
  othersWrote(since: number): OthersWrite | undefined {
    if (this.units.some((u) => u.sending > 0)) return undefined;
    const wrote = unitsWrote(this.units, since);
    if (!wrote || wrote.handedBack) return wrote;
    const watts = this.units.reduce((sum, u) => sum + u.share(), 0);
    if (wrote.own && watts === this.told) return undefined;
    this.told = watts;
    return { at: wrote.at, handedBack: false, watts };
  }

  /**
   * The group's battery power at `at` (ms) from each unit's own model (SteeredUnit.estimate()). The regulator takes it
   * instead of its models' range (Regulator.useEstimate()): its one model of the sum cannot show a hand-over, where the
   * total stays and one unit's power goes to another that lags differently. Undefined while a unit steered has not
   * been read lately.
   */
  estimate(at: number): number | undefined {
    return estimateUnits(this.units, at);
  }

  /** The units in the split now (not out), by id. */
  members(): string {
    return steeredIds(this.units, this.now());
  }

  /**
   * The units as the split sees them now. A charge told its own SOC (the charge mode's) fills each unit up to it: a
   * unit there gets no share (each device stops there by itself), the others take it.
   */
  private splitUnits(now: number): GroupUnit[] {
    const { dischargeSoc } = this.settings;
    const chargeSoc = this.total !== undefined && this.total < 0 && this.totalSoc !== undefined ? this.totalSoc : this.settings.chargeSoc;
    return this.units.map((u) => u.splitView(now, chargeSoc, dischargeSoc));
  }
}
