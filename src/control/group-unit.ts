/**
 * One unit of a group (issue 25, issue 36): the life and health of its command. It holds what was sent to it and what
 * it acknowledged, its hand-over pulse with the pulse's timer and follow-up, its health (unitHealth), its reads and
 * learned lag (`model`, UnitModel in src/control/unit-lag.ts), its capacity and SOC; it sends through its own plant (a
 * DevicePlant with its own queue, or a simulated unit's), ends its own pulse, and tells the centre (GroupPlant) what a
 * split needs: its share, whether it is out, at rest, its fresh read and its power now (`model.estimate()`).
 *
 * Contract. Written only by the unit itself, except `reason`, which the centre's split writes (and the unit, as it
 * leaves). Read by the centre. Invariants: `sent` is the setpoint of the unit's own request under way (undefined when
 * none is); `setpointW` the last acknowledged, `since` when it changed, and the model holds each change;
 * a `pulse` is in force from its request until its follow-up sends its `final` (its share), and nothing but the unit
 * ends it; `sending` counts its requests under way. A change of being out (a failed request or read, a shortfall, one
 * answered again) is told to the centre through `UnitContext.outChanged`, after the unit's state is updated.
 */
import type { ClientSession } from '../device/client';
import { pointByName, type PowerLimits } from '../points/catalogue';
import type { RegulatorSettings } from './regulator';
import { DevicePlant, type BatteryPlant, type PlantOutcome, type PlantReading, type SendOptions } from './device-plant';
import { SPLIT_DEFAULTS, type GroupUnit, type UnitReason } from './group-split';
import { pulseSetpoint } from './pulse';
import { UnitModel } from './unit-lag';
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

/** What a unit asks of its group's centre. */
export interface UnitContext {
  now(): number;
  /** A pulse's length (ms): the slowest unit's interval and HAND_OVER_SLOT_MARGIN_MS. */
  slotMs(): number;
  /** The controller closed: no pulse follows up by itself. */
  closed(): boolean;
  /** The charge mode's SOC of the total in force, carried by a pulse's follow-up. */
  soc(): number | undefined;
  health?: Partial<HealthOptions>;
  /** A request or read of the unit failed (the group goes on without it). */
  failure?(id: string, error: unknown): void;
  /** The unit went out of the split or came back (`wasOut`: before), at `now`. */
  outChanged(wasOut: boolean, now: number): void;
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

const RATED_CAPACITY = pointByName('ratedCapacity')!.address;

/** How far the pulses of one split may charge past its shares together (W), the grid-charging floor kept. */
export type FloorRoom = { watts: number };

/**
 * How far hand-over pulses may charge past the shares of a split of `total` (`setpoints`, per unit): down to the
 * grid-charging `floor`, or the total where it charges more. Until its request is answered each unit may hold its
 * share before (a unit stopping still charged at -575 W while the one taking over was sent -910 W on a total of
 * -455 W), so each counts with the more charging of the two; a pulse kept or started takes its part (within()).
 */
export function floorRoom(units: readonly SteeredUnit[], setpoints: readonly number[], total: number, floor = -Infinity): FloorRoom {
  const bound = Math.min(total, floor);
  const held = units.reduce((sum, u, i) => sum + Math.min(setpoints[i]!, u.share()), 0);
  return { watts: Math.max(0, held - bound) };
}

/** Whether a pulse of `value` on `share` keeps the floor (`room`), which it then takes its part of. */
function within(room: FloorRoom, share: number, value: number): boolean {
  const past = Math.max(0, share - value);
  if (past > room.watts) return false;
  room.watts -= past;
  return true;
}

/**
 * A hand-over pulse on `share` for a unit at `power` (W) under its lag: pulseSetpoint(), going past the share by at most
 * the unit's distance from it, within the unit's limits and the floor's `room` (which it takes its part of);
 * undefined where it would be the share itself or break the floor.
 */
function handOverSetpoint(
  share: number,
  power: number,
  slotMs: number,
  lagMs: number,
  limits: PowerLimits,
  room: FloorRoom,
): number | undefined {
  const wanted = pulseSetpoint(power, share, slotMs, lagMs);
  const past = Math.min(Math.abs(wanted - share), Math.abs(share - power));
  const limit = share > 0 ? limits.dischargeLimit : limits.chargeLimit;
  const value = Math.round(Math.sign(share) * Math.min(limit, Math.abs(share) + past));
  const floored = share < 0 ? Math.max(value, share - Math.floor(room.watts)) : value;
  return floored !== share && within(room, share, floored) ? floored : undefined;
}

/** A device's rated capacity (142, Wh); undefined where it cannot be read. */
async function ratedCapacityWh(session: ClientSession): Promise<number | undefined> {
  const kwh = await session.read([RATED_CAPACITY]).then(
    ({ values }) => values.get(RATED_CAPACITY),
    () => undefined,
  );
  return typeof kwh === 'number' && kwh > 0 ? kwh * 1000 : undefined;
}

/** A unit's capacity when neither given nor read (Wh): the units then weigh alike. */
const UNKNOWN_CAPACITY_WH = 2000;
/** A joining unit's share smaller than this (W) is a plain step: a pulse would gain little. */
const HAND_OVER_MIN_W = 150;

export class SteeredUnit {
  readonly id: string;
  readonly plant: BatteryPlant;
  /** Why it has its setpoint: the split's reason, or 'left out'. */
  reason: UnitReason = 'standby';
  /** Acknowledged setpoint (W), since when (ms). */
  setpointW = 0;
  private since = -Infinity;
  /** Its setpoints, reads and lag. */
  readonly model = new UnitModel();
  soc?: number;
  /** Its discharge floor as its plant last read it (its own backup SOC). */
  dischargeSoc?: number;
  /** What it may still move by itself under the leash (Wh), as last read. */
  leashWh?: number;
  private health?: UnitHealth;
  /** Its last request failed: out of the split until one succeeds (left out only after several). */
  failing?: boolean;
  /** The setpoint under way to it (sent, not yet answered). */
  private sent?: { watts: number };
  /** A hand-over pulse in force. */
  private pulse?: UnitPulse;
  /** Its requests under way: a hand-back goes after them (an urgent one overtook them in the queue). */
  private readonly applying = new Set<Promise<unknown>>();
  /** Its requests under way, counted (the centre tells no sum while any is). */
  sending = 0;
  private knownCapacityWh?: number;

  constructor(
    private readonly member: GroupMember,
    settings: Pick<RegulatorSettings, 'minPower' | 'chargeSoc' | 'dischargeSoc' | 'leash'>,
    private readonly ctx: UnitContext,
  ) {
    this.id = member.id;
    this.knownCapacityWh = member.capacityWh;
    this.plant = 'apply' in member.session ? member.session : new DevicePlant(member.session, settings);
  }

  get capacityWh(): number {
    return this.knownCapacityWh ?? UNKNOWN_CAPACITY_WH;
  }

  /**
   * Out of the split: left out, or its last request failed. A failed request is immediate evidence (a unit switched off
   * answers nothing): its share goes to the others at once, not only once unitHealth leaves it out.
   */
  isOut(now: number): boolean {
    return this.failing === true || this.isLeftOut(now);
  }

  isLeftOut(now: number): boolean {
    return isLeftOut(this.health, now);
  }

  /** A left-out unit is not steered; one that falls short but still moves gets a standby. */
  notSteered(now: number): boolean {
    return this.isLeftOut(now) && (this.setpointW === 0 || this.health?.reason === 'unreachable');
  }

  /** Its part of the group's setpoint as the regulator knows it: the share a pulse leads to, not the pulse. */
  share(): number {
    return this.pulse?.final ?? this.sent?.watts ?? this.setpointW;
  }

  /** Commanded to rest, and its last read shows it there. */
  atRest(now: number): boolean {
    return this.setpointW === 0 && Math.abs(this.model.fresh(now)?.watts ?? Infinity) <= SPLIT_DEFAULTS.idleW;
  }

  report(now: number): UnitReport {
    return {
      device: this.id,
      setpoint: this.setpointW,
      delivered: this.model.lastW,
      soc: this.soc ?? null,
      active: this.setpointW !== 0,
      leftOut: this.isLeftOut(now) ? this.health!.reason! : false,
      reason: this.reason,
    };
  }

  /** Its plant's working mode, and its rated capacity where it was not given (the balance weighs by energy). */
  async learn(): Promise<void> {
    const { session } = this.member;
    const capacity = async () => {
      if (this.knownCapacityWh === undefined && !('apply' in session)) this.knownCapacityWh = await ratedCapacityWh(session);
    };
    await Promise.all([this.plant.learn(), capacity()]);
  }

  /** The unit as the split sees it now, with the charge and discharge SOC of the total. */
  splitView(now: number, chargeSoc: number, dischargeSoc: number): GroupUnit {
    const fresh = this.model.fresh(now);
    return {
      id: this.id,
      maxChargeW: this.plant.limits.chargeLimit,
      maxDischargeW: this.plant.limits.dischargeLimit,
      capacityWh: this.capacityWh,
      // Not read yet: in the middle, so that it neither leads nor is shut out.
      soc: this.soc ?? (chargeSoc + dischargeSoc) / 2,
      chargeSoc,
      dischargeSoc: this.dischargeSoc ?? dischargeSoc,
      leftOut: this.isOut(now),
      // A unit being sent a setpoint stages as that one: a unit handed over and not yet answering counted as
      // active and kept a third unit in (and the one handed over) at a total one unit carries.
      setpointW: this.sent?.watts ?? this.setpointW,
      // A reading shows a command only after the unit's response and its own age.
      ...(fresh
        ? {
            deliveredW: fresh.watts,
            headingW: this.model.heading(this.setpointW, now),
            responseMs: now - fresh.at + SPLIT_DEFAULTS.responseMs,
          }
        : {}),
    };
  }

  /**
   * Its share of a split (`pulsed`: the plant's own re-split, where a unit that joins gets its pulse; `grows`: a unit
   * left, and one whose share grows by much gets its pulse too); a failure counts against its health and is given
   * back, not thrown.
   */
  async send(
    share: number,
    options: SendOptions,
    pulsed: boolean,
    grows: boolean,
    room: FloorRoom,
  ): Promise<PlantOutcome | { error: unknown }> {
    // A pulse under way ends on the newest share of the same way (its follow-up sends it, unless closed) where it keeps
    // the floor; any other share goes now.
    const running = this.pulse;
    if (running && !this.ctx.closed() && Math.sign(share) === Math.sign(running.final) && within(room, share, running.value)) {
      running.final = share;
      return { superseded: false, watts: share };
    }
    this.endPulse();
    const value = pulsed ? this.handOverPulse(share, grows, room) : undefined;
    // In force before its answer: the sum told never holds the pulse.
    const pulse = value === undefined ? undefined : unitPulse(value, share);
    this.pulse = pulse;
    const outcome = await this.sendNow(value ?? share, options);
    if (!pulse || this.pulse !== pulse) return outcome;
    if ('error' in outcome || outcome.superseded || this.ctx.closed()) this.endPulse();
    // The pulse acts from when its request left until its share's does (the same dead time): one slot, as sized.
    else pulse.timer = setTimeout(() => void this.followPulse(pulse), Math.max(0, outcome.leftAt + this.ctx.slotMs() - this.ctx.now()));
    return outcome;
  }

  /**
   * The setpoint that brings a joining unit (idle or the other way) to `share` one slot after it acts, by its learned
   * lag (handOverSetpoint()): undefined for a small share, a unit whose lag is not known yet or one already moving this
   * way (unless its share `grows` by HAND_OVER_MIN_W or more).
   */
  private handOverPulse(share: number, grows: boolean, room: FloorRoom): number | undefined {
    const { lagMs } = this.model;
    if (lagMs === undefined || Math.abs(share) < HAND_OVER_MIN_W) return undefined;
    const moving = Math.sign(this.setpointW) === Math.sign(share);
    if (moving && !grows) return undefined;
    const now = this.ctx.now();
    const power = this.model.heading(this.setpointW, now) ?? 0;
    if ((share - power) * Math.sign(share) < (moving ? HAND_OVER_MIN_W : 1)) return undefined;
    return handOverSetpoint(share, power, this.ctx.slotMs(), lagMs, this.plant.limits, room);
  }

  /** A pulse's share once the pulse has run its slot; a newer share of the same way that came meanwhile follows it. */
  private async followPulse(pulse: UnitPulse): Promise<void> {
    let sent: number | undefined;
    while (!this.ctx.closed() && this.pulse === pulse && pulse.final !== sent) {
      sent = pulse.final;
      await this.sendNow(sent, { urgent: true, soc: this.ctx.soc(), onStart: () => pulse.follow() });
    }
    if (this.pulse === pulse) this.pulse = undefined;
    pulse.follow();
  }

  /** An exit with keep: a pulse in force ends on its share, the setpoint needed, at once. */
  async keep(): Promise<void> {
    const pulse = this.pulse;
    if (!pulse) return;
    this.endPulse();
    await this.sendNow(pulse.final, { urgent: true, soc: this.ctx.soc(), onStart: () => undefined });
  }

  endPulse(): void {
    clearTimeout(this.pulse?.timer);
    this.pulse?.follow();
    this.pulse = undefined;
  }

  /** The controller closes: the pulse's timer stops; the pulse stays in force as far as is known. */
  close(): void {
    clearTimeout(this.pulse?.timer);
    this.pulse?.follow();
  }

  /** Back to the device's self-consumption, after the unit's requests under way. */
  async handBack(): Promise<void> {
    await Promise.allSettled([...this.applying]);
    await this.plant.selfConsumption();
  }

  /** One request to the unit; `leftAt`: when it left (or was answered, where no request went). */
  private async sendNow(share: number, options: SendOptions): Promise<(PlantOutcome & { leftAt: number }) | { error: unknown }> {
    this.sending++;
    const sent = { watts: share };
    this.sent = sent;
    // The unit may carry the setpoint out from when its request left: its dead time counts from there (from the
    // answer, the lag fitted to a unit answering in 0.4 s came out a third short).
    let leftAt: number | undefined;
    const onStart = () => {
      leftAt = this.ctx.now();
      options.onStart();
    };
    let applied: Promise<PlantOutcome> | undefined;
    try {
      applied = this.plant.apply(share, { ...options, onStart });
      this.applying.add(applied);
      const outcome = await applied;
      // Answered again: back in the split. Only a request that went counts: a failing unit's write replaced in its queue
      // (or a repeat the plant did not send) brought a switched-off unit back at each split, and the total back to it.
      const answered = leftAt !== undefined && !outcome.superseded;
      leftAt ??= this.ctx.now();
      if (!outcome.superseded) this.acknowledged(outcome.watts, leftAt, this.ctx.now());
      if (this.failing && answered) this.observe(true);
      return { ...outcome, leftAt };
    } catch (error) {
      this.failed(error);
      return { error };
    } finally {
      this.sending--;
      if (applied) this.applying.delete(applied);
      if (this.sent === sent) this.sent = undefined;
    }
  }

  /** `startAt`: when its request left (or was answered, where none went); `ackAt`: when it was answered. */
  acknowledged(watts: number, startAt: number, ackAt: number): void {
    if (watts !== this.setpointW) {
      this.since = startAt;
      this.model.acknowledged(watts, startAt, ackAt);
    }
    this.setpointW = watts;
  }

  /** Its read for the group (a pulse's follow-up goes first); `onStart` when its request leaves. */
  async read(withMeter: boolean, options: { signal?: AbortSignal; onStart: () => void }): Promise<PlantReading> {
    await this.pulse?.followed;
    options.signal?.throwIfAborted();
    return this.plant.read(withMeter, { signal: options.signal, onStart: options.onStart });
  }

  /** A read of the group's answered (`at`: when its request left). */
  took(reading: PlantReading, at: number): void {
    if (reading.soc !== undefined) this.soc = reading.soc;
    this.dischargeSoc = reading.dischargeSoc ?? this.dischargeSoc;
    this.leashWh = reading.leashWh ?? this.leashWh;
    if (reading.battery !== undefined) this.model.read(reading.battery, at);
    this.observe(true, reading.battery);
  }

  /** A request or read failed. */
  failed(error: unknown): void {
    this.observe(false);
    this.ctx.failure?.(this.id, error);
  }

  /** Its battery power alone (a reversal's watch), its health untouched; a failed read is let be. */
  watchRead(): Promise<void> {
    let left: number | undefined;
    return this.plant.read(false, { onStart: () => (left = this.ctx.now()) }).then(
      (reading) => {
        if (reading.battery !== undefined) this.model.read(reading.battery, left ?? this.ctx.now());
      },
      () => undefined,
    );
  }

  /** Its health after a request; out or back, the centre is told. */
  private observe(reachable: boolean, deliveredW?: number): void {
    const now = this.ctx.now();
    const was = this.isOut(now);
    this.failing = !reachable;
    this.health = unitHealth(
      this.health,
      { nowMs: now, reachable, commandedW: this.setpointW, commandedSinceMs: this.since, deliveredW, settleMs: SPLIT_DEFAULTS.settleMs },
      this.ctx.health,
    );
    if (this.isOut(now) === was) return;
    if (!was) this.reason = 'left out';
    this.ctx.outChanged(was, now);
  }
}
