/**
 * The exits of the zero feed-in controller (src/control/zero-feed-in.ts): what a disable, a close or a meter that
 * cannot be right leaves the battery in (On stop: standby, self-consumption, or keep what was needed).
 *
 * Holds: whether the controller is closed, and the work under way that readings wait for: the hand-backs, and normal's
 * read after a rest (see ModeRoom). Written by: the controller (enable off, close, a meter fault), the actuator (a
 * time-out's hand-back) and the mode room through track(); each piece of work leaves the set as it settles. Read by:
 * every room (closed, handing): nothing steers while a hand-back is under way, and nothing is said or started after the
 * close. Invariants: closed never goes back; a close waits for the work under way rather than racing it; only a
 * controller that steers hands anything back.
 */
import type { BatteryPlant } from './device-plant';
import type { MeterFault } from './meter-check';
import type { Regulator } from './regulator';
import type { ControllerVoice } from './zero-feed-in-voice';
import type { OnStop } from './zero-feed-in-config';

export interface ExitsParts {
  regulator: Regulator;
  plant: BatteryPlant;
  now: () => number;
  voice: ControllerVoice;
  onStop: OnStop;
  /** The actuator's send (never rejects). */
  send: (watts: number, urgent?: boolean) => Promise<boolean>;
  /** The hand-back to self-consumption was this controller's own write. */
  wrote: () => void;
  /** Records a meter fault; false where one was recorded already. */
  faultFound: (fault: MeterFault) => boolean;
}

export class Exits {
  private isClosed = false;
  private readonly underWay = new Set<Promise<unknown>>();

  constructor(private readonly parts: ExitsParts) {}

  get closed(): boolean {
    return this.isClosed;
  }

  /** A hand-back (or normal's read after a rest) is under way: readings wait for it. */
  get handing(): boolean {
    return this.underWay.size > 0;
  }

  track<T>(work: Promise<T>): Promise<T> {
    this.underWay.add(work);
    void work.finally(() => this.underWay.delete(work));
    return work;
  }

  /** Turned off: the battery is left as On stop says (with keep: the needed setpoint). */
  disable(): void {
    void this.track(this.handBack(this.parts.onStop));
  }

  /** Closed from now on; resolves once the work under way has settled and the battery was left as On stop says. */
  close(): Promise<void> {
    this.isClosed = true;
    return Promise.all([...this.underWay]).then(() => (this.parts.regulator.enabled ? this.handBack(this.parts.onStop) : undefined));
  }

  /**
   * Leaves the battery as `how` says (keep: the setpoint a pulse was heading to, where one may be in force); resolves
   * when the device has it (or it failed). Only a controller that steers acts. Never rejects.
   */
  async handBack(how: OnStop): Promise<void> {
    const { regulator, plant, now, voice } = this.parts;
    if (!regulator.steering) return;
    try {
      if (how === 'keep') {
        const steady = regulator.exit(now());
        if (steady) {
          voice.decision(steady);
          await this.parts.send(steady.setpoint!, true);
        }
        await plant.keep?.();
      } else if (how === 'self-consumption') {
        await plant.selfConsumption();
        this.parts.wrote();
        regulator.handedBack();
      } else {
        await this.parts.send(0);
      }
    } catch (error) {
      voice.failure(error);
    }
  }

  /**
   * The meter cannot be right: the loop stops (it is off until enabled again), a battery it steered stands by, then is
   * left as On stop says (keep: standby, the setpoint it needed came from that meter).
   */
  stopForMeter(fault: MeterFault): void {
    const { regulator, now, voice } = this.parts;
    if (this.closed || !this.parts.faultFound(fault)) return;
    const steered = regulator.steering;
    regulator.enable(false, now());
    voice.meterFault(fault);
    voice.changed();
    if (!steered) return;
    void this.track(
      this.parts.send(0, true).then(() => (this.parts.onStop === 'self-consumption' ? this.handBack('self-consumption') : undefined)),
    );
  }
}
