/**
 * The runtime's own rule functions for the node editors. scripts/copy-assets.js builds this module and what it imports
 * (all free of Node.js) into one browser script, dist/src/editor/editor-rules.browser.js, which the permission-checked route
 * GET /localbattery/rules.js serves beside the catalogue; resources/editor-catalogue.js loads it as
 * `localBatteryCatalogue.rules`. Every check answers null when the runtime takes the value, else the runtime's message.
 */
import { POWER_LIMIT, describeAllowed, resolveWritePoint, validateWrite, type PowerLimits } from '../points/catalogue';
import { checkControlSettings, controlNumbers, type ControlSettingName, type ControlSettingsInput } from '../control/control';
import { ValidationError } from '../errors';
import {
  NUMBER_RULES,
  deviceInputs,
  deviceLimits,
  discoveryTarget,
  envVarName,
  numberIn,
  parseDeadBand,
  pointList,
  zeroFeedInSettings,
  type ZeroFeedInInput,
} from './inputs';
import { decimalNumber } from '../numbers';
import { groupLimits } from '../flow/zero-feed-in';
import { checkPassword } from '../device/rules';

export { decimalNumber };

/** `${NAME}` as Node-RED takes it (envVarName): it puts the variable in when the flow starts, so the editor cannot know it. */
export function isEnvVar(value: unknown): boolean {
  return envVarName(value) !== undefined;
}

/** Settings without their `${NAME}` values (left to the runtime, which knows them). */
function known<T extends object>(settings: T): T {
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => !isEnvVar(value))) as T;
}

function problem(check: () => unknown): string | null {
  try {
    check();
    return null;
  } catch (error) {
    if (error instanceof ValidationError) return error.message;
    throw error;
  }
}

/** Number setting `rule` of NUMBER_RULES (port, intervals, time-outs). */
export function numberProblem(rule: keyof typeof NUMBER_RULES, value: unknown): string | null {
  return isEnvVar(value) ? null : problem(() => numberIn(NUMBER_RULES[rule])(value, rule));
}

/** The device configuration's number settings (port, interval, time-out, limits): the problem of each, by setting. */
export function deviceProblems(settings: Record<string, unknown>): Record<string, string> {
  const { errors } = deviceInputs.deploy(known(settings));
  const specs = deviceInputs.specs as Record<string, { setting?: string }>;
  return Object.fromEntries([...errors].map(([name, error]) => [specs[name]!.setting ?? name, error.message]));
}

/**
 * The limits the runtime will use for a device configuration's settings; a limit given as `${NAME}` counts as the
 * largest a limit can be (its value is known only at run time, where the runtime checks against it).
 */
export function limitsOf(settings: Record<string, unknown> | null | undefined): PowerLimits {
  if (!settings) return deviceLimits({});
  const values = deviceInputs.deploy(known(settings)).values;
  const unknownLimit = (name: string) => isEnvVar(settings[name]) || (isEnvVar(settings.powerLimit) && !(name in values));
  const limits = deviceLimits(values);
  return {
    chargeLimit: unknownLimit('chargeLimit') ? POWER_LIMIT.max : limits.chargeLimit,
    dischargeLimit: unknownLimit('dischargeLimit') ? POWER_LIMIT.max : limits.dischargeLimit,
  };
}

/**
 * The limits the runtime will use for a zero feed-in node steering the device configurations `devices` (empty fields
 * left out): a group's are the sums of every unit's, as at run time (groupLimits).
 */
export function groupLimitsOf(devices: readonly (Record<string, unknown> | null | undefined)[]): PowerLimits {
  return groupLimits(devices.filter((device) => device).map((device) => ({ limits: limitsOf(device) })));
}

/** The range of a control node's number setting under `limits` (the power's: the larger limit), as the runtime checks it. */
export function controlRange(name: ControlSettingName, limits?: PowerLimits): { min: number; max: number } {
  const { min, max } = controlNumbers(limits)[name];
  return { min, max };
}

/** A control node's number settings under `limits`: the problem of each, by setting. */
export function controlProblems(settings: ControlSettingsInput, limits?: PowerLimits): Record<string, string> {
  const { errors } = checkControlSettings(known(settings), limits);
  return Object.fromEntries(Object.entries(errors).map(([name, error]) => [name, error.message]));
}

/**
 * A zero feed-in node's settings under `limits`: the problem of each, by setting. Each setting is checked alone (the
 * others empty, as their defaults), so that every field shows its own verdict.
 */
export function zeroFeedInProblems(settings: ZeroFeedInInput, limits: PowerLimits): Record<string, string> {
  const problems: Record<string, string> = {};
  for (const [name, value] of Object.entries(known(settings)) as [string, unknown][]) {
    const verdict = problem(() => zeroFeedInSettings({ [name]: value }, limits));
    if (verdict !== null) problems[name] = verdict;
  }
  // The time-out against the meter interval: the pair, where each alone is fine.
  const { meterInterval, meterTimeout } = known(settings);
  if (meterInterval !== undefined && meterTimeout !== undefined && !problems.meterInterval && !problems.meterTimeout) {
    const verdict = problem(() => zeroFeedInSettings({ meterInterval, meterTimeout }, limits));
    if (verdict !== null) problems.meterTimeout = verdict;
  }
  return problems;
}

/** A write of `value` (one value, or [state, power, SOC] for controlState) to write point `point` under `limits`. */
export function writeProblem(point: unknown, value: unknown, limits?: PowerLimits): string | null {
  return problem(() => validateWrite(resolveWritePoint(point), value, limits));
}

/** What write point `point` accepts under `limits`, in the runtime's words. */
export function allowedText(point: unknown, limits?: PowerLimits): string {
  return describeAllowed(resolveWritePoint(point), limits);
}

/** A read node's dead band. */
export function deadBandProblem(value: unknown): string | null {
  return isEnvVar(value) ? null : problem(() => parseDeadBand(value));
}

/** A discover node's target: empty (broadcast) or one host. */
export function targetProblem(value: unknown): string | null {
  return isEnvVar(value) ? null : problem(() => discoveryTarget(value, 'target'));
}

/** A read node's point list (names or addresses). */
export function pointsProblem(value: unknown): string | null {
  return problem(() => pointList(value, 'points'));
}

/** A new device password: 1 to 16 bytes of UTF-8. */
export function passwordProblem(value: unknown): string | null {
  return problem(() => checkPassword(value, 'password'));
}
