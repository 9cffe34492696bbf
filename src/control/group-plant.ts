/**
 * Several batteries behind one meter as one plant for the zero feed-in controller (issue 25). The regulator steers the
 * group's total (its limits are the sums of the units'; its response is what the meter sees); each total is split
 * with splitGroup (src/control/group-split.ts: one direction, staging, balance by SOC) and each unit's share goes
 * through that unit's own DevicePlant (its RealTimeController and its own queue), all units in parallel. Each unit's
 * battery power and SOC (6000, 6002) are read from it and fed to unitHealth (src/control/unit-health.ts): a unit that
 * is unreachable or far short of its share is left out for a while and the total is split again over the others at
 * once. A unit whose last request failed is out of the split already (until one succeeds): a unit switched off hands
 * its share over at its first failed request, not three later. Out, a unit is not steered: its power counts as load,
 * as the meter sees it.
 */
import type { ClientSession } from '../device/client';
import { pointByName, type PowerLimits } from '../points/catalogue';
import {
  DevicePlant,
  type BatteryPlant,
  type OthersWrite,
  type PlantOutcome,
  type PlantReading,
  type ReadOptions,
  type SendOptions,
} from './device-plant';
import { SPLIT_DEFAULTS, heading, splitGroup, type GroupUnit, type SplitMemory, type SplitOptions, type UnitReason } from './group-split';
import type { RegulatorSettings } from './regulator';
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
  health?: UnitHealth;
  /** Its last request failed: out of the split until one succeeds (left out only after several). */
  failing?: boolean;
  reason: UnitReason;
}

const RATED_CAPACITY = pointByName('ratedCapacity')!.address;
/** A unit's capacity when neither given nor read (Wh): the units then weigh alike. */
const UNKNOWN_CAPACITY_WH = 2000;
const capacityOf = (u: Unit) => u.capacityWh ?? UNKNOWN_CAPACITY_WH;
/**
 * Out of the split: left out, or its last request failed. A failed request is immediate evidence (a unit switched off
 * answers nothing): its share goes to the others at once, not only once unitHealth leaves it out.
 */
const isOut = (u: Unit, now: number) => u.failing === true || isLeftOut(u.health, now);

/** A reading older than this does not tell the split whether a unit still moves (ms). */
const FRESH_MS = 10000;

export class GroupPlant implements BatteryPlant {
  private readonly units: Unit[];
  private memory: SplitMemory = { units: {} };
  /** The total the regulator asked for last (W), split again when a unit is left out or back. */
  private total: number | undefined;
  /** The charge mode's SOC the total was sent with, for a split again. */
  private totalSoc: number | undefined;
  private readonly now: () => number;
  private watch: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    members: readonly GroupMember[],
    private readonly settings: Pick<RegulatorSettings, 'minPower' | 'chargeSoc' | 'dischargeSoc'>,
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
      reason: 'standby',
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
  async apply(watts: number, options: SendOptions): Promise<PlantOutcome> {
    this.total = watts;
    this.totalSoc = options.soc;
    const now = this.now();
    const split = splitGroup(watts, this.splitUnits(now), now, this.memory, this.options.split);
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
    const sent = await Promise.all(
      steered.map((u) => this.send(u, split.setpoints[this.units.indexOf(u)]!, { urgent: options.urgent, soc: options.soc, onStart })),
    );
    const failed = sent.filter((o) => 'error' in o);
    if (sent.length > 0 && failed.length === sent.length) throw (failed[0] as { error: unknown }).error;
    const superseded = sent.some((o) => 'superseded' in o && o.superseded);
    if (split.reasons.includes('reversal')) this.watchReversal();
    return { superseded, watts: this.units.reduce((sum, u) => sum + (isOut(u, this.now()) ? 0 : u.setpointW), 0) };
  }

  /**
   * A reversal waits for the units that may still move the old way: every unit steered is read each interval (each
   * from its own queue, so no unit's writes wait for another's read), and the total is split again as soon as they
   * have stopped, not only at the regulator's next decision. The controller learns the new sum as another writer's
   * (othersWrote).
   */
  private watchReversal(): void {
    if (this.watch || this.closed) return;
    this.watch = setTimeout(() => {
      const now = this.now();
      const reads = this.units
        .filter((u) => !isLeftOut(u.health, now))
        .map((u) =>
          u.plant.read(false).then(
            (reading) => {
              if (reading.battery !== undefined) this.delivered(u, reading.battery, this.now());
            },
            () => undefined,
          ),
        );
      void Promise.all(reads)
        .then(() =>
          this.closed || this.total === undefined
            ? undefined
            : this.apply(this.total, { urgent: false, soc: this.totalSoc, onStart: () => undefined }),
        )
        .catch(() => undefined)
        .finally(() => {
          this.watch = undefined;
          if (this.units.some((u) => u.reason === 'reversal')) this.watchReversal();
        });
    }, this.minIntervalMs);
  }

  /** Stops following a reversal (the controller closes). */
  close(): void {
    this.closed = true;
    clearTimeout(this.watch);
  }

  /** One unit's share; a failure counts against its health and is given back, not thrown. */
  private async send(u: Unit, share: number, options: SendOptions): Promise<PlantOutcome | { error: unknown }> {
    try {
      const outcome = await u.plant.apply(share, options);
      if (!outcome.superseded) this.acknowledged(u, outcome.watts, this.now());
      // Answered again: back in the split.
      if (u.failing) this.observe(u, true);
      return outcome;
    } catch (error) {
      this.observe(u, false);
      this.options.unitFailure?.(u.member.id, error);
      return { error };
    }
  }

  private acknowledged(u: Unit, watts: number, at: number): void {
    if (watts !== u.setpointW) u.since = at;
    u.setpointW = watts;
  }

  /** Every unit's battery power and SOC (the meter from the first unit's); the sum of the units that are steered. */
  async read(withMeter: boolean, options: ReadOptions = {}): Promise<PlantReading> {
    let started = false;
    const onStart = () => {
      if (!started) options.onStart?.();
      started = true;
    };
    const results = await Promise.all(
      this.units.map((u, i) =>
        u.plant.read(withMeter && i === 0, { signal: options.signal, onStart }).then(
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
        if (reading.battery !== undefined) this.delivered(u, reading.battery, now);
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
    return { battery, soc: capacityWh > 0 ? socWh / capacityWh : undefined, meter };
  }

  /**
   * The SOCs moved on: where a split of the last total now runs other units (an idle unit passed the active one by the
   * rotate margin, or one reached its SOC limit), it is sent again. Otherwise the balance waits for the regulator's
   * next move, which a steady load may not bring for hours: the active unit went on past the others.
   */
  private rebalance(now: number): void {
    if (this.total === undefined || this.watch || this.closed) return;
    const split = splitGroup(this.total, this.splitUnits(now), now, this.memory, this.options.split);
    const moved = this.units.some((u, i) => !isOut(u, now) && Math.sign(split.setpoints[i]!) !== Math.sign(u.setpointW));
    if (moved) void this.apply(this.total, { urgent: false, soc: this.totalSoc, onStart: () => undefined }).catch(() => undefined);
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
    if (this.total !== undefined)
      void this.apply(this.total, { urgent: true, soc: this.totalSoc, onStart: () => undefined }).catch(() => undefined);
  }

  /** Every unit's grid charging; a unit that refuses it is reported, the others go on. */
  async gridCharging(on: boolean): Promise<void> {
    const results = await Promise.allSettled(this.units.map((u) => u.plant.gridCharging(on)));
    results.forEach((r, i) => {
      if (r.status === 'rejected') this.options.unitFailure?.(this.units[i]!.member.id, r.reason);
    });
  }

  async selfConsumption(): Promise<void> {
    const results = await Promise.allSettled(this.units.map((u) => u.plant.selfConsumption()));
    this.total = undefined;
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length === results.length) throw failed[0]!.reason;
  }

  /** Another writer changed a unit: the group's setpoint is the sum of what each unit has now. */
  othersWrote(since: number): OthersWrite | undefined {
    const changes = this.units.map((u) => u.plant.othersWrote(since));
    const at = Math.max(...changes.map((c) => c?.at ?? -Infinity));
    if (at === -Infinity) return undefined;
    if (changes.some((c) => c?.handedBack)) return { at, handedBack: true };
    changes.forEach((c, i) => {
      if (c?.watts !== undefined) this.acknowledged(this.units[i]!, c.watts, c.at);
    });
    return { at, handedBack: false, watts: this.units.reduce((sum, u) => sum + u.setpointW, 0) };
  }

  private delivered(u: Unit, watts: number, at: number): void {
    u.before = u.delivered;
    u.delivered = { watts, at };
  }

  /**
   * The units as the split sees them now. A charge told its own SOC (the charge mode's) fills each unit up to it: a
   * unit there gets no share (each device stops there by itself), the others take it.
   */
  private splitUnits(now: number): GroupUnit[] {
    const { dischargeSoc } = this.settings;
    const chargeSoc = this.total !== undefined && this.total < 0 && this.totalSoc !== undefined ? this.totalSoc : this.settings.chargeSoc;
    return this.units.map((u) => {
      const fresh = u.delivered && now - u.delivered.at < FRESH_MS ? u.delivered : undefined;
      return {
        id: u.member.id,
        maxChargeW: u.plant.limits.chargeLimit,
        maxDischargeW: u.plant.limits.dischargeLimit,
        capacityWh: capacityOf(u),
        // Not read yet: in the middle, so that it neither leads nor is shut out.
        soc: u.soc ?? (chargeSoc + dischargeSoc) / 2,
        chargeSoc,
        dischargeSoc,
        leftOut: isOut(u, now),
        setpointW: u.setpointW,
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
