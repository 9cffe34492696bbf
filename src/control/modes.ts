/**
 * Battery modes without Node-RED: a policy above the zero feed-in regulator, as tariff flows (evcc, power-saver) drive
 * a battery. *normal*: zero feed-in. *hold*: never discharge (a surplus still charges): the regulator keeps steering
 * with its discharge bound at 0, so it neither discharges nor winds up. *charge*: from the grid at a set power up to a
 * set SOC, with grid charging switched on for it; at that SOC the battery stands by. *standby*: setpoint 0. In charge
 * and standby the mode sets the setpoint itself and the regulator rests. The controller (src/control/zero-feed-in.ts)
 * asks this file what a mode makes of a decision and of the battery's state; with several devices it applies to the
 * group's total.
 */
import { ValidationError } from '../errors';

export const BATTERY_MODES = ['normal', 'hold', 'charge', 'standby'] as const;
export type BatteryMode = (typeof BATTERY_MODES)[number];

/** What the charge mode charges with (W, positive) and up to (SOC, %). */
export interface ChargeMode {
  power: number;
  soc: number;
}

/** After the charge mode reached its SOC, it charges again only once the SOC fell this far below it (%): no flutter. */
export const CHARGE_RESUME_PCT = 3;

/** The modes in words, for errors and help. */
export const MODES_ALLOWED = `one of ${BATTERY_MODES.map((mode) => JSON.stringify(mode)).join(', ')}`;

/** A mode from a message or a setting; a ValidationError naming `field` and the allowed values for anything else. */
export function parseMode(value: unknown, field: string): BatteryMode {
  const word = typeof value === 'string' ? value.trim().toLowerCase() : undefined;
  const mode = BATTERY_MODES.find((m) => m === word);
  if (!mode) throw new ValidationError(field, value, MODES_ALLOWED);
  return mode;
}

/** Whether the regulator steers in `mode` (normal, hold); in charge and standby the mode sets the setpoint. */
export function regulated(mode: BatteryMode): boolean {
  return mode === 'normal' || mode === 'hold';
}

/** The regulator's discharge bound in `mode` (W): hold allows none, so nothing winds up against it. */
export function dischargeBound(mode: BatteryMode, maxDischarge: number): number {
  return mode === 'hold' ? 0 : maxDischarge;
}

/** What a regulator's setpoint (W, signed like 6000: positive discharges) becomes in `mode`. */
export function modeSetpoint(mode: BatteryMode, setpoint: number): number {
  return mode === 'hold' ? Math.min(0, setpoint) : setpoint;
}

/** A setpoint a mode sets itself: W (signed like 6000), the SOC it carries (charge), and why. */
export interface FixedSetpoint {
  watts: number;
  soc?: number;
  reason: 'mode' | 'soc';
}

/**
 * The setpoint of charge or standby from the SOC (undefined: not known yet, then the device's own stop at the SOC
 * counts). `charging`: whether the mode charges towards its SOC (from the mode's start until the SOC is reached); false
 * once it stood by at the SOC, when the resume margin holds.
 */
export function fixedSetpoint(mode: 'charge' | 'standby', charge: ChargeMode, soc: number | undefined, charging: boolean): FixedSetpoint {
  if (mode === 'standby') return { watts: 0, reason: 'mode' };
  const stopAt = charging ? charge.soc : charge.soc - CHARGE_RESUME_PCT;
  if (soc !== undefined && soc >= stopAt) return { watts: 0, reason: 'soc' };
  return { watts: -charge.power, soc: charge.soc, reason: 'mode' };
}

/**
 * What to send at once on entering `mode`, from the setpoint the regulator stands behind (`steady`, a pulse's final
 * value where one is under way): hold leaves no discharge; normal sends nothing (its next reading decides); charge
 * and standby their own setpoint (see fixedSetpoint).
 */
export function entrySetpoint(mode: BatteryMode, steady: number | undefined): number | undefined {
  if (mode !== 'hold' || steady === undefined) return undefined;
  return modeSetpoint(mode, steady);
}

/** Whether `mode` wants the device's grid charging on (charge), so that the battery may charge from the grid. */
export function wantsGridCharging(mode: BatteryMode): boolean {
  return mode === 'charge';
}
