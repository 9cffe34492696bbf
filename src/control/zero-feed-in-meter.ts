/**
 * The zero feed-in controller's meter input (src/control/zero-feed-in.ts): grid readings from messages (in the
 * meter's sign and unit, converted here) or from the device's own meter, the repeats of a meter that publishes only on
 * change, and the meter check (src/control/meter-check.ts: a wrong sign, kW given as W, a frozen or missing meter).
 *
 * Holds: the last reading from a message, when the regulator last took a reading, the meter check and the fault it
 * found. Written by: the controller as readings come (given, taken) and as the loop is enabled again (resume,
 * enabledAgain); the exits record a fault (faultFound). Read by: the controller (fault, repeat, heard), the mode room
 * (heard: normal's first decision after a rest). Invariants: a fault stays until the loop is enabled again, and the
 * check starts over then; every call into MeterCheck is made here.
 */
import { MeterCheck, PROBE_W, meterWatts, type MeterFault } from './meter-check';
import type { Decision, Regulator, RegulatorSettings } from './regulator';
import type { ControllerVoice } from './zero-feed-in-voice';
import type { ZeroFeedInConfig } from './zero-feed-in-config';

/** The device's meter refreshes this often (BK1600 Ultra, EMS V2.00.02): its reading may be this much older. */
const DEVICE_METER_REFRESH_S = 3;
/** With a meter that publishes only on change, the regulator times out this many intervals after the last repeat. */
const REPEATS_MISSED = 2;

/** A meter from messages that publishes only on change: its silence is taken as "unchanged". */
const repeats = (config: ZeroFeedInConfig) => config.meterSource === 'message' && config.meterSends === 'on-change';

/** The regulator's settings for this meter, with `requestIntervalMs` the plant's. */
export function meterRegulatorSettings(config: ZeroFeedInConfig, requestIntervalMs: number): RegulatorSettings {
  // The device's meter may be up to its refresh older than the battery power read with it: a longer meter delay.
  const slow = { ...config.regulator.slow };
  if (config.meterSource === 'device') slow.meterDelayS += DEVICE_METER_REFRESH_S;
  // The device's meter repeats its sample between refreshes: a repeat is no news.
  const heldMeter = config.meterSource === 'device';
  const meterTimeoutMs = repeats(config) ? REPEATS_MISSED * config.meterIntervalMs : config.regulator.meterTimeoutMs;
  return { ...config.regulator, slow, meterTimeoutMs, requestIntervalMs, heldMeter };
}

export interface MeterParts {
  regulator: Regulator;
  config: ZeroFeedInConfig;
  now: () => number;
  voice: ControllerVoice;
  /** The mode's bound on a setpoint (hold: no discharge). */
  bound: (setpoint: number) => number;
}

export class MeterInput {
  private readonly check: MeterCheck;
  private found: MeterFault | undefined;
  /** The last reading from a message, and when the regulator last took a reading (a message's, or its repeat). */
  private lastHeard: { grid: number; at: number } | undefined;
  private takenAt = -Infinity;

  constructor(private readonly parts: MeterParts) {
    this.check = new MeterCheck(parts.config.meterSource === 'device');
  }

  /** Why the meter cannot be right, where it was found so. */
  get fault(): MeterFault | undefined {
    return this.found;
  }

  /** The last reading from a message (W, positive importing) and when it came. */
  get heard(): { grid: number; at: number } | undefined {
    return this.lastHeard;
  }

  /** Records a fault; false where one was found already. */
  faultFound(fault: MeterFault): boolean {
    if (this.found) return false;
    this.found = fault;
    return true;
  }

  /** Enabled again after a meter fault: the owner fixed the meter (or its settings), the check starts over. */
  enabledAgain(): void {
    if (!this.found) return;
    this.found = undefined;
    this.check.reset();
  }

  /** A reading from a message, in the meter's sign and unit: in W, positive importing. */
  given(given: number): number {
    const grid = meterWatts(given, this.parts.config.meterSign, this.parts.config.meterUnit);
    this.lastHeard = { grid, at: this.parts.now() };
    return grid;
  }

  /** Back on: a meter that sends on change was silent meanwhile, its silence counts from now. */
  resume(): void {
    if (this.lastHeard) this.lastHeard = { ...this.lastHeard, at: this.parts.now() };
  }

  /** A battery power given with a reading: undefined where the battery cannot be giving it (said once). */
  plausible(battery: number | undefined): number | undefined {
    if (battery === undefined || this.parts.regulator.plausibleBattery(battery, this.parts.now())) return battery;
    this.parts.voice.implausibleBattery(battery);
    return undefined;
  }

  /**
   * A meter that publishes only on change is silent while nothing changes: its last reading is taken again each
   * meter interval (the first after one and a half, so a late message is not doubled) while the silence is shorter than
   * the meter time-out less one interval. The regulator's own time-out is then REPEATS_MISSED intervals: it acts once
   * the repeats have stopped, from the configured time-out after the last message to one interval later. Gives the
   * reading to take again, if due.
   */
  repeat(): number | undefined {
    const { config, regulator, now } = this.parts;
    const heard = this.lastHeard;
    if (!repeats(config) || !heard || !regulator.enabled) return undefined;
    const at = now();
    const every = config.meterIntervalMs;
    const silentMs = at - heard.at;
    const repeatsEnd = config.regulator.meterTimeoutMs - (REPEATS_MISSED - 1) * every;
    return at - this.takenAt >= every && silentMs >= 1.5 * every && silentMs < repeatsEnd ? heard.grid : undefined;
  }

  /** The regulator takes a reading now. */
  taken(): void {
    this.takenAt = this.parts.now();
  }

  /** A reading the regulator did not take (off, handing back, resting): the check's readings are no longer in a row. */
  gap(): void {
    this.check.gap();
  }

  /** The setpoint the loop stands behind (a pulse's final one), or the one the device acknowledged. */
  get commanded(): number | undefined {
    return this.parts.regulator.steady ?? this.parts.regulator.setpoint;
  }

  /** The loop holds while the check's probe shows (see MeterCheck.holding). */
  get holding(): boolean {
    return this.check.holding;
  }

  /** A reading before the regulator decides on it: a probe it answers ends the hold now (MeterCheck.answer). */
  answer(grid: number): MeterFault | undefined {
    return this.check.answer(grid);
  }

  /** The check of a reading the regulator decided on, `held` the setpoint it stood behind before: the fault it shows. */
  verdict(grid: number, decision: Decision, held: number | undefined): MeterFault | undefined {
    return this.check.observe(grid, decision.battery, this.commanded, held);
  }

  /**
   * The check's probe where one is due, within the mode and the bounds: instead of a hold (nothing moving), or of a move
   * the regulator decided where the probe replaces moves (that move is then withdrawn from the regulator).
   */
  probe(decision: Decision): Decision | undefined {
    const { regulator, bound } = this.parts;
    const watts = this.check.probeDue;
    if (watts === undefined) return undefined;
    const idle = decision.action === 'hold' && !regulator.moving;
    const replaces = decision.action === 'set' && this.check.probeReplacesMoves;
    if (!idle && !replaces) return undefined;
    const steady = this.commanded ?? 0;
    const { maxCharge, maxDischarge } = regulator.settings;
    const probe = bound(Math.max(-maxCharge, Math.min(steady + watts, maxDischarge)));
    if (Math.abs(probe - steady) < PROBE_W / 2) return undefined;
    if (replaces) regulator.failed(true);
    this.check.probeSent();
    return { ...decision, action: 'set', setpoint: probe, steady: probe, reason: 'meter check' };
  }

  /** The device's meter read with the battery's power: a frozen meter's repeats are no readings. */
  frozen(meter: number, battery: number | undefined): boolean {
    return this.check.frozen(meter, battery, this.parts.now());
  }
}
