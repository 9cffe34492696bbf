/**
 * The zero feed-in controller's actuator (src/control/zero-feed-in.ts): sends the regulator's intent through the plant,
 * and keeps what was sent true: an overdrive's follow-up at once after its answer, the writes of others in this
 * process followed, a command the device dropped (a restart, a reconnect) sent again, the leash's SOC renewed.
 *
 * Holds: when this controller's last write was acknowledged (or another writer's was followed), and the check whether
 * the device still holds its command (under way, when the last began, the setpoint last sent again blind). Written by:
 * this actuator as its writes are answered; the exits tell it of their hand-back to self-consumption (wrote). Read by:
 * nobody else; the regulator learns each write's start, answer or failure from here. Invariants: a send never rejects;
 * a failed or superseded write is the regulator's to know (failed); at most one command check at a time, and one per
 * write; a setpoint is sent again blind at most once.
 */
import type { BatteryPlant } from './device-plant';
import type { Decision, Regulator } from './regulator';
import type { ControllerVoice } from './zero-feed-in-voice';
import type { ReadSchedule } from './zero-feed-in-reads';

/** How long before its acknowledgement a write may have been carried out (the specification's response time). */
const ANSWER_MS = 1000;

export interface ActuatorParts {
  regulator: Regulator;
  plant: BatteryPlant;
  now: () => number;
  voice: ControllerVoice;
  reads: ReadSchedule;
  minPower: number;
  closed: () => boolean;
  /** Closed or a hand-back under way: no follow-up then. */
  resting: () => boolean;
  /** The regulator steers the battery now (normal or hold, on, no hand-back under way). */
  regulating: () => boolean;
  /** The mode's bound on a setpoint (hold: no discharge). */
  bound: (setpoint: number) => number;
  /** The hand-back to self-consumption, tracked by the exits. */
  selfConsumption: () => Promise<unknown>;
  /** After a new mode's first decision, its setpoint (`sent`) answered: grid charging goes back (see ModeRoom). */
  afterSent: (sent?: Promise<unknown>) => void;
}

export class Actuator {
  /** When this controller's last write was acknowledged (performance.now(), as the queue's known values). */
  private ownWriteAt = -Infinity;
  /** A check whether the device still holds its command is under way; when the last began (see checkCommand()). */
  private checking = false;
  private checkedAt = -Infinity;
  /** The setpoint last sent again where nothing told whether the device had dropped it: once is enough. */
  private resentBlind: number | undefined;
  /** The last setpoint sent was a deadbeat's pulse (it ends with the next reading's setpoint). */
  private overdriven = false;

  constructor(private readonly parts: ActuatorParts) {}

  /** Carries out a decision of the regulator, within the mode's bound; `urgent`: ahead of waiting reads. */
  act(decision: Decision, urgent = false): void {
    const { bound, voice } = this.parts;
    // The mode's bound, whatever the regulator decided (hold: no discharge).
    if (decision.action === 'set') decision = { ...decision, setpoint: bound(decision.setpoint!) };
    voice.decision(decision);
    let sent: Promise<unknown> | undefined;
    if (decision.action === 'set') {
      // An overdrive heads to its steady setpoint, bounded by the mode like the pulse.
      const overdrive = decision.reason === 'overdrive';
      const steady = overdrive && decision.steady !== undefined ? bound(decision.steady) : undefined;
      // A reading's setpoint after a deadbeat's pulse ends it, as a last follow-up ends a pulse of one slot.
      const endsPulse = this.overdriven && !overdrive;
      this.overdriven = overdrive && !this.parts.regulator.followsUp;
      sent = this.send(decision.setpoint!, urgent, undefined, steady, false, endsPulse);
    } else if (decision.action === 'standby') sent = this.send(0);
    else if (decision.action === 'self-consumption') sent = this.parts.selfConsumption();
    this.parts.afterSent(sent);
  }

  /**
   * Sends a setpoint (W, signed); the regulator learns when it left and whether the device acknowledged it, and an
   * overdrive's next setpoint follows at once, ahead of waiting reads (`urgent`). Never rejects.
   */
  async send(watts: number, urgent = false, soc?: number, steady?: number, force = false, endsPulse = false): Promise<boolean> {
    const { regulator, plant, now, voice } = this.parts;
    this.parts.reads.yieldRead();
    try {
      const outcome = await plant.apply(watts, { urgent, soc, steady, force, onStart: () => regulator.started(now()) });
      if (outcome.superseded) regulator.failed(true);
      else regulator.acknowledge(outcome.watts, now());
      if (outcome.modeRestored) this.warnDropped(outcome.watts);
      this.ownWriteAt = now();
      if (!this.parts.closed()) voice.changed();
    } catch (error) {
      regulator.failed();
      voice.failure(error);
      this.followUp();
      return false;
    }
    // An overdrive ended on its needed setpoint: the battery is answering now, and a read shows one that falls short
    // before the next moves wind the setpoint up (a loop that moves at every reading leaves no slot after a hold).
    if (!this.followUp() && (urgent || endsPulse)) this.parts.reads.afterPulse();
    return true;
  }

  /** An overdrive's next setpoint, at once after the last one's answer; whether there was one. */
  followUp(): boolean {
    if (this.parts.resting()) return false;
    const next = this.parts.regulator.followUp(this.parts.now());
    if (next) this.act(next, true);
    return next !== undefined;
  }

  /** This controller wrote now (a hand-back). */
  wrote(): void {
    this.ownWriteAt = this.parts.now();
  }

  /**
   * Another writer in this process (a control or write node, a dashboard button) changed the setpoint or the working
   * mode since this controller's last write: that is the state now, and the next reading steers from it.
   */
  followOthers(): void {
    const { regulator, plant } = this.parts;
    const other = plant.othersWrote(this.ownWriteAt);
    if (!other) return;
    this.ownWriteAt = other.at;
    // Handed back by another: only a controller that steers has a state to drop (at the start, the read of 6000 stands).
    if (other.handedBack) {
      if (regulator.steering) regulator.handedBack();
    } else if (other.watts !== undefined) {
      // Carried out when it arrived, up to an answer time before it was acknowledged.
      regulator.acknowledge(other.watts, other.at, other.at - ANSWER_MS);
    }
  }

  /** The SOC moved the leash of the command in force: the setpoint goes again, with its new SOC field. */
  renewLeash(): void {
    if (!this.parts.plant.leashMoved?.()) return;
    const value = this.parts.regulator.renew(this.parts.now());
    if (value !== undefined) void this.send(value);
  }

  /**
   * A battery far short of its setpoint after the ramp (the regulator's shortfall) may have dropped its command (a
   * restart or a reconnect: working mode 1, or standby). Once per setpoint acknowledged, the working mode and the
   * command's read-back are read; where the device dropped it, the setpoint goes again (the mode first), said once.
   * Where nothing tells (no read-back, mode 4), it goes again once where the battery rests. A derated battery that holds
   * it falls short on. A setpoint in flight meanwhile goes with the mode switch itself (the read of 7101 told the
   * device state).
   */
  checkCommand(): void {
    const { plant, regulator, now } = this.parts;
    const holdsCommand = plant.holdsCommand?.bind(plant);
    if (!holdsCommand || this.checking || regulator.shortfall === undefined) return;
    if (this.checkedAt >= this.ownWriteAt) return;
    this.checking = true;
    this.checkedAt = now();
    void holdsCommand()
      .then((holds) => {
        const { setpoint, shortfall } = regulator;
        // Nothing tells: only a battery at rest (standby) looks dropped; a derated one still gives some power.
        const resting = Math.abs(shortfall ?? 0) < this.parts.minPower;
        if (holds === true || !this.parts.regulating() || (holds === undefined && (this.resentBlind === setpoint || !resting))) return;
        const value = regulator.renew(now());
        if (value === undefined) return;
        this.resentBlind = holds === undefined ? value : undefined;
        if (holds === false) this.warnDropped(value);
        return this.send(value, true, undefined, undefined, true);
      })
      .catch((error: unknown) => this.parts.voice.failure(error))
      .finally(() => (this.checking = false));
  }

  /** The device dropped its command and was steered again: said once. */
  private warnDropped(setpoint: number): void {
    if (!this.parts.closed()) this.parts.voice.warnOnce('commandDropped', { setpoint });
  }
}
