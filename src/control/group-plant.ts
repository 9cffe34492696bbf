/**
 * Several batteries behind one meter as one plant for the zero feed-in controller (issue 25). The regulator steers the
 * group's total (its limits are the sums of the units'; its response is what the meter sees); each total is split
 * with splitGroup (src/control/group-split.ts: one direction, staging, balance by SOC) and each unit's share goes
 * through that unit's own DevicePlant (its RealTimeController and its own queue), all units in parallel. Each unit's
 * battery power and SOC (6000, 6002) are read from it and fed to unitHealth (src/control/unit-health.ts): a unit that
 * is unreachable or far short of its share is left out for a while and the total is split again over the others at
 * once. A unit whose last request failed is out of the split already (until one succeeds): a unit switched off hands
 * its share over at its first failed request, not three later. Out, a unit is not steered: its power counts as load,
 * as the meter sees it. What the units left take over is what the regulator reads from its last reading now, without
 * the unit (whenUnitLeaves(), Regulator.unitLeft()): the total in force had counted the unit's lost power as a load,
 * and held the regulator's pulse, sized for the units before. Each unit whose share grows by much gets its own pulse.
 *
 * Hand-over: the regulator learns one plant for the group's total, but a re-split of the plant's own (a reversal's
 * second half, a unit left out or back) moves power from one unit to another while the total stays, and the joining
 * unit may lag far behind the one leaving (3 s against 1.5 s): the regulator's model cannot show that, and its pulse was
 * spent on the total before. So each unit's lag is learned from its own reads (fitLag(): two in a row and the setpoints
 * it followed), and a unit that joins in such a re-split gets its own pulse: a setpoint beyond its share, sized by its
 * lag so that it reaches the share one slot later, when the share follows. The regulator is told the shares, never the
 * pulse. Nor does the regulator's model of the sum count for the battery's power: the plant's estimate() does, each
 * unit's last read carried on under its own lag through its setpoints (its pulses too), so that a hand-over is no load
 * change to the regulator. An overdrive of the regulator runs the units its steady setpoint needs, no more; each read
 * counts from when its request left. A pulse keeps the controller's grid-charging floor (steeredBy()).
 *
 * The end: the plant splits again, pulses and watches a reversal by itself only while the controller steers. After a
 * close, a disable, a hand-back or a time-out nothing is split or sent again (a unit out or back sent the old total
 * after the hand-back to self-consumption), a hand-back goes after the plant's own requests under way, and keep ends
 * each pulse on its share at once (keep()).
 */
import type { ClientSession } from '../device/client';
import { pointByName, type PowerLimits } from '../points/catalogue';
import {
  DevicePlant,
  type BatteryPlant,
  type OthersWrite,
  type PlantOutcome,
  type PlantReading,
  type PlantSteering,
  type ReadOptions,
  type SendOptions,
} from './device-plant';
import { SPLIT_DEFAULTS, heading, splitGroup, type GroupUnit, type SplitMemory, type SplitOptions, type UnitReason } from './group-split';
import type { RegulatorSettings } from './regulator';
import { response, type Step } from './plant-family';
import { HAND_OVER_SLOT_MARGIN_MS, pulseSetpoint } from './pulse';
import { isLeftOut, unitHealth, type HealthOptions, type LeftOutReason, type UnitHealth } from './unit-health';

/** One device of the group. */
export interface GroupMember {
  /** Its name in messages and the status (the device configuration's name or host). */
  id: string;
  /** The device's session (its DevicePlant is made here), or one unit's own plant (a simulated unit in simulated time). */
  session: ClientSession | BatteryPlant;
  /** Wh; unknown: read from the device (142, rated capacity) at the start. */
  capacityWh?: number;
}

/** A unit as the output message shows it. */
export interface UnitReport {
  device: string;
  /** W, signed like 6000: the setpoint it acknowledged (0 in standby). */
  setpoint: number;
  /** W as last read, signed like 6000; null when not read. */
  delivered: number | null;
  soc: number | null;
  /** Commanded to move power. */
  active: boolean;
  /** Left out (not steered), and why. */
  leftOut: LeftOutReason | false;
  /** Why it has its setpoint (the split's reason). */
  reason: UnitReason;
}

export interface GroupPlantOptions {
  split?: Partial<SplitOptions>;
  health?: Partial<HealthOptions>;
  /** A unit's failure (the group goes on without it), or a change worth a new status. */
  unitFailure?: (id: string, error: unknown) => void;
  changed?: () => void;
  now?: () => number;
}

interface Unit {
  member: GroupMember;
  capacityWh?: number;
  plant: BatteryPlant;
  /** Acknowledged setpoint, since when (ms). */
  setpointW: number;
  since: number;
  delivered?: { watts: number; at: number };
  /** The read before `delivered`: with it, where the unit's power is heading. */
  before?: { watts: number; at: number };
  soc?: number;
  /** Its discharge floor as its plant last read it (its own backup SOC). */
  dischargeSoc?: number;
  /** What it may still move by itself under the leash (Wh), as last read. */
  leashWh?: number;
  health?: UnitHealth;
  /** Its last request failed: out of the split until one succeeds (left out only after several). */
  failing?: boolean;
  reason: UnitReason;
  /** Its first-order lag as its reads showed it (ms); unknown until seen. */
  lagMs?: number;
  /** Its acknowledged setpoints and when (ms), newest last: what its reads answered. */
  steps: Step[];
  /** The setpoint under way to it (sent, not yet answered). */
  sent?: { watts: number };
  /** A hand-over pulse in force. */
  pulse?: UnitPulse;
  /** The plant's setpoints to it under way: a hand-back goes after them (an urgent one overtook them in the queue). */
  applying: Set<Promise<unknown>>;
}

/**
 * A hand-over pulse: the share that follows it (W), its timer, and when the share's request left (a read of the unit
 * waits for it: in the slot before, it held the pulse on for a second more, 70 W past the share).
 */
type UnitPulse = { value: number; final: number; timer?: NodeJS.Timeout; followed: Promise<void>; follow: () => void };

function unitPulse(value: number, final: number): UnitPulse {
  let follow = () => undefined as void;
  const followed = new Promise<void>((resolve) => (follow = resolve));
  return { value, final, followed, follow };
}

/** How far the pulses of one split may charge past its shares together (W), the grid-charging floor kept. */
type FloorRoom = { watts: number };

const RATED_CAPACITY = pointByName('ratedCapacity')!.address;
/** A unit's capacity when neither given nor read (Wh): the units then weigh alike. */
const UNKNOWN_CAPACITY_WH = 2000;
const capacityOf = (u: Unit) => u.capacityWh ?? UNKNOWN_CAPACITY_WH;
type Read = { watts: number; at: number };

/**
 * A unit's power at `until` from the read `first` under a lag of `lagMs`: the plant model's response() to its setpoints
 * (`steps`, each from when its request left, acting FIT_DEAD_MS later), from the one acting at the read on.
 */
function follow(steps: readonly Step[], first: Read, until: number, lagMs: number): number {
  const from = first.at - FIT_DEAD_MS;
  const acting = [...steps].reverse().find((s) => s.startAt <= from);
  const history = [...(acting ? [{ ...acting, startAt: from }] : []), ...steps.filter((s) => s.startAt > from)];
  return response({ delayMs: FIT_DEAD_MS, lagMs, from: 'startAt' }, history, first.watts, until);
}

/**
 * A unit's first-order lag (ms) from two of its reads and its setpoints: the one under which its power goes from the
 * first read to the second (bisection; a longer lag moves less). Undefined where the reads are too far apart, the unit
 * hardly moved, or no lag in FIT_LAG_MS explains them.
 */
export function fitLag(steps: readonly Step[], first: Read, second: Read): number | undefined {
  if (!(second.at > first.at) || second.at - first.at > LAG_READS_MS || Math.abs(second.watts - first.watts) < LAG_MOVE_W) return undefined;
  const miss = (lagMs: number) => follow(steps, first, second.at, lagMs) - second.watts;
  let [fast, slow] = FIT_LAG_MS.map(Math.log) as [number, number];
  const way = Math.sign(miss(Math.exp(fast)));
  if (way === 0 || Math.sign(miss(Math.exp(slow))) !== -way) return undefined;
  for (let k = 0; k < 30; k++) {
    const middle = (fast + slow) / 2;
    if (Math.sign(miss(Math.exp(middle))) === way) fast = middle;
    else slow = middle;
  }
  return Math.exp((fast + slow) / 2);
}

/**
 * Out of the split: left out, or its last request failed. A failed request is immediate evidence (a unit switched off
 * answers nothing): its share goes to the others at once, not only once unitHealth leaves it out.
 */
const isOut = (u: Unit, now: number) => u.failing === true || isLeftOut(u.health, now);
/** A unit's part of the group's setpoint as the regulator knows it: the share a pulse leads to, not the pulse. */
const share = (u: Unit) => u.pulse?.final ?? u.sent?.watts ?? u.setpointW;

/** A reading older than this does not tell the split whether a unit still moves (ms). */
const FRESH_MS = 10000;
const freshRead = (u: Unit, now: number) => (u.delivered && now - u.delivered.at < FRESH_MS ? u.delivered : undefined);
/** Commanded to rest, and its last read shows it there. */
const atRest = (u: Unit, now: number) => u.setpointW === 0 && Math.abs(freshRead(u, now)?.watts ?? Infinity) <= SPLIT_DEFAULTS.idleW;
/** A unit's lag is learned from two reads at most this far apart (ms) between which it moved at least LAG_MOVE_W. */
const LAG_READS_MS = 5000;
const LAG_MOVE_W = 100;
/** The dead time taken for the fit (ms): the middle of the specification's 0.5 to 2 s. */
const FIT_DEAD_MS = 1000;
/** The lags a fit may find (ms): the specification's 0.5 to 5 s, with room either side. */
const FIT_LAG_MS: readonly [number, number] = [200, 8000];
/** Setpoints kept per unit for the fit. */
const STEPS_KEPT = 16;
/** A joining unit's share smaller than this (W) is a plain step: a pulse would gain little. */
const HAND_OVER_MIN_W = 150;
/** A unit's lag before its reads showed it (ms): about the geometric middle of the specification's 0.5 to 5 s. */
const PRIOR_LAG_MS = 1500;
/** Between its reads, a reversal's watch splits again this often (ms). */
const WATCH_STEP_MS = 250;

export class GroupPlant implements BatteryPlant {
  private readonly units: Unit[];
  private memory: SplitMemory = { units: {} };
  /** The plant's own requests under way: until they are answered the sum is half old, half new, and not told. */
  private sending = 0;
  /** The sum the regulator was last told (apply's outcome or othersWrote()), W. */
  private told: number | undefined;
  /** The total the regulator asked for last (W), split again when a unit is left out or back. */
  private total: number | undefined;
  /** The charge mode's SOC the total was sent with, for a split again. */
  private totalSoc: number | undefined;
  /** The steady setpoint an overdrive's total heads to (the units staged by it), for a split again. */
  private totalSteady: number | undefined;
  /** The plant's own re-splits (again()) begun so far: a split whose every request failed may have been handed over. */
  private handOvers = 0;
  /** The total to hand over when a unit leaves (see whenUnitLeaves()). */
  private totalAfterLeave: (() => number | undefined) | undefined;
  /** Whether the controller steers, and its grid-charging floor (see steeredBy()). */
  private steering: PlantSteering | undefined;
  private readonly now: () => number;
  private watch: NodeJS.Timeout | undefined;
  private step: NodeJS.Timeout | undefined;
  /** When the reversal's watch last read the units (ms); undefined when no reversal waits. */
  private watchReadAt: number | undefined;
  private closed = false;

  constructor(
    members: readonly GroupMember[],
    private readonly settings: Pick<RegulatorSettings, 'minPower' | 'chargeSoc' | 'dischargeSoc' | 'leash'>,
    private readonly options: GroupPlantOptions = {},
  ) {
    if (members.length === 0) throw new RangeError('a group needs at least one device');
    const ids = new Set(members.map((m) => m.id));
    if (ids.size !== members.length) throw new RangeError('the devices of a group must differ');
    this.now = options.now ?? (() => performance.now());
    this.units = members.map((member) => ({
      member,
      capacityWh: member.capacityWh,
      plant: 'apply' in member.session ? member.session : new DevicePlant(member.session, settings),
      setpointW: 0,
      since: -Infinity,
      steps: [],
      reason: 'standby',
      applying: new Set(),
    }));
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
    return this.units.map((u) => ({
      device: u.member.id,
      setpoint: u.setpointW,
      delivered: u.delivered ? Math.round(u.delivered.watts) : null,
      soc: u.soc ?? null,
      active: u.setpointW !== 0,
      leftOut: isLeftOut(u.health, now) ? u.health!.reason! : false,
      reason: u.reason,
    }));
  }

  async learn(): Promise<void> {
    await Promise.all(this.units.map((u) => Promise.all([u.plant.learn(), this.learnCapacity(u)])));
  }

  /** The rated capacity where it was not given: the balance by SOC weighs each unit by its energy. */
  private async learnCapacity(u: Unit): Promise<void> {
    const { session } = u.member;
    if (u.capacityWh !== undefined || 'apply' in session) return;
    const kwh = await session.read([RATED_CAPACITY]).then(
      ({ values }) => values.get(RATED_CAPACITY),
      () => undefined,
    );
    if (typeof kwh === 'number' && kwh > 0) u.capacityWh = kwh * 1000;
  }

  /** Splits `watts` and sends each unit its share in parallel; the outcome's watts are the units' acknowledged sum. */
  apply(watts: number, options: SendOptions): Promise<PlantOutcome> {
    return this.split(watts, options, false);
  }

  /**
   * `handOver`: the plant's own re-split of the total in force (the regulator learns it through othersWrote());
   * `grows`: a unit left, and a unit whose share grows by much gets its pulse too.
   */
  private async split(watts: number, options: SendOptions, handOver: boolean, grows = false): Promise<PlantOutcome> {
    if (handOver) this.handOvers++;
    const handOversBefore = this.handOvers;
    this.total = watts;
    this.totalSoc = options.soc;
    this.totalSteady = options.steady;
    const now = this.now();
    const split = this.splitStaged(watts, options.steady, now);
    this.memory = split.memory;
    let started = false;
    const onStart = () => {
      if (!started) options.onStart();
      started = true;
    };
    const steered = this.units.filter((u, i) => {
      u.reason = split.reasons[i]!;
      // A left-out unit is not steered; one that falls short but still moves gets a standby.
      return !(isLeftOut(u.health, now) && (u.setpointW === 0 || u.health?.reason === 'unreachable'));
    });
    const room = this.floorRoom(split.setpoints, watts);
    const outcomes = steered.map((u) =>
      this.send(
        u,
        split.setpoints[this.units.indexOf(u)]!,
        { urgent: options.urgent, soc: options.soc, force: options.force, onStart },
        handOver,
        grows,
        room,
      ),
    );
    // A failing unit's request (out of the split and of the sum) is not waited for while another unit is steered: it
    // waits for the failing unit's slot, and the regulator's setpoint was in flight for 2.5 s after a switch-off.
    const answering = steered.map((u) => !u.failing);
    const sent = await Promise.all(answering.includes(true) ? outcomes.filter((_, i) => answering[i]) : outcomes);
    const failed = sent.filter((o) => 'error' in o);
    // A failure handed the total over to the units left (observe()), superseding what this split sent them: the sum
    // of their shares is in force (told as failed or superseded, the regulator fell back while a unit carried its
    // pulse, and the two swung against each other for seconds).
    const handedOver = this.handOvers > handOversBefore && this.units.some((u) => !isOut(u, this.now()));
    if (sent.length > 0 && failed.length === sent.length && !handedOver) throw (failed[0] as { error: unknown }).error;
    const superseded = !handedOver && sent.some((o) => 'superseded' in o && o.superseded);
    if (split.reasons.includes('reversal') && !this.resting) this.watchReversal();
    const sum = this.units.reduce((total, u) => total + (isOut(u, this.now()) ? 0 : share(u)), 0);
    if (!handOver) this.told = sum;
    return { superseded, watts: sum };
  }

  /**
   * The last total split again (the plant's own re-split: a reversal's units stopped, a unit out or back, SOCs moved);
   * `grows`: see split().
   */
  private async again(urgent: boolean, grows = false): Promise<void> {
    if (this.resting || this.total === undefined) return;
    await this.split(this.total, { urgent, soc: this.totalSoc, steady: this.totalSteady, onStart: () => undefined }, true, grows);
  }

  /**
   * The controller rests (closed, disabled, handing back or handed back, timed out): the plant splits nothing again by
   * itself, starts no pulse and reads no unit of its own.
   */
  private get resting(): boolean {
    return this.closed || this.steering?.steering() === false;
  }

  /**
   * How far hand-over pulses may charge past the shares of a split of `total` (`setpoints`): down to the grid-charging
   * floor, or the total where it charges more. Until its request is answered each unit may hold its share before (a
   * unit stopping still charged at -575 W while the one taking over was sent -910 W on a total of -455 W), so each
   * counts with the more charging of the two; a pulse kept or started takes its part (within()).
   */
  private floorRoom(setpoints: readonly number[], total: number): FloorRoom {
    const bound = Math.min(total, this.steering?.floor() ?? -Infinity);
    const held = this.units.reduce((sum, u, i) => sum + Math.min(setpoints[i]!, share(u)), 0);
    return { watts: Math.max(0, held - bound) };
  }

  whenUnitLeaves(total: () => number | undefined): void {
    this.totalAfterLeave = total;
  }

  steeredBy(steering: PlantSteering): void {
    this.steering = steering;
  }

  /**
   * The split of `watts`; an overdrive's runs the units its `steady` setpoint would run (a pulse beyond 80 % of one
   * unit's maximum brought a second or third unit in for a second, with its self-use). The others get none of the pulse
   * but still count for the reversal: one still moving the other way holds the rest back.
   */
  private splitStaged(watts: number, steady: number | undefined, now: number): ReturnType<typeof splitGroup> {
    const units = this.splitUnits(now);
    if (steady === undefined || Math.sign(steady) !== Math.sign(watts))
      return splitGroup(watts, units, now, this.memory, this.options.split);
    const staged = splitGroup(steady, units, now, this.memory, this.options.split);
    const running = (i: number) => staged.reasons[i] === 'active';
    const split = splitGroup(
      watts,
      units.map((u, i) => (running(i) ? u : { ...u, maxChargeW: 0, maxDischargeW: 0 })),
      now,
      this.memory,
      this.options.split,
    );
    return { ...split, reasons: split.reasons.map((reason, i) => (running(i) ? reason : staged.reasons[i]!)) };
  }

  /**
   * A reversal waits for the units that may still move the old way: every unit steered is read each interval (each
   * from its own queue, so no unit's writes wait for another's read), and the total is split again as soon as they
   * have stopped, not only at the regulator's next decision; between the reads it is split again every WATCH_STEP_MS,
   * so that the trend of the last two reads (heading()) frees the new way as a unit reversing itself crosses zero, not
   * only at the read after. The controller learns the new sum as another writer's (othersWrote).
   */
  private watchReversal(): void {
    this.stepReversal();
    if (this.watch || this.resting) return;
    // Each read one interval after the one before left (not after its answer): the queue's own pace.
    const delay = this.watchReadAt === undefined ? this.minIntervalMs : Math.max(0, this.watchReadAt + this.minIntervalMs - this.now());
    this.watch = setTimeout(() => {
      const now = this.now();
      if (this.resting || this.total === undefined) return this.endWatch();
      this.watchReadAt = now;
      // A unit at rest and commanded to rest moves neither way: its read would only take its slot from the write that
      // starts it.
      const reads = this.units
        .filter((u) => !isLeftOut(u.health, now) && !atRest(u, now))
        .map((u) => {
          let left: number | undefined;
          return u.plant.read(false, { onStart: () => (left = this.now()) }).then(
            (reading) => {
              if (reading.battery !== undefined) this.delivered(u, reading.battery, left ?? this.now());
            },
            () => undefined,
          );
        });
      void Promise.all(reads)
        .then(() => this.again(false))
        .catch(() => undefined)
        .finally(() => {
          // Once the loop rests, no unit is read each interval until it steers again.
          if (!this.resting && this.total !== undefined && this.units.some((u) => u.reason === 'reversal')) {
            this.watch = undefined;
            this.watchReversal();
          } else this.endWatch();
        });
    }, delay);
  }

  private endWatch(): void {
    this.watch = undefined;
    this.watchReadAt = undefined;
  }

  /** The reversal's split between its reads (watchReversal()); one that still waits steps again. */
  private stepReversal(): void {
    if (this.step || this.resting) return;
    this.step = setTimeout(() => {
      this.step = undefined;
      if (!this.units.some((u) => u.reason === 'reversal')) return;
      void this.again(false).catch(() => undefined);
    }, WATCH_STEP_MS);
  }

  /**
   * Stops following a reversal and the hand-over pulses' timers (the controller closes). A pulse stays in force as far
   * as is known: the hand-back replaces it (keep(), a standby, self-consumption).
   */
  close(): void {
    this.closed = true;
    clearTimeout(this.watch);
    clearTimeout(this.step);
    this.endWatch();
    for (const u of this.units) {
      clearTimeout(u.pulse?.timer);
      u.pulse?.follow();
    }
  }

  /** An exit with keep: each pulse in force ends on its share, the setpoint needed, at once. */
  async keep(): Promise<void> {
    await Promise.all(
      this.units.map(async (u) => {
        const pulse = u.pulse;
        if (!pulse) return;
        this.endPulse(u);
        await this.sendNow(u, pulse.final, { urgent: true, soc: this.totalSoc, onStart: () => undefined });
      }),
    );
  }

  private endPulse(u: Unit): void {
    clearTimeout(u.pulse?.timer);
    u.pulse?.follow();
    u.pulse = undefined;
  }

  /**
   * One unit's share (`pulsed`: the plant's own re-split, where a unit that joins gets its pulse); a failure counts
   * against its health and is given back, not thrown.
   */
  private async send(
    u: Unit,
    share: number,
    options: SendOptions,
    pulsed: boolean,
    grows: boolean,
    room: FloorRoom,
  ): Promise<PlantOutcome | { error: unknown }> {
    // A pulse under way ends on the newest share of the same way (its follow-up sends it, unless closed) where it keeps
    // the floor; any other share goes now.
    const running = u.pulse;
    if (running && !this.closed && Math.sign(share) === Math.sign(running.final) && this.within(room, share, running.value)) {
      running.final = share;
      return { superseded: false, watts: share };
    }
    this.endPulse(u);
    const value = pulsed ? this.handOverPulse(u, share, grows, room) : undefined;
    // In force before its answer: the sum told never holds the pulse.
    const pulse = value === undefined ? undefined : unitPulse(value, share);
    u.pulse = pulse;
    const outcome = await this.sendNow(u, value ?? share, options);
    if (!pulse || u.pulse !== pulse) return outcome;
    if ('error' in outcome || outcome.superseded || this.closed) this.endPulse(u);
    // The pulse acts from when its request left until its share's does (the same dead time): one slot, as sized.
    else pulse.timer = setTimeout(() => void this.followPulse(u, pulse), Math.max(0, outcome.leftAt + this.slotMs - this.now()));
    return outcome;
  }

  /** A pulse's share once the pulse has run its slot; a newer share of the same way that came meanwhile follows it. */
  private async followPulse(u: Unit, pulse: NonNullable<Unit['pulse']>): Promise<void> {
    let sent: number | undefined;
    while (!this.closed && u.pulse === pulse && pulse.final !== sent) {
      sent = pulse.final;
      await this.sendNow(u, sent, { urgent: true, soc: this.totalSoc, onStart: () => pulse.follow() });
    }
    if (u.pulse === pulse) u.pulse = undefined;
    pulse.follow();
  }

  /** A pulse's length: the slowest unit's interval and a margin (ms). */
  private get slotMs(): number {
    return this.minIntervalMs + HAND_OVER_SLOT_MARGIN_MS;
  }

  /**
   * The setpoint that brings a joining unit (idle or the other way) to `share` one slot after it acts, by its learned
   * lag: undefined for a small share, a unit whose lag is not known yet or one already moving this way (unless its
   * share `grows` by HAND_OVER_MIN_W or more). It goes past the share by at most the unit's distance from it, and stays
   * within the unit's limits.
   */
  private handOverPulse(u: Unit, share: number, grows: boolean, room: FloorRoom): number | undefined {
    if (u.lagMs === undefined || Math.abs(share) < HAND_OVER_MIN_W) return undefined;
    const moving = Math.sign(u.setpointW) === Math.sign(share);
    if (moving && !grows) return undefined;
    const now = this.now();
    const fresh = freshRead(u, now);
    const power = fresh ? heading(u.before, fresh, u.setpointW, now) : 0;
    const distance = share - power;
    if (distance * Math.sign(share) < (moving ? HAND_OVER_MIN_W : 1)) return undefined;
    const wanted = pulseSetpoint(power, share, this.slotMs, u.lagMs);
    const past = Math.min(Math.abs(wanted - share), Math.abs(distance));
    const limit = share > 0 ? u.plant.limits.dischargeLimit : u.plant.limits.chargeLimit;
    const value = Math.round(Math.sign(share) * Math.min(limit, Math.abs(share) + past));
    const floored = share < 0 ? Math.max(value, share - Math.floor(room.watts)) : value;
    return floored !== share && this.within(room, share, floored) ? floored : undefined;
  }

  /** Whether a pulse of `value` on `share` keeps the floor (`room`), which it then takes its part of. */
  private within(room: FloorRoom, share: number, value: number): boolean {
    const past = Math.max(0, share - value);
    if (past > room.watts) return false;
    room.watts -= past;
    return true;
  }

  /** One request to the unit; `leftAt`: when it left (or was answered, where no request went). */
  private async sendNow(u: Unit, share: number, options: SendOptions): Promise<(PlantOutcome & { leftAt: number }) | { error: unknown }> {
    this.sending++;
    const sent = { watts: share };
    u.sent = sent;
    // The unit may carry the setpoint out from when its request left: its dead time counts from there (from the
    // answer, the lag fitted to a unit answering in 0.4 s came out a third short).
    let leftAt: number | undefined;
    const onStart = () => {
      leftAt = this.now();
      options.onStart();
    };
    let applied: Promise<PlantOutcome> | undefined;
    try {
      applied = u.plant.apply(share, { ...options, onStart });
      u.applying.add(applied);
      const outcome = await applied;
      // Answered again: back in the split. Only a request that went counts: a failing unit's write replaced in its queue
      // (or a repeat the plant did not send) brought a switched-off unit back at each split, and the total back to it.
      const answered = leftAt !== undefined && !outcome.superseded;
      leftAt ??= this.now();
      if (!outcome.superseded) this.acknowledged(u, outcome.watts, leftAt, this.now());
      if (u.failing && answered) this.observe(u, true);
      return { ...outcome, leftAt };
    } catch (error) {
      this.observe(u, false);
      this.options.unitFailure?.(u.member.id, error);
      return { error };
    } finally {
      this.sending--;
      if (applied) u.applying.delete(applied);
      if (u.sent === sent) u.sent = undefined;
    }
  }

  /** `startAt`: when its request left (or was answered, where none went); `ackAt`: when it was answered. */
  private acknowledged(u: Unit, watts: number, startAt: number, ackAt: number): void {
    if (watts !== u.setpointW) {
      u.since = startAt;
      u.steps.push({ value: watts, startAt, ackAt });
      if (u.steps.length > STEPS_KEPT) u.steps.shift();
    }
    u.setpointW = watts;
  }

  /** The group reads the first unit's meter. */
  meterConnected(): Promise<boolean | undefined> {
    return this.units[0]!.plant.meterConnected?.() ?? Promise.resolve(undefined);
  }

  /** Every unit's battery power and SOC (the meter from the first unit's); the sum of the units that are steered. */
  async read(withMeter: boolean, options: ReadOptions = {}): Promise<PlantReading> {
    let started = false;
    const onStart = () => {
      if (!started) options.onStart?.();
      started = true;
    };
    // When each unit's request left: its power was taken then, not when the answer came (a read may wait its turn).
    const left = this.units.map(() => undefined as number | undefined);
    const readUnit = async (u: Unit, i: number) => {
      await u.pulse?.followed;
      options.signal?.throwIfAborted();
      return u.plant.read(withMeter && i === 0, {
        signal: options.signal,
        onStart: () => {
          left[i] = this.now();
          onStart();
        },
      });
    };
    const results = await Promise.all(
      this.units.map((u, i) =>
        readUnit(u, i).then(
          (reading) => ({ reading }),
          (error: unknown) => ({ error }),
        ),
      ),
    );
    // Withdrawn while it waited (a write needed the slots): no unit failed.
    if (options.signal?.aborted) throw options.signal.reason;
    const now = this.now();
    let battery: number | undefined = 0;
    let socWh = 0;
    let capacityWh = 0;
    let meter: number | undefined;
    results.forEach((result, i) => {
      const u = this.units[i]!;
      if ('error' in result) {
        this.observe(u, false);
        this.options.unitFailure?.(u.member.id, result.error);
      } else {
        const { reading } = result;
        if (i === 0) meter = reading.meter;
        if (reading.soc !== undefined) u.soc = reading.soc;
        u.dischargeSoc = reading.dischargeSoc ?? u.dischargeSoc;
        u.leashWh = reading.leashWh ?? u.leashWh;
        if (reading.battery !== undefined) this.delivered(u, reading.battery, left[i] ?? now);
        this.observe(u, true, reading.battery);
      }
      if (isOut(u, now)) return;
      // A steered unit not read: the group's power is not known.
      if (battery !== undefined)
        battery = 'error' in result || result.reading.battery === undefined ? undefined : battery + result.reading.battery;
      if (u.soc !== undefined) {
        socWh += u.soc * capacityOf(u);
        capacityWh += capacityOf(u);
      }
    });
    if (results.every((r) => 'error' in r)) throw (results[0] as { error: unknown }).error;
    this.rebalance(now);
    const steered = this.units.filter((u) => !isOut(u, now));
    const floors = steered.map((u) => u.dischargeSoc).filter((floor) => floor !== undefined);
    const leashes = steered.map((u) => u.leashWh);
    return {
      battery,
      soc: capacityWh > 0 ? socWh / capacityWh : undefined,
      meter,
      // The regulator discharges while any unit may (each stops at its own floor by the split).
      dischargeSoc: floors.length > 0 ? Math.min(...floors) : undefined,
      leashWh: leashes.every((wh) => wh !== undefined) ? leashes.reduce((sum, wh) => sum + wh, 0) : undefined,
    };
  }

  leashMoved(): boolean {
    const now = this.now();
    return this.units.some((u) => !isOut(u, now) && u.plant.leashMoved?.() === true);
  }

  /** Whether every unit steered still holds its command (see BatteryPlant); false where one dropped it. */
  async holdsCommand(): Promise<boolean | undefined> {
    const now = this.now();
    const holds = await Promise.all(
      this.units.filter((u) => !isOut(u, now)).map((u) => (u.plant.holdsCommand?.() ?? Promise.resolve(undefined)).catch(() => undefined)),
    );
    return holds.includes(false) ? false : holds.every((held) => held === true) ? true : undefined;
  }

  /**
   * The SOCs moved on: where a split of the last total now runs other units (an idle unit passed the active one by the
   * rotate margin, or one reached its SOC limit), it is sent again. Otherwise the balance waits for the regulator's
   * next move, which a steady load may not bring for hours: the active unit went on past the others.
   */
  private rebalance(now: number): void {
    if (this.total === undefined || this.watch || this.resting) return;
    const split = splitGroup(this.total, this.splitUnits(now), now, this.memory, this.options.split);
    const moved = this.units.some((u, i) => !isOut(u, now) && Math.sign(split.setpoints[i]!) !== Math.sign(u.setpointW));
    if (moved) void this.again(false).catch(() => undefined);
  }

  /** A unit's health after a request; out or back, the last total is split again over the units now steered. */
  private observe(u: Unit, reachable: boolean, deliveredW?: number): void {
    const now = this.now();
    const was = isOut(u, now);
    u.failing = !reachable;
    u.health = unitHealth(
      u.health,
      { nowMs: now, reachable, commandedW: u.setpointW, commandedSinceMs: u.since, deliveredW, settleMs: SPLIT_DEFAULTS.settleMs },
      this.options.health,
    );
    if (isOut(u, now) === was) return;
    if (!was) u.reason = 'left out';
    this.options.changed?.();
    if (this.total === undefined) return;
    // Re-decided where every unit left can get its own pulse (its lag known); otherwise the regulator's total, with its
    // pulse, goes over (a unit that never moved, taking over without one, left the grid short for 15 s and more).
    const pulsable = this.units.every((v) => isOut(v, now) || v.lagMs !== undefined);
    const total = was || !pulsable ? undefined : this.totalAfterLeave?.();
    if (total !== undefined) [this.total, this.totalSteady] = [total, undefined];
    void this.again(true, total !== undefined).catch(() => undefined);
  }

  /** Every unit's grid charging; a unit that refuses it is reported, the others go on. False where a unit has none. */
  async gridCharging(on: boolean): Promise<boolean> {
    const results = await Promise.allSettled(this.units.map((u) => u.plant.gridCharging(on)));
    results.forEach((r, i) => {
      if (r.status === 'rejected') this.options.unitFailure?.(this.units[i]!.member.id, r.reason);
    });
    return results.every((r) => r.status === 'rejected' || r.value);
  }

  async selfConsumption(): Promise<void> {
    // Nothing of the total is split or sent again from here (a unit out or back meanwhile sent the old total again).
    this.total = undefined;
    for (const u of this.units) this.endPulse(u);
    const results = await Promise.allSettled(
      this.units.map(async (u) => {
        await Promise.allSettled([...u.applying]);
        await u.plant.selfConsumption();
      }),
    );
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length === results.length) throw failed[0]!.reason;
  }

  /**
   * Another writer changed a unit, or the plant re-split the total itself: the group's setpoint is the sum of what each
   * unit has now (a pulse's share, not the pulse), told once the plant's own requests have all been answered. The
   * plant's own writes that leave that sum as the regulator knows it (a pulse and its follow-up) are no news.
   */
  othersWrote(since: number): OthersWrite | undefined {
    if (this.sending > 0) return undefined;
    const changes = this.units.map((u) => u.plant.othersWrote(since));
    const at = Math.max(...changes.map((c) => c?.at ?? -Infinity));
    if (at === -Infinity) return undefined;
    if (changes.some((c) => c?.handedBack)) return { at, handedBack: true };
    const own = changes.every((c, i) => c?.watts === undefined || c.watts === this.units[i]!.setpointW);
    changes.forEach((c, i) => {
      if (c?.watts !== undefined) this.acknowledged(this.units[i]!, c.watts, c.at, c.at);
    });
    const watts = this.units.reduce((sum, u) => sum + share(u), 0);
    if (own && watts === this.told) return undefined;
    this.told = watts;
    return { at, handedBack: false, watts };
  }

  private delivered(u: Unit, watts: number, at: number): void {
    if (u.delivered) this.learnLag(u, u.delivered, { watts, at });
    u.before = u.delivered;
    u.delivered = { watts, at };
  }

  /**
   * The group's battery power at `at` (ms) from each unit's own model: its last read carried on under its learned lag
   * (PRIOR_LAG_MS until one is) through the setpoints acknowledged since (follow()). The regulator takes it instead of
   * its models' range (Regulator.useEstimate()): its one model of the sum cannot show a hand-over, where the total stays
   * and one unit's power goes to another that lags differently. Undefined while a unit steered has not been read lately.
   */
  estimate(at: number): number | undefined {
    let sum = 0;
    for (const u of this.units) {
      if (isOut(u, at)) continue;
      const read = freshRead(u, at);
      if (!read) return undefined;
      sum += follow(u.steps, read, at, u.lagMs ?? PRIOR_LAG_MS);
    }
    return sum;
  }

  /** The units in the split now (not out), by id. */
  members(): string {
    const now = this.now();
    return this.units
      .filter((u) => !isOut(u, now))
      .map((u) => u.member.id)
      .join(' ');
  }

  /** The unit's lag from two reads in a row (fitLag()); each new one is averaged with the last. */
  private learnLag(u: Unit, first: Read, second: Read): void {
    const lagMs = fitLag(u.steps, first, second);
    if (lagMs !== undefined) u.lagMs = u.lagMs === undefined ? lagMs : (u.lagMs + lagMs) / 2;
  }

  /**
   * The units as the split sees them now. A charge told its own SOC (the charge mode's) fills each unit up to it: a
   * unit there gets no share (each device stops there by itself), the others take it.
   */
  private splitUnits(now: number): GroupUnit[] {
    const { dischargeSoc } = this.settings;
    const chargeSoc = this.total !== undefined && this.total < 0 && this.totalSoc !== undefined ? this.totalSoc : this.settings.chargeSoc;
    return this.units.map((u) => {
      const fresh = freshRead(u, now);
      return {
        id: u.member.id,
        maxChargeW: u.plant.limits.chargeLimit,
        maxDischargeW: u.plant.limits.dischargeLimit,
        capacityWh: capacityOf(u),
        // Not read yet: in the middle, so that it neither leads nor is shut out.
        soc: u.soc ?? (chargeSoc + dischargeSoc) / 2,
        chargeSoc,
        dischargeSoc: u.dischargeSoc ?? dischargeSoc,
        leftOut: isOut(u, now),
        // A unit being sent a setpoint stages as that one: a unit handed over and not yet answering counted as
        // active and kept a third unit in (and the one handed over) at a total one unit carries.
        setpointW: u.sent?.watts ?? u.setpointW,
        // A reading shows a command only after the unit's response and its own age.
        ...(fresh
          ? {
              deliveredW: fresh.watts,
              headingW: heading(u.before, fresh, u.setpointW, now),
              responseMs: now - fresh.at + SPLIT_DEFAULTS.responseMs,
            }
          : {}),
      };
    });
  }
}
