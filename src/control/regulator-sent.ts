/**
 * What the regulator sent: the setpoint the device acknowledged, the one it stands behind, the one in flight, the
 * overdrive (pulse) in force, and the gaps the device's queue gave a follow-up.
 *
 * Written by the regulator's facade only: record() with a reading's decision, recordFollowUp() with a pulse's,
 * pulseFloor()/endPulse() as a reading, a rest or a time-out says, started()/acknowledge()/failed() from the actuator,
 * renew() and exitTo() (both send()), restart()/handedBack() when the battery moved by itself or was handed back.
 * Read by the facade and, as plain data, by the decisions. Invariants: at most one setpoint in flight (`pending`);
 * `stands` is never a pulse's value; a pulse in force has a final value the regulator stands behind (`steady`).
 */
import { UNSEEN_SLOT_MARGIN_MS } from './pulse';
import type { Intent } from './regulator-decide';
import type { FollowUp, Pulse } from './regulator-pulse';

/** Gaps remembered: the pulse is sized for the longest of them, so that a late return cannot overshoot. */
const SLOTS_KEPT = 4;
/** A setpoint decided within this long (ms) after the last acknowledgement was sent at once. */
const AT_ONCE_MS = 50;

/** A setpoint decided and not yet acknowledged; `startAt` once its request left; `steady`: no pulse's value. */
type Pending = { value: number; decidedAt: number; startAt?: number; steady: boolean };

export class SentCommands {
  /** The acknowledged setpoint; undefined when not known (at start, after a hand-back). */
  private acknowledgedValue: number | undefined;
  /** The last acknowledged setpoint that was no pulse's value: what an exit leaves unless a pulse is heading on. */
  private stands: number | undefined;
  private pending: Pending | undefined;
  /** The overdrive under way, if any. */
  private pulseInForce: Pulse | undefined;
  /** Gaps (ms) seen between a setpoint's request and the next one's, when the next was sent at once. */
  private slots: number[] = [];
  private followingUp = false;
  private lastAckAt = -Infinity;

  get acknowledged(): number | undefined {
    return this.acknowledgedValue;
  }

  /** The setpoint the regulator stands behind: a pulse's final value, or the last steady one. */
  get steady(): number | undefined {
    if (this.pulseInForce) return this.pulseInForce.final;
    return this.pending?.steady ? this.pending.value : this.stands;
  }

  get steering(): boolean {
    return this.acknowledgedValue !== undefined || this.pending !== undefined;
  }

  get inFlight(): boolean {
    return this.pending !== undefined;
  }

  get moving(): boolean {
    return this.pending !== undefined || this.pulseInForce !== undefined;
  }

  /** `value` goes out, decided at `now`; `steady`: it is no pulse's value. */
  send(value: number, now: number, steady: boolean): void {
    this.pending = { value, decidedAt: now, steady };
  }

  /** What a reading's decision (src/control/regulator-decide.ts) sends, starts and ends, decided at `now`. */
  record(intent: Intent, now: number): void {
    // A setpoint moved of its own, whether it is sent or held: a follow-up's gap no longer shows the queue's pace.
    if (intent.ownMove) this.followingUp = false;
    if (intent.endsPulse) this.pulseInForce = undefined;
    if (intent.startsPulse) this.pulseInForce = intent.startsPulse;
    if (intent.behind !== undefined) this.stands = intent.behind;
    if (intent.action === 'set') this.send(intent.setpoint!, now, intent.steady!);
  }

  /** The overdrive under way, if any (read only: the methods here change it). */
  get pulse(): Readonly<Pulse> | undefined {
    return this.pulseInForce;
  }

  /** The overdrive ends (a rest, a time-out, a unit that left, no history to run on). */
  endPulse(): void {
    this.pulseInForce = undefined;
  }

  /** A reading's load sets the floor of the pulse in force (its follow-up is due by time). */
  pulseFloor(floor: number): void {
    this.pulseInForce!.floor = floor;
  }

  /**
   * A pulse's follow-up goes out at `now`: the pulse ends on it, or goes on at most as far past its value. Its gap from
   * the setpoint before shows the queue's pace only when it was asked for as that one was acknowledged.
   */
  recordFollowUp(next: FollowUp, now: number): void {
    if (next.ends) this.pulseInForce = undefined;
    else this.pulseInForce!.bound = next.bound;
    this.send(next.value, now, next.ends);
    this.followingUp = now - this.lastAckAt <= AT_ONCE_MS;
  }

  /** The longest gap seen from one setpoint's request to the next one's when sent at once. */
  slotMs(requestIntervalMs = 1000): number {
    return this.slots.length ? Math.max(...this.slots) : requestIntervalMs + UNSEEN_SLOT_MARGIN_MS;
  }

  /** The request of the setpoint in flight left at `now`; `lastStartAt`: when the last acknowledged one's left. */
  started(now: number, lastStartAt: number | undefined): void {
    if (!this.pending) return;
    this.pending.startAt = now;
    if (this.followingUp && lastStartAt !== undefined) {
      this.slots.push(now - lastStartAt);
      if (this.slots.length > SLOTS_KEPT) this.slots.shift();
    }
  }

  /** When `value`, acknowledged at `now`, may have been carried out from: its request's departure if it was ours. */
  startOf(value: number, now: number): number {
    return this.pending?.value === value ? (this.pending.startAt ?? this.pending.decidedAt) : now;
  }

  /** The device acknowledged `value` at `now`: another writer's is the last command, a pulse of ours ends there. */
  acknowledge(value: number, now: number): void {
    const own = this.pending?.value === value;
    if (!own) this.pulseInForce = undefined;
    if (!own || this.pending!.steady) this.stands = value;
    this.lastAckAt = now;
    this.pending = undefined;
    this.acknowledgedValue = value;
  }

  /** Not acknowledged: after an error a pulse's final value follows (once); replaced by another writer's, nothing. */
  failed(replaced: boolean): void {
    this.pending = undefined;
    if (this.pulseInForce && !replaced) this.pulseInForce.failed = true;
    else this.pulseInForce = undefined;
  }

  /** The setpoint in force again, in flight; undefined while another is in flight, a pulse runs, or none is in force. */
  renew(now: number): number | undefined {
    const value = this.acknowledgedValue;
    if (value === undefined || this.moving) return undefined;
    this.send(value, now, value === this.stands);
    return value;
  }

  /** An exit: the pulse ends; where one may be in force, the setpoint it was heading to goes out (returned). */
  exitTo(now: number): number | undefined {
    const steady = this.steady;
    const atPulse = this.pulseInForce !== undefined || (this.pending ? !this.pending.steady : this.acknowledgedValue !== this.stands);
    this.pulseInForce = undefined;
    if (!atPulse || steady === undefined) return undefined;
    this.send(steady, now, true);
    return steady;
  }

  /** The device moved by itself: the setpoint it holds stays, nothing is in flight or pulsing. */
  restart(): void {
    this.pending = undefined;
    this.pulseInForce = undefined;
  }

  /** The battery was handed back (self-consumption): no setpoint is in force. */
  handedBack(): void {
    this.restart();
    this.acknowledgedValue = undefined;
    this.stands = undefined;
  }
}
