/**
 * Real-time control without Node-RED: turns a payload (one signed number of watts, or {state, power, soc})
 * into the three-value write of 47015, checks it against the catalogue or clamps it into range, decides when
 * a repeated setpoint may be skipped, and (RealTimeController) sends setpoints, switching the working mode first where
 * needed.
 */
import {
  CONTROL_STATES,
  REAL_TIME,
  WORKING_MODE_READ_ADDRESS,
  validateWrite,
  writePointByAddress,
  type WriteLimits,
  type WritePoint,
} from '../points/catalogue';
import type { DeviceState } from '../device/device-state';
import type { JobOptions } from '../device/scheduler';
import { ClientClosedError, RefusedError, ValidationError } from '../errors';
import { decimalNumber } from '../numbers';

export type ControlStateName = 'standby' | 'charge' | 'discharge';

const statePoint = writePointByAddress(REAL_TIME.stateAddress)!;
const powerPoint = writePointByAddress(REAL_TIME.powerAddress)!;
const socPoint = writePointByAddress(REAL_TIME.socAddress)!;

/** The read point that reports the working mode (7101): the write address differs. */
export { WORKING_MODE_READ_ADDRESS };

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
  /** The device's charge and discharge limits in W (the client's `limits`); the specification's maximum where not given. */
  limits?: WriteLimits;
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
    const name = STATE_NAMES.find(
      (n) => n === word || CONTROL_STATES.find((o) => o.value === STATE_CODES[n])!.label.toLowerCase() === word,
    );
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

/** The largest power of `state` under the device's limits: a charge's, a discharge's, or for standby the larger. */
function maxPower(options: ControlOptions, state: ControlStateName | 'either'): number {
  const { chargeLimit = CONTROL_LIMITS.power.max, dischargeLimit = CONTROL_LIMITS.power.max } = options.limits ?? {};
  return state === 'charge' ? chargeLimit : state === 'discharge' ? dischargeLimit : Math.max(chargeLimit, dischargeLimit);
}

function command(state: ControlStateName, power: unknown, soc: unknown, options: ControlOptions, belowMinimum = false): ControlCommand {
  let clamped = false;
  if (options.clamp) {
    const p = clampTo(decimalNumber(power) ?? power, powerPoint, maxPower(options, state));
    const s = clampTo(decimalNumber(soc) ?? soc, socPoint);
    power = p.value;
    soc = s.value;
    clamped = p.clamped || s.clamped;
  }
  // Three values in, three checked values out.
  const [code, checkedPower, checkedSoc] = validateWrite(statePoint, [STATE_CODES[state], power, soc], options.limits) as [
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
  // Charging is bounded by the charge limit, discharging by the discharge limit.
  const range = `from -${maxPower(options, 'charge')} to ${maxPower(options, 'discharge')}`;
  if (watts === undefined) {
    throw new ValidationError('power', raw, `a number of watts ${range} (negative: charge, positive: discharge)`);
  }
  const rounded = Math.round(watts);
  const magnitude = Math.abs(rounded);
  if (magnitude < min) return command('standby', min, soc ?? options.dischargeSoc, options, rounded !== 0);
  const state: ControlStateName = rounded < 0 ? 'charge' : 'discharge';
  if (magnitude > maxPower(options, state) && !options.clamp) {
    throw new ValidationError('power', raw, `${range} W (negative: charge, positive: discharge)`, powerPoint);
  }
  return command(state, magnitude, soc ?? (state === 'charge' ? options.chargeSoc : options.dischargeSoc), options);
}

/** A state with optional power and SOC; standby always sends the minimum power, as integrations do. */
function fromState(stateValue: unknown, power: unknown, soc: unknown, options: ControlOptions): ControlCommand {
  const state = parseState(stateValue);
  if (state === 'standby') return command(state, CONTROL_LIMITS.power.min, soc ?? options.dischargeSoc, options);
  return command(
    state,
    wholeWatts(power ?? options.power),
    soc ?? (state === 'charge' ? options.chargeSoc : options.dischargeSoc),
    options,
  );
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
  /** ms timestamp of the device's acknowledgement. */
  at: number;
}

/** True when `next` equals the setpoint acknowledged less than `repeatMs` ago (0 = never skip). */
export function isRepeat(last: SentSetpoint | undefined, next: ControlCommand, now: number, repeatMs: number): boolean {
  if (!(repeatMs > 0) || !last) return false;
  return sameSetpoint(last, next) && now >= last.at && now - last.at < repeatMs;
}

function sameSetpoint(a: { code: number; power: number; soc: number }, b: { code: number; power: number; soc: number }): boolean {
  return a.code === b.code && a.power === b.power && a.soc === b.soc;
}

/** Largest repeat and re-check time in seconds: a week (a timer gains nothing beyond it). */
export const MAX_CONTROL_SECONDS = 604800;

/** Settings of the controller beside the payload defaults. */
export interface ControllerSettings extends ControlOptions {
  /** Switch the working mode to real-time control when it is not (or not known to be). */
  switchMode: boolean;
  /** Within this time the same acknowledged setpoint is not sent again; 0: always send. */
  repeatMs: number;
  /** What is known of the working mode is trusted this long; 0: until a control write is refused. */
  modeCheckMs: number;
}

/** A control node's settings as stored: numbers may come as text; empty means the default. */
export interface ControlSettingsInput {
  power?: unknown;
  chargeSoc?: unknown;
  dischargeSoc?: unknown;
  clamp?: unknown;
  switchMode?: unknown;
  /** Seconds. */
  repeat?: unknown;
  /** Seconds. */
  modeCheck?: unknown;
}

export type ControlSettingName = 'power' | 'chargeSoc' | 'dischargeSoc' | 'repeat' | 'modeCheck';

/**
 * Each number setting of a control node: a decimal number in its range, or empty for the default. Power and SOC are
 * whole numbers, as the control write takes them. The default power is bounded by the larger of the two limits; a
 * message's state decides which limit its power meets.
 */
export function controlNumbers(limits?: WriteLimits) {
  const { power, soc } = CONTROL_LIMITS;
  const whole = { integer: true };
  return {
    power: { field: 'power', min: power.min, max: maxPower({ limits } as ControlOptions, 'either'), unit: 'W', ...whole },
    chargeSoc: { field: 'charge SOC', min: soc.min, max: soc.max, unit: '%', ...whole },
    dischargeSoc: { field: 'discharge SOC', min: soc.min, max: soc.max, unit: '%', ...whole },
    repeat: { field: 'repeat time', min: 0, max: MAX_CONTROL_SECONDS, unit: 's', integer: false },
    modeCheck: { field: 'mode re-check time', min: 0, max: MAX_CONTROL_SECONDS, unit: 's', integer: false },
  } satisfies Record<ControlSettingName, { field: string; min: number; max: number; unit: string; integer: boolean }>;
}

const CONTROL_FALLBACKS: Record<ControlSettingName, number> = {
  power: CONTROL_DEFAULTS.power,
  chargeSoc: CONTROL_DEFAULTS.chargeSoc,
  dischargeSoc: CONTROL_DEFAULTS.dischargeSoc,
  repeat: CONTROL_DEFAULTS.repeatSeconds,
  modeCheck: CONTROL_DEFAULTS.modeCheckSeconds,
};

/**
 * The number settings of a control node, each checked (the editor shows every error at once): the values, with the
 * default for an empty one, and the error of each bad one.
 */
export function checkControlSettings(
  input: ControlSettingsInput,
  limits?: WriteLimits,
): { values: Record<ControlSettingName, number>; errors: Partial<Record<ControlSettingName, ValidationError>> } {
  const values = {} as Record<ControlSettingName, number>;
  const errors: Partial<Record<ControlSettingName, ValidationError>> = {};
  for (const [name, rule] of Object.entries(controlNumbers(limits)) as [ControlSettingName, ReturnType<typeof controlNumbers>['power']][]) {
    const value = input[name];
    if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
      values[name] = CONTROL_FALLBACKS[name];
      continue;
    }
    const parsed = decimalNumber(value);
    if (parsed === undefined || parsed < rule.min || parsed > rule.max || (rule.integer && !Number.isInteger(parsed))) {
      const kind = rule.integer ? 'an integer' : 'a number';
      errors[name] = new ValidationError(
        rule.field,
        value,
        `empty (${CONTROL_FALLBACKS[name]}) or ${kind} from ${rule.min} to ${rule.max} ${rule.unit}`,
      );
    } else values[name] = parsed;
  }
  return { values, errors };
}

/**
 * A control node's settings, checked once at deploy against the catalogue and the device's limits: each a decimal
 * number in its range, or empty for the default. Throws a ValidationError naming the first bad setting, the value and
 * the allowed range.
 */
export function controlSettings(input: ControlSettingsInput, limits?: WriteLimits): ControllerSettings {
  const { values, errors } = checkControlSettings(input, limits);
  const first = Object.values(errors)[0];
  if (first) throw first;
  return {
    power: values.power,
    chargeSoc: values.chargeSoc,
    dischargeSoc: values.dischargeSoc,
    clamp: input.clamp === true,
    switchMode: input.switchMode !== false,
    repeatMs: values.repeat * 1000,
    modeCheckMs: values.modeCheck * 1000,
    limits,
  };
}

/** How a write of the controller goes through the queue (see JobOptions). */
export type WriteOptions = Pick<JobOptions, 'given' | 'urgent' | 'onStart'>;

/** What the controller needs of a client (a flow node's session). */
export interface ControlTarget {
  write(point: number, values: unknown, options?: WriteOptions): Promise<{ status: 'written' | 'superseded' }>;
  setRealTime(state: number, power: number, soc: number, options?: WriteOptions): Promise<{ status: 'written' | 'superseded' }>;
  read(addresses: readonly number[], options?: { onStart?: () => void; signal?: AbortSignal }): Promise<unknown>;
  /** What the process knows of the device: its working mode, the setpoint it acknowledged, the order of commands. */
  readonly deviceState: DeviceState;
}

export interface ControlOutcome {
  /**
   * written: the device acknowledged it; repeat: skipped, the device has it; superseded: a newer write replaced it,
   * or a newer command to the working mode or setpoint came while it was on its way (the last command wins).
   */
  status: 'written' | 'repeat' | 'superseded';
  /** The working mode was switched to real-time control for it. */
  modeChanged: boolean;
}

const SUPERSEDED: ControlOutcome = { status: 'superseded', modeChanged: false };
const CONTROL_ADDRESSES = [REAL_TIME.modeAddress, REAL_TIME.stateAddress, REAL_TIME.powerAddress, REAL_TIME.socAddress];

/**
 * Real-time control over a client: sends setpoints, switching the working mode where needed, and skips a repeat only
 * of what the device acknowledged to anyone (the device state's setpoint: another node's standby in between is no
 * repeat). The working mode is what the device state knows (a read of 7101, a write of 47005, an accepted setpoint);
 * `learnMode` reads it when a node starts, so that stale knowledge of an earlier deployment does not count. When
 * nothing is known it is written without reading first, which is safe because the node switches it anyway. A refused
 * setpoint may mean the mode was changed elsewhere: it is switched back and the setpoint sent once more. Each command
 * is stamped when it is given: a newer command to the mode or the setpoint, given while this one waited (for the
 * start's read, the mode switch or a retry), wins over it, whatever reached the queue first.
 */
export class RealTimeController {
  private underWay: { command: ControlCommand; outcome: Promise<ControlOutcome> } | undefined;
  private modeSwitch: Promise<'written' | 'superseded'> | undefined;
  /** The start's read of the working mode while it is under way; `started` once its request goes out. */
  private learning: { mode: Promise<number | undefined>; started: boolean; withdraw: AbortController } | undefined;
  /** What was known of the working mode and setpoint before this moment does not count (performance.now(), Date.now()). */
  private modeKnownAfter = -Infinity;
  private setpointKnownAfter = -Infinity;
  /** Asked each time: a client of a host name knows its device (and the device's state) once the name is resolved. */
  private get state(): DeviceState {
    return this.target.deviceState;
  }

  constructor(
    private readonly target: ControlTarget,
    private readonly settings: ControllerSettings,
    private readonly onSwitching: () => void = () => undefined,
  ) {}

  /**
   * Reads the working mode (7101) through the queue, whatever an earlier deployment saw; setpoints wait for it.
   * Resolves with the mode, or undefined when the read failed or was withdrawn: what an earlier deployment saw then
   * still does not count (the first setpoint switches the mode). A failure goes to `warn`.
   */
  learnMode(warn: (error: Error) => void = (error) => process.emitWarning(error)): Promise<number | undefined> {
    const withdraw = new AbortController();
    const askedAt = { clock: performance.now(), date: Date.now() };
    const learning = {
      started: false,
      withdraw,
      mode: this.target.read([WORKING_MODE_READ_ADDRESS], { onStart: () => (learning.started = true), signal: withdraw.signal }).then(
        () => this.state.mode(),
        (error: Error) => {
          this.modeKnownAfter = askedAt.clock;
          this.setpointKnownAfter = askedAt.date;
          // Withdrawn for a setpoint, or dropped as the node closes, is no failure.
          if (!withdraw.signal.aborted && !(error instanceof ClientClosedError)) {
            try {
              warn(error);
            } catch (thrown) {
              process.emitWarning(thrown as Error);
            }
          }
          return undefined;
        },
      ),
    };
    this.learning = learning;
    void learning.mode.then(() => {
      if (this.learning === learning) this.learning = undefined;
    });
    return learning.mode;
  }

  /**
   * A setpoint waits for the start's read of the mode once that read is on its way (its answer comes about when the
   * next request may go). While the read still waits for its turn it is withdrawn instead: the mode is then written
   * without reading, which costs the same request and saves the read's.
   */
  private async awaitLearning(): Promise<void> {
    const learning = this.learning;
    if (!learning) return;
    if (!learning.started) learning.withdraw.abort();
    await learning.mode;
  }

  /**
   * Sends `command` unless it repeats an acknowledged setpoint within the repeat time (`force`: send anyway);
   * `onSending` is called when it is decided to send. The command counts as given now.
   */
  async apply(
    command: ControlCommand,
    force = false,
    onSending: () => void = () => undefined,
    job: Omit<WriteOptions, 'given'> = {},
  ): Promise<ControlOutcome> {
    const given = this.state.stamp();
    await this.awaitLearning();
    const earlier = this.underWay;
    // A different setpoint on its way would stand unless this one follows it, though this one was acknowledged last.
    const passing = earlier !== undefined && !sameSetpoint(earlier.command, command);
    if (!force && !passing && this.isRepeat(command)) return { status: 'repeat', modeChanged: false };
    if (!force && earlier && sameSetpoint(earlier.command, command)) {
      // The same setpoint is on its way: its outcome decides, so that a failure of it does not lose this one.
      await earlier.outcome.catch(() => undefined);
      if (this.isRepeat(command)) return { status: 'repeat', modeChanged: false };
    }
    onSending();
    const outcome = this.send(command, { ...job, given });
    const entry = { command, outcome };
    this.underWay = entry;
    try {
      return await outcome;
    } finally {
      if (this.underWay === entry) this.underWay = undefined;
    }
  }

  private isRepeat(command: ControlCommand): boolean {
    const setpoint = this.state.setpoint;
    if (setpoint && setpoint.at <= this.setpointKnownAfter) return false;
    return isRepeat(setpoint, command, Date.now(), this.settings.repeatMs);
  }

  /** A command to the mode or the setpoint given after `given` (by anyone, this controller too): it is the last command. */
  private overtaken(given: number): boolean {
    return CONTROL_ADDRESSES.some((address) => this.state.lastCommandTo(address) > given);
  }

  private async send(command: ControlCommand, job: WriteOptions & { given: number }): Promise<ControlOutcome> {
    const { switchMode } = this.settings;
    const { given } = job;
    if (this.overtaken(given)) return SUPERSEDED;
    let modeChanged = false;
    if (switchMode) {
      const switched = await this.ensureMode(given);
      if (switched === 'superseded' || this.overtaken(given)) return SUPERSEDED;
      modeChanged = switched === 'written';
    }
    let result;
    try {
      result = await this.target.setRealTime(...controlValues(command), job);
    } catch (error) {
      if (!(error instanceof RefusedError) || !switchMode || modeChanged) throw error;
      if (this.overtaken(given)) return SUPERSEDED;
      // The device does not say why it refused: the mode may have been changed elsewhere. Switch and try once more.
      const switched = await this.ensureMode(given, true);
      if (switched === 'superseded' || this.overtaken(given)) return SUPERSEDED;
      modeChanged = true;
      result = await this.target.setRealTime(...controlValues(command), job);
    }
    if (result.status !== 'written') return { status: 'superseded', modeChanged };
    return { status: 'written', modeChanged };
  }

  /**
   * Writes the real-time control mode unless it is known to be set (for the re-check time; `force`: write anyway),
   * as a command given at `given`; 'superseded' when a newer command to the mode replaced it. Concurrent calls share one
   * write; one that lost to a command given before this caller's is written again for it.
   */
  private async ensureMode(given: number, force = false): Promise<'known' | 'written' | 'superseded'> {
    const maxAge = this.settings.modeCheckMs > 0 ? this.settings.modeCheckMs : Infinity;
    const learntAt = this.state.modeAt ?? -Infinity;
    if (!force && this.state.mode(maxAge) === REAL_TIME.mode && learntAt >= this.modeKnownAfter) return 'known';
    const switched = await this.switchMode(given, false);
    if (switched !== 'superseded' || this.overtaken(given)) return switched;
    return this.switchMode(given, true);
  }

  private switchMode(given: number, fresh: boolean): Promise<'written' | 'superseded'> {
    if (this.modeSwitch && !fresh) return this.modeSwitch;
    const outcome = (async () => {
      this.onSwitching();
      return (await this.target.write(REAL_TIME.modeAddress, REAL_TIME.mode, { given })).status;
    })().finally(() => {
      if (this.modeSwitch === outcome) this.modeSwitch = undefined;
    });
    this.modeSwitch = outcome;
    return outcome;
  }
}
