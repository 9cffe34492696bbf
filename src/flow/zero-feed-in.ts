/**
 * What the zero feed-in node does with messages, without Node-RED: msg.payload, msg.enable, msg.target and msg.mode
 * checked and turned into one command for the controller (src/control/zero-feed-in.ts), each decision into the
 * message it sends, and the loop's state into a short status.
 */
import { ValidationError } from '../errors';
import type { PowerLimits } from '../points/catalogue';
import { gridReading, type Decision } from '../control/regulator';
import type { ZeroFeedInController } from '../control/zero-feed-in';
import type { MeterFault } from '../control/meter-check';
import type { UnitReport } from '../control/group-plant';
import { parseMode, type BatteryMode } from '../control/modes';
import { ZERO_FEED_IN_RULES, numberIn } from '../editor/inputs';

type Translate = (key: string, values?: Record<string, string | number>) => string;

export interface ZeroFeedInInput {
  target?: number;
  enable?: boolean;
  mode?: BatteryMode;
  /** A reading (grid W, and battery W and SOC % where the payload carries them), or 'ignored' (not a number). */
  reading?: { grid: number; battery?: number; soc?: number } | 'ignored';
}

const targetIn = numberIn(ZERO_FEED_IN_RULES.target);

/**
 * A message checked whole before anything acts (a bad field changes nothing): throws a ValidationError naming it.
 * A message with a target, an enable or a mode is a command, a reading only where it has a payload and no target (a
 * change node that copied the payload into msg.target left the payload behind).
 */
export function zeroFeedInInput(
  msg: { payload?: unknown; enable?: unknown; target?: unknown; mode?: unknown },
  meterFromMessages: boolean,
): ZeroFeedInInput {
  if (msg.enable !== undefined && typeof msg.enable !== 'boolean') throw new ValidationError('msg.enable', msg.enable, 'true or false');
  const input: ZeroFeedInInput = {
    target: msg.target === undefined ? undefined : targetIn(msg.target, 'msg.target'),
    enable: msg.enable,
    mode: msg.mode === undefined ? undefined : parseMode(msg.mode, 'msg.mode'),
  };
  const command = msg.target !== undefined || msg.enable !== undefined || msg.mode !== undefined;
  if (meterFromMessages && msg.target === undefined && (!command || msg.payload !== undefined)) input.reading = readingOf(msg.payload);
  return input;
}

/** msg.payload as a reading: grid power, and the battery power (positive discharging, as 6000) and SOC it may carry. */
function readingOf(payload: unknown): ZeroFeedInInput['reading'] {
  const grid = gridReading(payload);
  // Nonsense never moves the battery; the time-out covers a meter that only sends nonsense.
  if (grid === undefined) return 'ignored';
  const given = payload as { batteryPower?: unknown; soc?: unknown } | undefined;
  const battery = typeof given?.batteryPower === 'number' && Number.isFinite(given.batteryPower) ? given.batteryPower : undefined;
  return { grid, battery, soc: typeof given?.soc === 'number' ? given.soc : undefined };
}

/** The message a decision sends; with several devices it lists each unit's share, delivery, SOC and whether left out. */
export function zeroFeedInMessage(decision: Decision, zero: ZeroFeedInController, units?: UnitReport[]): Record<string, unknown> {
  const { setpoint, grid, battery, soc, reason, steady, deadBand, limitedBy, delivered } = decision;
  return {
    topic: 'zero feed-in',
    payload: {
      setpoint: setpoint ?? null,
      steady: steady ?? null,
      grid: grid ?? null,
      battery: battery ?? null,
      soc: soc ?? null,
      reason,
      mode: zero.mode,
      deadBand: deadBand ?? zero.regulator.deadBand,
      ...(limitedBy ? { delivered } : {}),
      ...(units ? { units } : {}),
    },
    ...(limitedBy ? { limitedBy } : {}),
  };
}

/** Each meter fault's key in the node's texts (status.meterFault.*, errors.meterFault.*). */
export const METER_FAULT_KEYS: Record<MeterFault, string> = {
  inverted: 'inverted',
  kilowatts: 'kilowatts',
  'not connected': 'notConnected',
};

export interface LoopStatus {
  fill: 'grey' | 'yellow' | 'blue' | 'green' | 'red';
  shape: 'ring' | 'dot';
  text: string;
}

/**
 * The status: a mode other than zero feed-in first (off too: it applies once on again), then off, waiting, or the
 * setpoint with the last reading, a shortfall and the units left out.
 */
export function zeroFeedInStatus(
  zero: ZeroFeedInController,
  t: Translate,
  decision: Decision | undefined,
  extra?: string,
  leftOut: readonly string[] = [],
): LoopStatus {
  const shown = loopStatus(zero, t, decision, extra, leftOut);
  return zero.mode === 'normal' ? shown : { ...shown, text: `${t(`status.mode.${zero.mode}`)} · ${shown.text}` };
}

function loopStatus(
  zero: ZeroFeedInController,
  t: Translate,
  decision: Decision | undefined,
  extra: string | undefined,
  leftOut: readonly string[],
): LoopStatus {
  const regulator = zero.regulator;
  if (zero.meterFault) return { fill: 'red', shape: 'ring', text: t(`status.meterFault.${METER_FAULT_KEYS[zero.meterFault]}`) };
  if (!regulator.enabled) return { fill: 'grey', shape: 'ring', text: t('status.off') };
  // Until a reading comes, whatever the device answered to the time-out's standby or hand-back.
  if (decision?.reason === 'meter timeout' || regulator.meterTimedOut) return { fill: 'yellow', shape: 'ring', text: t('status.timeout') };
  // Nothing has happened yet: no reading, no setpoint.
  if (!regulator.steering && decision?.grid === undefined) {
    return { fill: 'grey', shape: 'ring', text: extra ? `${t('status.waiting')} · ${extra}` : t('status.waiting') };
  }
  const setpoint = regulator.setpoint;
  let text =
    setpoint === undefined
      ? t('status.selfConsumption')
      : setpoint === 0
        ? t('status.standby')
        : setpoint > 0
          ? t('status.discharge', { power: setpoint })
          : t('status.charge', { power: -setpoint });
  // The charge mode stands by only at its SOC: the status says why.
  if (zero.mode === 'charge' && setpoint === 0) text += ` · ${t('status.socReached', { soc: zero.chargeMode.soc })}`;
  if (decision?.grid !== undefined) {
    const grid = Math.round(decision.grid);
    text += t('status.grid', { grid: `${grid > 0 ? '+' : ''}${grid}` });
  }
  const short = regulator.shortfall;
  if (short !== undefined) text += t('status.short', { power: short });
  const leashWh = zero.leashWh;
  if (leashWh !== undefined) text += t('status.leash', { wh: Math.round(leashWh) });
  if (leftOut.length > 0) text += ` · ${t('status.leftOut', { devices: leftOut.join(', ') })}`;
  if (extra) text += ` · ${extra}`;
  return { fill: short !== undefined ? 'yellow' : regulator.inFlight ? 'blue' : 'green', shape: 'dot', text };
}

/** A group's maximum powers are within the sums of its units' limits. */
export function groupLimits(units: readonly { limits: PowerLimits }[]): PowerLimits {
  const sum = (key: 'chargeLimit' | 'dischargeLimit') => units.reduce((total, u) => total + u.limits[key], 0);
  return { chargeLimit: sum('chargeLimit'), dischargeLimit: sum('dischargeLimit') };
}

/** Units' names in messages and the status: as given, numbered where two are alike. */
export function unitNames(names: readonly string[]): string[] {
  return names.map((name, i) => (names.filter((other) => other === name).length > 1 ? `${name} (${i + 1})` : name));
}
