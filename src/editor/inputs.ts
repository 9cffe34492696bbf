/**
 * Inputs described once: every node setting and msg override is declared with where it comes from (node setting,
 * then msg override, then default) and how it is parsed, so each rule lives in one place and every bad value fails
 * with the same ValidationError (field, short preview, allowed range). The editor runs this very code: it is built for
 * the browser with the other rules (src/editor/editor-rules.ts) and served beside the catalogue.
 */
import type { DeadBand } from '../device/poller';
import { ValidationError } from '../errors';
import { DECIMAL, decimalNumber } from '../numbers';
import { MAX_PASSWORD_BYTES, MIN_INTERVAL_FLOOR_MS, NAMESPACE_PATTERN, NUMBER_DEFAULTS, checkHost, checkNamespace } from '../device/rules';
import { CONTROL_DEFAULTS, CONTROL_LIMITS, MAX_CONTROL_SECONDS } from '../control/control';
import {
  MAX_READ_REFERENCES,
  POWER_LIMIT,
  catalogueJson,
  resolveReadAddresses,
  validatePowerLimit,
  type PowerLimits,
} from '../points/catalogue';
import { ON_TIMEOUT, PLANT_BOUNDS, type OnTimeout, type RegulatorSettings } from '../control/regulator';
import { METER_SENDS, METER_SOURCES, ON_STOP, type MeterSends, type OnStop, type ZeroFeedInConfig } from '../control/zero-feed-in';
import { parseMode, type BatteryMode } from '../control/modes';
import { METER_SIGNS, METER_UNITS, type MeterSign, type MeterUnit } from '../control/meter-check';

/**
 * The variable's name when `value` is a whole `${NAME}` (or the older `$(NAME)`), exactly as Node-RED matches it in
 * node properties (mapEnvVarProperties in @node-red/runtime/lib/flows/util.js: first character `$`, a name of
 * non-space characters, nothing trimmed); else undefined. Node-RED puts the variable in before a node starts.
 */
export function envVarName(value: unknown): string | undefined {
  if (typeof value !== 'string' || value[0] !== '$') return undefined;
  return /^\$\{(\S+)\}$/.test(value) || /^\$\((\S+)\)$/.test(value) ? value.slice(2, -1) : undefined;
}

/** A decimal number within bounds. */
export interface NumberRule {
  readonly min: number;
  readonly max: number;
  /** Whole numbers only. */
  readonly integer?: boolean;
  /** 0 is allowed too and means "off" (then `off` says what it turns off). */
  readonly off?: string;
  readonly unit?: string;
}

/** The bounds every setting of the package shares with the editor. */
export const NUMBER_RULES = {
  port: { min: 1, max: 65535, integer: true },
  localPort: { min: 0, max: 65535, integer: true },
  // Above an hour between requests nothing works any more; the device needs a second.
  minInterval: { min: MIN_INTERVAL_FLOOR_MS, max: 3600000, integer: true, unit: 'ms' },
  timeout: { min: 100, max: 120000, integer: true, unit: 'ms' },
  // The device's minimum request interval is 1 s; above a day a timer gains nothing (and overflows at ~24 days).
  pollInterval: { min: 1, max: 86400, unit: 'seconds', off: 'no polling' },
  heartbeat: { min: 1, max: 86400, unit: 'seconds', off: 'none' },
  // Answers come within a second or two; longer only blocks the flow.
  listenTime: { min: 0.5, max: 60, unit: 'seconds' },
} as const satisfies Record<string, NumberRule>;

/** What `rule` allows, in words, e.g. "an integer from 1 to 65535". */
export function allowedText(rule: NumberRule): string {
  const range = `${rule.integer ? 'an integer' : 'a number'} from ${rule.min} to ${rule.max}${rule.unit ? ' ' + rule.unit : ''}`;
  return rule.off ? `empty or 0 (${rule.off}), or ${range}` : range;
}

/** A parser: the value, or a ValidationError naming `field`. */
export type Parse<T> = (value: unknown, field: string) => T;

const isEmpty = (value: unknown) => value === undefined || value === null || (typeof value === 'string' && value.trim() === '');

/** A decimal number (or numeric text) within `rule`; with `rule.off`, empty and 0 give 0. */
export function numberIn(rule: NumberRule): Parse<number> {
  return (value, field) => {
    if (rule.off && isEmpty(value)) return 0;
    const number = decimalNumber(value);
    if (rule.off && number === 0) return 0;
    if (number === undefined || number < rule.min || number > rule.max || (rule.integer && !Number.isInteger(number))) {
      throw new ValidationError(field, value, allowedText(rule));
    }
    return number;
  };
}

/** true or false, nothing else (a "false" string would be truthy). */
export const flag: Parse<boolean> = (value, field) => {
  if (typeof value !== 'boolean') throw new ValidationError(field, value, 'true or false');
  return value;
};

/** One of `values`. */
export function oneOf<T extends string>(values: readonly T[]): Parse<T> {
  return (value, field) => {
    if (!values.includes(value as T)) throw new ValidationError(field, value, `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`);
    return value as T;
  };
}

/** Text, trimmed. */
export function text(allowed: string): Parse<string> {
  return (value, field) => {
    if (typeof value !== 'string') throw new ValidationError(field, value, allowed);
    return value.trim();
  };
}

/** One input of a node. */
export interface InputSpec<T> {
  /** The node setting that holds it. */
  setting?: string;
  /** Its name in errors about the setting, when not the setting's own name (e.g. "listen time"). */
  label?: string;
  /** The msg property that overrides the setting, e.g. "points" for msg.points. */
  msg?: string;
  /** Taken when the setting is absent (parsed like a setting); without one an absent input stays undefined. */
  fallback?: unknown;
  /** Values that count as not given; undefined and null when not set. */
  absent?: (value: unknown) => boolean;
  parse: Parse<T>;
}

type Specs = Record<string, InputSpec<unknown>>;
export type InputValues<S extends Specs> = { [K in keyof S]: S[K] extends InputSpec<infer T> ? T | undefined : never };

/** The deployed settings: every value that parsed, and the error of each that did not. */
export interface Deployed<S extends Specs> {
  values: InputValues<S>;
  errors: ReadonlyMap<keyof S, ValidationError>;
  /** The first error, for the node's status and log. */
  error: ValidationError | undefined;
}

const notGiven = (value: unknown) => value === undefined || value === null;

/** A node's inputs, declared once: checks its settings at deploy and applies msg overrides per message. */
export function describeInputs<S extends Specs>(specs: S) {
  const entries = Object.entries(specs) as [keyof S & string, InputSpec<unknown>][];
  return {
    specs,
    /** Checks every setting (at deploy). Errors are collected, not thrown, so that a msg override can still stand in. */
    deploy(settings: object): Deployed<S> {
      const values = {} as Record<string, unknown>;
      const errors = new Map<keyof S, ValidationError>();
      let first: ValidationError | undefined;
      for (const [name, spec] of entries) {
        const absent = spec.absent ?? notGiven;
        const raw = spec.setting === undefined ? undefined : (settings as Record<string, unknown>)[spec.setting];
        const given = absent(raw) ? spec.fallback : raw;
        if (given === undefined) continue;
        try {
          values[name] = spec.parse(given, spec.label ?? spec.setting ?? name);
        } catch (error) {
          if (!(error instanceof ValidationError)) throw error;
          errors.set(name, error);
          first ??= error;
        }
      }
      return { values: values as InputValues<S>, errors, error: first };
    },
    /** The values for one message: its overrides over the deployed settings; throws the first bad one. */
    forMessage(msg: object, deployed: Deployed<S>): InputValues<S> {
      const values = { ...deployed.values } as Record<string, unknown>;
      for (const [name, spec] of entries) {
        const raw = spec.msg === undefined ? undefined : (msg as Record<string, unknown>)[spec.msg];
        const deployError = deployed.errors.get(name);
        if (spec.msg !== undefined && !(spec.absent ?? notGiven)(raw)) values[name] = spec.parse(raw, `msg.${spec.msg}`);
        else if (deployError) throw deployError;
      }
      return values as InputValues<S>;
    },
  };
}

const isBlank = (value: unknown) => value === undefined || value === null || value === '';

/** A charge or discharge limit as stored (a number or decimal text). */
function powerLimit(value: unknown, field: string): number {
  return validatePowerLimit(decimalNumber(value) ?? value, field);
}

/**
 * The device configuration's number settings. Empty: the client's default. `powerLimit` is the single limit of
 * earlier versions: it stands in for a charge or discharge limit left empty.
 */
export const deviceInputs = describeInputs({
  host: { setting: 'host', parse: checkHost },
  namespace: { setting: 'namespace', parse: checkNamespace },
  port: { setting: 'port', absent: isBlank, parse: numberIn(NUMBER_RULES.port) },
  minIntervalMs: { setting: 'minInterval', label: 'minimum interval', absent: isBlank, parse: numberIn(NUMBER_RULES.minInterval) },
  timeoutMs: { setting: 'timeout', label: 'time-out', absent: isBlank, parse: numberIn(NUMBER_RULES.timeout) },
  chargeLimit: { setting: 'chargeLimit', label: 'charge limit', absent: isBlank, parse: powerLimit },
  dischargeLimit: { setting: 'dischargeLimit', label: 'discharge limit', absent: isBlank, parse: powerLimit },
  powerLimit: { setting: 'powerLimit', label: 'power limit', absent: isBlank, parse: powerLimit },
});

type LimitSettings = { chargeLimit?: number; dischargeLimit?: number; powerLimit?: number };

/** The limits a device configuration sets: each given one, else the earlier single limit; none where left empty. */
export function configuredLimits(values: LimitSettings): Partial<PowerLimits> {
  return { chargeLimit: values.chargeLimit ?? values.powerLimit, dischargeLimit: values.dischargeLimit ?? values.powerLimit };
}

/** The limits of checked device settings: those it sets, else the specification's. */
export function deviceLimits(values: LimitSettings): PowerLimits {
  const { chargeLimit = POWER_LIMIT.default, dischargeLimit = POWER_LIMIT.default } = configuredLimits(values);
  return { chargeLimit, dischargeLimit };
}

const DEAD_BAND_FORM =
  'a number of at least 0 for every numeric point and/or point=number entries, comma-separated, e.g. "20, batterySoc=1"';

/**
 * A read node's dead band: "20" (every numeric point), "batterySoc=1", or both comma-separated; empty: none. Each
 * point is keyed by `keyOf` (its name or address, as the node's output names it).
 */
export function parseDeadBand(value: unknown, keyOf: (address: number) => string = String): DeadBand {
  const band: DeadBand = { all: 0, byPoint: new Map() };
  const text = typeof value === 'string' || typeof value === 'number' ? String(value) : '';
  for (const entry of text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    const parts = entry.split('=').map((s) => s.trim());
    // "batterySoc=1=2" is no entry: nothing of it may be dropped.
    if (parts.length > 2) throw new ValidationError('dead band', value, DEAD_BAND_FORM);
    const [point, amount] = parts.length === 2 ? parts : [undefined, entry];
    const size = decimalNumber(amount);
    if (size === undefined || size < 0) throw new ValidationError('dead band', value, DEAD_BAND_FORM);
    if (point === undefined) band.all = size;
    else
      for (const address of resolveReadAddresses([/^\d+$/.test(point) ? Number(point) : point], 'dead band'))
        band.byPoint.set(keyOf(address), size);
  }
  return band;
}

/** A discovery target: empty for a broadcast, else one host by the device's host rule. */
export const discoveryTarget: Parse<string> = (value, field) =>
  typeof value === 'string' && value.trim() === '' ? '' : checkHost(value, field);

/** The most pieces a comma-separated point list is split into (empty ones count). */
const MAX_PIECES = 2 * MAX_READ_REFERENCES;

/** A list of read point names or addresses: an array, or the same as a comma-separated string. */
export function pointList(value: unknown, field: string): number[] {
  const list = pointReferences(value);
  // A megabyte of commas is not split up in full: past twice the allowed entries (empty ones too) the list is refused.
  if (typeof value === 'string' && value.split(',', MAX_PIECES + 1).length > MAX_PIECES) {
    throw new ValidationError(field, value, `at most ${MAX_READ_REFERENCES} read point names or addresses, comma-separated`);
  }
  if (!Array.isArray(list)) {
    throw new ValidationError(field, value, 'an array of read point names or addresses, or a comma-separated string of them');
  }
  return resolveReadAddresses(list, field);
}

/** The entries of a point list (an array, or a comma-separated string); anything else as it is. */
export function pointReferences(value: unknown): unknown {
  return typeof value === 'string'
    ? value
        .split(',', MAX_PIECES)
        .map((s) => s.trim())
        .filter((s) => s !== '')
    : value;
}

/** Every rule the editor must check the same way as the runtime, for the catalogue route. */
export function settingRulesJson() {
  return {
    numbers: NUMBER_RULES,
    allowed: Object.fromEntries(Object.entries(NUMBER_RULES).map(([name, rule]) => [name, allowedText(rule)])),
    decimalPattern: DECIMAL.source,
    decimalFlags: DECIMAL.flags,
    namespacePattern: NAMESPACE_PATTERN.source,
    /** The device configuration's number settings left empty: port, minInterval and timeout. */
    deviceDefaults: { port: NUMBER_DEFAULTS.port, minInterval: NUMBER_DEFAULTS.minIntervalMs, timeout: NUMBER_DEFAULTS.timeoutMs },
    maxPasswordBytes: MAX_PASSWORD_BYTES,
    control: { defaults: CONTROL_DEFAULTS, limits: CONTROL_LIMITS, maxSeconds: MAX_CONTROL_SECONDS },
    powerLimit: POWER_LIMIT,
    zeroFeedIn: {
      numbers: ZERO_FEED_IN_RULES,
      allowed: Object.fromEntries(Object.entries(ZERO_FEED_IN_RULES).map(([name, rule]) => [name, allowedText(rule)])),
      defaults: REGULATOR_DEFAULTS,
    },
  };
}

/** The zero feed-in node's defaults. */
export const REGULATOR_DEFAULTS = {
  target: 0,
  deadBand: 20,
  chargeSoc: 100,
  dischargeSoc: 12,
  meterTimeoutS: 10,
  meterIntervalS: 1,
  onTimeout: 'standby' as OnTimeout,
  onStop: 'self-consumption' as OnStop,
  gridCharge: false,
  meterSends: 'always' as MeterSends,
  meterSign: 'import-positive' as MeterSign,
  meterUnit: 'W' as MeterUnit,
  mode: 'normal' as BatteryMode,
  /** The charge mode's power (W, within the device's charge limit); its SOC is Charge to unless set. */
  chargeModePower: CONTROL_DEFAULTS.power,
  /** SOC points each real-time command lets the battery go past the SOC now by itself (RegulatorSettings.leash). */
  leash: 2,
} as const;

/** Bounds of the zero feed-in node's number settings (the power and SOC ones come from the control write's points). */
export const ZERO_FEED_IN_RULES = {
  target: { min: -10000, max: 10000, unit: 'W' },
  deadBand: { min: 0, max: 1000, unit: 'W' },
  meterInterval: { min: 1, max: 3600, unit: 'seconds' },
  meterTimeout: { min: 1, max: 3600, unit: 'seconds' },
  // 0 would let no command move the battery; 100 is the old way (to Charge to / Discharge to).
  leash: { min: 1, max: 100, integer: true, unit: '% of capacity' },
} as const satisfies Record<string, NumberRule>;

/** A zero feed-in node's settings as Node-RED stores them (text or numbers; empty is the default). */
export interface ZeroFeedInInput {
  meterSource?: unknown;
  meterInterval?: unknown;
  meterSends?: unknown;
  meterSign?: unknown;
  meterUnit?: unknown;
  target?: unknown;
  deadBand?: unknown;
  maxCharge?: unknown;
  maxDischarge?: unknown;
  chargeSoc?: unknown;
  dischargeSoc?: unknown;
  meterTimeout?: unknown;
  onTimeout?: unknown;
  gridCharge?: unknown;
  onStop?: unknown;
  mode?: unknown;
  chargeModePower?: unknown;
  chargeModeSoc?: unknown;
  leash?: unknown;
}

export type ZeroFeedInSettings = ZeroFeedInConfig;

/**
 * A zero feed-in node's settings, checked at deploy with the rules the editor gets; the maximum powers within the
 * device's charge and discharge limits (empty: the limit). Throws a ValidationError naming the first bad setting.
 */
export function zeroFeedInSettings(input: ZeroFeedInInput, limits: PowerLimits): ZeroFeedInSettings {
  const { power, soc } = CONTROL_LIMITS;
  const z = ZERO_FEED_IN_RULES;
  const d = REGULATOR_DEFAULTS;
  const number = (value: unknown, fallback: number, field: string, rule: NumberRule) =>
    isEmpty(value) ? fallback : numberIn(rule)(value, field);
  const choice = <T extends string>(value: unknown, fallback: T, field: string, values: readonly T[]) =>
    isEmpty(value) ? fallback : oneOf(values)(value, field);
  const socRule = { min: soc.min, max: soc.max, integer: true, unit: '%' };
  const regulator: RegulatorSettings = {
    target: number(input.target, d.target, 'target', z.target),
    deadBand: number(input.deadBand, d.deadBand, 'dead band', z.deadBand),
    maxCharge: number(input.maxCharge, limits.chargeLimit, 'maximum charge power', { min: power.min, max: limits.chargeLimit, unit: 'W' }),
    maxDischarge: number(input.maxDischarge, limits.dischargeLimit, 'maximum discharge power', {
      min: power.min,
      max: limits.dischargeLimit,
      unit: 'W',
    }),
    chargeSoc: number(input.chargeSoc, d.chargeSoc, 'charge-to SOC', socRule),
    dischargeSoc: number(input.dischargeSoc, d.dischargeSoc, 'discharge-to SOC', socRule),
    meterTimeoutMs: number(input.meterTimeout, d.meterTimeoutS, 'meter time-out', z.meterTimeout) * 1000,
    onTimeout: choice(input.onTimeout, d.onTimeout, 'on time-out', ON_TIMEOUT),
    gridCharge: input.gridCharge === true || input.gridCharge === 'true',
    minPower: power.min,
    leash: number(input.leash, d.leash, 'leash', z.leash),
    ...PLANT_BOUNDS,
  };
  const meterIntervalMs = number(input.meterInterval, d.meterIntervalS, 'meter interval', z.meterInterval) * 1000;
  // A time-out within one or two intervals would stand by and come back at every reading. With a meter that sends only
  // on change, the time-out is the longest silence (the last reading stands until then): the same rule holds.
  if (regulator.meterTimeoutMs < 2 * meterIntervalMs) {
    throw new ValidationError(
      'meter time-out',
      input.meterTimeout ?? d.meterTimeoutS,
      `at least two meter intervals (${(2 * meterIntervalMs) / 1000} s or more)`,
    );
  }
  return {
    regulator,
    meterSource: choice(input.meterSource, 'message', 'meter source', METER_SOURCES),
    meterIntervalMs,
    meterSends: choice(input.meterSends, d.meterSends, 'meter sends', METER_SENDS),
    meterSign: choice(input.meterSign, d.meterSign, 'meter sign', METER_SIGNS),
    meterUnit: choice(input.meterUnit, d.meterUnit, 'meter unit', METER_UNITS),
    onStop: choice(input.onStop, d.onStop, 'on stop', ON_STOP),
    mode: isEmpty(input.mode) ? d.mode : parseMode(input.mode, 'mode'),
    charge: {
      power: number(input.chargeModePower, Math.min(d.chargeModePower, limits.chargeLimit), 'charge mode power', {
        min: power.min,
        max: limits.chargeLimit,
        integer: true,
        unit: 'W',
      }),
      soc: number(input.chargeModeSoc, regulator.chargeSoc, 'charge mode SOC', socRule),
    },
  };
}

/** The fields of a zero feed-in node that name its devices: the first is required, the others add units to a group. */
export const GROUP_DEVICE_FIELDS = ['device', 'device2', 'device3', 'device4'] as const;

/**
 * The device configurations a zero feed-in node steers (ids, in field order, empty fields skipped). The first is
 * required; no device twice (two regulators of one device would fight, and its share would be counted twice).
 */
export function groupDevices(input: Partial<Record<(typeof GROUP_DEVICE_FIELDS)[number], unknown>>): string[] {
  const ids: string[] = [];
  for (const field of GROUP_DEVICE_FIELDS) {
    const value = input[field];
    if (isEmpty(value)) {
      if (field === 'device') throw new ValidationError('device', value, 'a device configuration');
      continue;
    }
    if (typeof value !== 'string') throw new ValidationError(field, value, 'the id of a device configuration');
    if (ids.includes(value)) throw new ValidationError(field, value, 'a device not chosen in another device field');
    ids.push(value);
  }
  return ids;
}

/** What GET /localbattery/catalogue serves: the point catalogue and the setting rules. */
export function editorCatalogueJson() {
  return { ...catalogueJson(), rules: settingRulesJson() };
}
