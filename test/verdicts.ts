/**
 * One table of inputs for the editor and the runtime: each row is a node setting, the runtime's verdict is taken from
 * the very function the node runs at deploy, the editor's from the field's validator in the node's editor script
 * (test/validator.test.ts runs it in a stand-in editor, test/editor.test.ts in Chromium). Both must equal `valid`.
 */
import { resolveWritePoint, validateWrite, type PowerLimits } from '../src/points/catalogue';
import { controlSettings } from '../src/control/control';
import { deviceInputs, deviceLimits, parseDeadBand, zeroFeedInSettings } from '../src/editor/inputs';
import { checkPassword } from '../src/device/rules';

/** Device configurations the rows may name: a 1600-class device, and none. */
export const DEVICES: Record<string, Record<string, unknown>> = {
  vdevice1600: {
    id: 'vdevice1600',
    type: 'localbattery-device',
    name: '1600',
    host: '127.0.0.1',
    chargeLimit: '1200',
    dischargeLimit: '800',
  },
};

export interface Verdict {
  type: string;
  field: string;
  value: string;
  valid: boolean;
  /** The other properties of the node (its device, the write point and value type). */
  node?: Record<string, unknown>;
  /** A credential rather than a property. */
  credential?: boolean;
}

const on1600 = { device: 'vdevice1600' };

export const VERDICTS: Verdict[] = [
  // Control: whole numbers (SOC 10.5 would fail every message), empty takes the default, the power meets the larger limit.
  { type: 'localbattery-control', field: 'chargeSoc', value: '10.5', valid: false },
  { type: 'localbattery-control', field: 'dischargeSoc', value: '10', valid: true },
  { type: 'localbattery-control', field: 'chargeSoc', value: '101', valid: false },
  { type: 'localbattery-control', field: 'power', value: '', valid: true },
  { type: 'localbattery-control', field: 'dischargeSoc', value: '', valid: true },
  { type: 'localbattery-control', field: 'repeat', value: '', valid: true },
  { type: 'localbattery-control', field: 'power', value: '12.5', valid: false },
  { type: 'localbattery-control', field: 'power', value: '0x320', valid: false },
  { type: 'localbattery-control', field: 'power', value: '2400', valid: true },
  { type: 'localbattery-control', field: 'power', value: '2401', valid: false },
  { type: 'localbattery-control', field: 'power', value: '1200', valid: true, node: on1600 },
  { type: 'localbattery-control', field: 'power', value: '1201', valid: false, node: on1600 },
  { type: 'localbattery-control', field: 'repeat', value: '2.5', valid: true },
  { type: 'localbattery-control', field: 'modeCheck', value: '-1', valid: false },
  // Device configuration: the limits and the number settings.
  { type: 'localbattery-device', field: 'chargeLimit', value: '', valid: true },
  { type: 'localbattery-device', field: 'chargeLimit', value: '1200', valid: true },
  { type: 'localbattery-device', field: 'chargeLimit', value: '799', valid: false },
  { type: 'localbattery-device', field: 'dischargeLimit', value: '2400.5', valid: false },
  { type: 'localbattery-device', field: 'dischargeLimit', value: '10800', valid: true },
  { type: 'localbattery-device', field: 'dischargeLimit', value: '10801', valid: false },
  { type: 'localbattery-device', field: 'powerLimit', value: '1000', valid: true },
  { type: 'localbattery-device', field: 'port', value: '0x50', valid: false },
  { type: 'localbattery-device', field: 'port', value: '8080', valid: true },
  { type: 'localbattery-device', field: 'timeout', value: '99', valid: false },
  { type: 'localbattery-device', field: 'minInterval', value: '1000', valid: true },
  // Write values against the point and the device's limit of its direction.
  {
    type: 'localbattery-write',
    field: 'value',
    value: '800',
    valid: true,
    node: { ...on1600, point: 'feedInPowerLimitSetting', valueType: 'str' },
  },
  {
    type: 'localbattery-write',
    field: 'value',
    value: '801',
    valid: false,
    node: { ...on1600, point: 'feedInPowerLimitSetting', valueType: 'str' },
  },
  {
    type: 'localbattery-write',
    field: 'value',
    value: '1200',
    valid: true,
    node: { ...on1600, point: 'inverterInputLimitSetting', valueType: 'str' },
  },
  {
    type: 'localbattery-write',
    field: 'value',
    value: '[1,1200,90]',
    valid: true,
    node: { ...on1600, point: 'controlState', valueType: 'json' },
  },
  {
    type: 'localbattery-write',
    field: 'value',
    value: '[2,801,10]',
    valid: false,
    node: { ...on1600, point: 'controlState', valueType: 'json' },
  },
  { type: 'localbattery-write', field: 'value', value: '[0,0,0]', valid: true, node: { point: 'controlState', valueType: 'json' } },
  { type: 'localbattery-write', field: 'value', value: '50.5', valid: false, node: { point: 'controlPower', valueType: 'str' } },
  { type: 'localbattery-write', field: 'value', value: 'Enable', valid: true, node: { point: 'lightSetting', valueType: 'str' } },
  { type: 'localbattery-write', field: 'value', value: 'Dimmed', valid: false, node: { point: 'lightSetting', valueType: 'str' } },
  // Dead bands.
  { type: 'localbattery-read', field: 'deadband', value: '', valid: true },
  { type: 'localbattery-read', field: 'deadband', value: '20', valid: true },
  { type: 'localbattery-read', field: 'deadband', value: 'batterySoc=1, 6000=25', valid: true },
  { type: 'localbattery-read', field: 'deadband', value: 'batterySoc=1=2', valid: false },
  { type: 'localbattery-read', field: 'deadband', value: '-1', valid: false },
  { type: 'localbattery-read', field: 'deadband', value: 'noSuchPoint=1', valid: false },
  // Zero feed-in: the maximum powers within the device's limit of their direction, whole SOCs, time-outs above 0.
  { type: 'localbattery-zero-feed-in', field: 'maxCharge', value: '', valid: true },
  { type: 'localbattery-zero-feed-in', field: 'maxCharge', value: '1200', valid: true, node: on1600 },
  { type: 'localbattery-zero-feed-in', field: 'maxCharge', value: '1201', valid: false, node: on1600 },
  { type: 'localbattery-zero-feed-in', field: 'maxDischarge', value: '800', valid: true, node: on1600 },
  { type: 'localbattery-zero-feed-in', field: 'maxDischarge', value: '801', valid: false, node: on1600 },
  { type: 'localbattery-zero-feed-in', field: 'maxDischarge', value: '49', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'chargeSoc', value: '90.5', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'dischargeSoc', value: '4', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'target', value: '-50', valid: true },
  { type: 'localbattery-zero-feed-in', field: 'target', value: '0x50', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'deadBand', value: '-1', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'meterTimeout', value: '0', valid: false },
  // Under two meter intervals (1 s by default): standby and back at every reading.
  { type: 'localbattery-zero-feed-in', field: 'meterTimeout', value: '1', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'meterTimeout', value: '2', valid: true },
  { type: 'localbattery-zero-feed-in', field: 'meterTimeout', value: '${METER_TIMEOUT}', valid: true },
  // New passwords: 1 to 16 bytes.
  { type: 'localbattery-password', field: 'password', value: 'x', valid: true, credential: true },
  { type: 'localbattery-password', field: 'password', value: 'ä'.repeat(8), valid: true, credential: true },
  { type: 'localbattery-password', field: 'password', value: 'ä'.repeat(9), valid: false, credential: true },
];

function limitsOf(node: Record<string, unknown> | undefined): PowerLimits | undefined {
  const device = typeof node?.device === 'string' ? DEVICES[node.device] : undefined;
  return device ? deviceLimits(deviceInputs.deploy(device).values) : undefined;
}

function passes(check: () => unknown): boolean {
  try {
    check();
    return true;
  } catch {
    return false;
  }
}

/** The runtime's verdict on a row: the function its node runs at deploy (or, for a write, on each message). */
export function runtimeVerdict(row: Verdict): boolean {
  const settings = { ...row.node, [row.field]: row.value };
  switch (row.type) {
    case 'localbattery-control':
      return passes(() => controlSettings(settings, limitsOf(row.node)));
    case 'localbattery-device':
      return deviceInputs.deploy(settings).error === undefined;
    case 'localbattery-write': {
      const value = row.node?.valueType === 'json' ? JSON.parse(row.value) : row.value;
      return passes(() => validateWrite(resolveWritePoint(row.node?.point), value, limitsOf(row.node)));
    }
    case 'localbattery-read':
      return passes(() => parseDeadBand(row.value));
    case 'localbattery-zero-feed-in':
      // Node-RED puts ${NAME} in before the node sees it: a value within bounds stands in for it.
      return passes(() =>
        zeroFeedInSettings({ [row.field]: /^\$\{/.test(row.value) ? '10' : row.value }, limitsOf(row.node) ?? deviceLimits({})),
      );
    case 'localbattery-password':
      return passes(() => checkPassword(row.value, 'new password'));
    default:
      throw new Error(`no runtime verdict for ${row.type}`);
  }
}

/** A row's name in an assertion. */
export function describeRow(row: Verdict): string {
  return `${row.type} ${row.field} = ${JSON.stringify(row.value)}${row.node ? ' ' + JSON.stringify(row.node) : ''}`;
}
