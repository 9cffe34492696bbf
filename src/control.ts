/**
 * Real-time control without Node-RED: turns a payload (one signed number of watts, or {state, power, soc})
 * into the three-value write of 47015, checks it against the catalogue or clamps it into range, decides when
 * a repeated setpoint may be skipped, and when the working mode must be read or switched first.
 */
import { CONTROL_STATES, REAL_TIME, pointByName, validateWrite, writePointByAddress, type WritePoint } from './catalogue';
import { ValidationError } from './errors';
import { decimalNumber } from './numbers';

export type ControlStateName = 'standby' | 'charge' | 'discharge';

const statePoint = writePointByAddress(REAL_TIME.stateAddress)!;
const powerPoint = writePointByAddress(REAL_TIME.powerAddress)!;
const socPoint = writePointByAddress(REAL_TIME.socAddress)!;
const modePoint = writePointByAddress(REAL_TIME.modeAddress)!;

/** The read point that reports the working mode (7101): the write address differs. */
export const WORKING_MODE_READ_ADDRESS = pointByName(modePoint.readAs!)!.address;

function codeOf(label: string): number {
  return CONTROL_STATES.find((option) => option.label === label)!.value;
}

/** Payload words mapped to the device's state codes through the catalogue labels. */
export const STATE_CODES: Readonly<Record<ControlStateName, number>> = {
  standby: codeOf('Standby'),
  charge: codeOf('Charging'),
  discharge: codeOf('Discharging'),
};

const STATE_NAMES = Object.keys(STATE_CODES) as ControlStateName[];

/** Power and SOC bounds of the control write, from the catalogue. */
export const CONTROL_LIMITS = {
  power: { min: powerPoint.min!, max: powerPoint.max! },
  soc: { min: socPoint.min!, max: socPoint.max! },
} as const;

/** Node settings that fill what a payload leaves out. */
export interface ControlOptions {
  /** W, for a state payload without power. */
  power: number;
  /** Target SOC in % when charging. */
  chargeSoc: number;
  /** Floor SOC in % when discharging; also sent with standby. */
  dischargeSoc: number;
  /** Move an out-of-range power or SOC to the nearest bound instead of rejecting it. */
  clamp: boolean;
  /** The device's power limit in W (the client's `limits`); the specification's maximum when not given. */
  powerLimit?: number;
}

/** What the editor offers when a setting is new (the runtime uses them for settings left empty). */
export const CONTROL_DEFAULTS = {
  power: 800,
  chargeSoc: 100,
  dischargeSoc: 10,
  clamp: false,
  repeatSeconds: 30,
  modeCheckSeconds: 600,
} as const;

export interface ControlCommand {
  state: ControlStateName;
  /** 0 standby, 1 charge, 2 discharge (catalogue CONTROL_STATES). */
  code: number;
  power: number;
  soc: number;
  /** Power or SOC was moved into its range. */
  clamped: boolean;
  /** A signed number of watts under the minimum power, sent as standby. */
  belowMinimum: boolean;
}

const PAYLOAD_FORMS =
  `a number of watts (negative: charge, positive: discharge, 0: standby), a state name (${STATE_NAMES.join(', ')}), ` +
  'or an object {state, power, soc}';

/** Whole watts: control loops compute fractions. Anything not numeric is left for validation to reject. */
function wholeWatts(value: unknown): unknown {
  const number = decimalNumber(value);
  return number !== undefined ? Math.round(number) : value;
}

function parseState(value: unknown): ControlStateName {
  const number = decimalNumber(value);
  if (number !== undefined) {
    const name = STATE_NAMES.find((n) => STATE_CODES[n] === number);
    if (name) return name;
  } else if (typeof value === 'string') {
    const word = value.trim().toLowerCase();
    // The words of this node and the catalogue labels ("Charging") both work.
    const name = STATE_NAMES.find((n) => n === word || CONTROL_STATES.find((o) => o.value === STATE_CODES[n])!.label.toLowerCase() === word);
    if (name) return name;
  }
  const allowed = STATE_NAMES.map((n) => `"${n}" or ${STATE_CODES[n]}`).join(', ');
  throw new ValidationError('state', value, allowed);
}

function clampTo(value: unknown, point: WritePoint, max = point.max!): { value: unknown; clamped: boolean } {
  if (typeof value !== 'number' || !Number.isFinite(value)) return { value, clamped: false };
  const bounded = Math.min(max, Math.max(point.min!, value));
  return { value: bounded, clamped: bounded !== value };
}

function maxPower(options: ControlOptions): number {
  return options.powerLimit ?? CONTROL_LIMITS.power.max;
}

function command(state: ControlStateName, power: unknown, soc: unknown, options: ControlOptions, belowMinimum = false): ControlCommand {
  let clamped = false;
  if (options.clamp) {
    const p = clampTo(decimalNumber(power) ?? power, powerPoint, maxPower(options));
    const s = clampTo(decimalNumber(soc) ?? soc, socPoint);
    power = p.value;
    soc = s.value;
    clamped = p.clamped || s.clamped;
  }
  // Three values in, three checked values out.
  const [code, checkedPower, checkedSoc] = validateWrite(statePoint, [STATE_CODES[state], power, soc], { powerLimit: maxPower(options) }) as [
    number,
    number,
    number,
  ];
  return { state, code, power: checkedPower, soc: checkedSoc, clamped, belowMinimum };
}

/**
 * A signed number of watts, as battery power 6000 counts it: positive discharges, negative charges, 0 is
 * standby. The device cannot run below the minimum power, so a smaller non-zero amount is standby too
 * (a loop around zero rests instead of flipping between charge and discharge).
 */
function fromWatts(raw: unknown, soc: unknown, options: ControlOptions): ControlCommand {
  const watts = decimalNumber(raw);
  const { min } = CONTROL_LIMITS.power;
  const max = maxPower(options);
  if (watts === undefined) {
    throw new ValidationError('power', raw, `a number of watts from -${max} to ${max} (negative: charge, positive: discharge)`);
  }
  const rounded = Math.round(watts);
  const magnitude = Math.abs(rounded);
  if (magnitude < min) return command('standby', min, soc ?? options.dischargeSoc, options, rounded !== 0);
  if (magnitude > max && !options.clamp) {
    throw new ValidationError('power', raw, `from -${max} to ${max} W (negative: charge, positive: discharge)`, powerPoint);
  }
  const state: ControlStateName = rounded < 0 ? 'charge' : 'discharge';
  return command(state, magnitude, soc ?? (state === 'charge' ? options.chargeSoc : options.dischargeSoc), options);
}

/** A state with optional power and SOC; standby always sends the minimum power, as integrations do. */
function fromState(stateValue: unknown, power: unknown, soc: unknown, options: ControlOptions): ControlCommand {
  const state = parseState(stateValue);
  if (state === 'standby') return command(state, CONTROL_LIMITS.power.min, soc ?? options.dischargeSoc, options);
  return command(state, wholeWatts(power ?? options.power), soc ?? (state === 'charge' ? options.chargeSoc : options.dischargeSoc), options);
}

/**
 * Turns a message payload into a checked control command, or throws a ValidationError naming the field, the
 * value and the allowed range. Forms: a signed number of watts (or a numeric string); a state word
 * ("charge", "discharge", "standby", or the codes 0/1/2 inside an object); `{state, power?, soc?}`; or
 * `{power, soc?}` with a signed power.
 */
export function parseControl(payload: unknown, options: ControlOptions): ControlCommand {
  if (typeof payload === 'number' || decimalNumber(payload) !== undefined) return fromWatts(payload, undefined, options);
  if (typeof payload === 'string') return fromState(payload, undefined, undefined, options);
  if (payload && typeof payload === 'object' && !Array.isArray(payload)) {
    const { state, power, soc } = payload as { state?: unknown; power?: unknown; soc?: unknown };
    if (state !== undefined && state !== null) return fromState(state, power ?? undefined, soc ?? undefined, options);
    if (power !== undefined && power !== null) return fromWatts(power, soc ?? undefined, options);
  }
  throw new ValidationError('payload', payload, PAYLOAD_FORMS);
}

/** The values of the one SetData request: [state, power, SOC]. */
export function controlValues(command: ControlCommand): [number, number, number] {
  return [command.code, command.power, command.soc];
}

export interface SentSetpoint {
  code: number;
  power: number;
  soc: number;
  /** ms timestamp of the send. */
  at: number;
}

/** True when `next` equals the setpoint sent less than `repeatMs` ago (0 = never skip). */
export function isRepeat(last: SentSetpoint | undefined, next: ControlCommand, now: number, repeatMs: number): boolean {
  if (!(repeatMs > 0) || !last) return false;
  const same = last.code === next.code && last.power === next.power && last.soc === next.soc;
  return same && now >= last.at && now - last.at < repeatMs;
}

export type ModeAction = 'read' | 'switch' | 'none';

/**
 * What is known of the working mode. It is read once and remembered; read again after `recheckMs`
 * (0 = only after forget(), e.g. when the device refused a control write).
 */
export class WorkingModeMemory {
  private known = false;
  private mode: number | undefined;
  private at = 0;

  constructor(private readonly recheckMs: number) {}

  /** What to do before a control write at `now`. */
  next(now: number): ModeAction {
    if (!this.known || (this.recheckMs > 0 && now - this.at >= this.recheckMs)) return 'read';
    return this.mode === REAL_TIME.mode ? 'none' : 'switch';
  }

  /** `mode` undefined: the device did not report it, so a switch is due. */
  remember(mode: number | undefined, now: number): void {
    this.known = true;
    this.mode = mode;
    this.at = now;
  }

  forget(): void {
    this.known = false;
  }
}
