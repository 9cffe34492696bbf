/**
 * One table of inputs for the editor and the runtime: each row is a node setting, the runtime's verdict is taken from
 * the very function the node runs at deploy, the editor's from the field's validator in the node's editor script
 * (test/validator.test.ts runs it in a stand-in editor, test/editor.test.ts in Chromium). Both must equal `valid`.
 */
import { resolveWritePoint, validateWrite, type PowerLimits } from '../src/points/catalogue';
import { controlSettings } from '../src/control/control';
import * as inputs from '../src/editor/inputs';
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
  // Charges at most 800 W, discharges up to 1500 W: a control node's power meets the larger limit.
  vdevice1500: {
    id: 'vdevice1500',
    type: 'localbattery-device',
    name: '1500',
    host: '127.0.0.1',
    chargeLimit: '800',
    dischargeLimit: '1500',
  },
};

export interface Verdict {
  type: string;
  field: string;
  /** As the editor holds it: text, or a list (a read node's points). */
  value: string | unknown[];
  /** What Node-RED puts in for a `${NAME}` value when the flow starts. */
  env?: string;
  valid: boolean;
  /** The other properties of the node (its device, the write point and value type). */
  node?: Record<string, unknown>;
  /** A credential rather than a property. */
  credential?: boolean;
}

const on1600 = { device: 'vdevice1600' };
const on1500 = { device: 'vdevice1500' };

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
  { type: 'localbattery-control', field: 'power', value: '1500', valid: true, node: on1500 },
  { type: 'localbattery-control', field: 'power', value: '1501', valid: false, node: on1500 },
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
  // Empty number settings take the client's defaults.
  { type: 'localbattery-device', field: 'minInterval', value: '', valid: true },
  { type: 'localbattery-device', field: 'timeout', value: '', valid: true },
  { type: 'localbattery-device', field: 'port', value: '', valid: true },
  // One host rule: addresses (IPv6 with a zone, in brackets) and names (underscores, a trailing dot), never a port.
  { type: 'localbattery-device', field: 'host', value: '192.168.1.5:8080', valid: false },
  { type: 'localbattery-device', field: 'host', value: '192.168.1.5', valid: true },
  { type: 'localbattery-device', field: 'host', value: 'fe80::1%eth0', valid: true },
  { type: 'localbattery-device', field: 'host', value: '[::1]', valid: true },
  { type: 'localbattery-device', field: 'host', value: '::ffff:192.168.1.5', valid: true },
  { type: 'localbattery-device', field: 'host', value: 'my_battery.lan', valid: true },
  { type: 'localbattery-device', field: 'host', value: 'battery.local.', valid: true },
  { type: 'localbattery-device', field: 'host', value: '999.1.1.1', valid: false },
  { type: 'localbattery-device', field: 'host', value: 'http://battery.lan', valid: false },
  { type: 'localbattery-device', field: 'host', value: '', valid: false },
  // ${NAME} as Node-RED takes it: the whole value, first character $, no spaces in the name; also the older $(NAME).
  { type: 'localbattery-device', field: 'host', value: '${BATTERY_HOST}', env: '192.168.1.50', valid: true },
  { type: 'localbattery-device', field: 'host', value: ' ${BATTERY_HOST}', env: '192.168.1.50', valid: false },
  { type: 'localbattery-device', field: 'port', value: '${PORT}', env: '8080', valid: true },
  { type: 'localbattery-device', field: 'port', value: '$(PORT)', env: '8080', valid: true },
  { type: 'localbattery-device', field: 'port', value: '${MY PORT}', env: '8080', valid: false },
  { type: 'localbattery-device', field: 'port', value: '${PORT}x', env: '8080', valid: false },
  // The namespace is trimmed by the runtime and the editor alike.
  { type: 'localbattery-device', field: 'namespace', value: ' Vendor ', valid: true },
  { type: 'localbattery-device', field: 'namespace', value: '', valid: true },
  { type: 'localbattery-device', field: 'namespace', value: 'Ven dor', valid: false },
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
  // Points and the poll interval.
  { type: 'localbattery-read', field: 'points', value: ['batterySoc', 6000], valid: true },
  { type: 'localbattery-read', field: 'points', value: [], valid: false },
  { type: 'localbattery-read', field: 'points', value: ['noSuchPoint'], valid: false },
  { type: 'localbattery-read', field: 'points', value: [70000], valid: false },
  { type: 'localbattery-read', field: 'interval', value: '', valid: true },
  { type: 'localbattery-read', field: 'interval', value: '0.5', valid: false },
  { type: 'localbattery-read', field: 'interval', value: '${POLL}', env: '5', valid: true },
  // A discover node's target: empty (broadcast) or one host by the device's host rule.
  { type: 'localbattery-discover', field: 'target', value: '', valid: true },
  { type: 'localbattery-discover', field: 'target', value: 'my_battery.lan', valid: true },
  { type: 'localbattery-discover', field: 'target', value: '192.168.1.5:8099', valid: false },
  { type: 'localbattery-discover', field: 'target', value: '${TARGET}', env: '192.168.1.255', valid: true },
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
  // The charge mode's power within the device's charge limit, its SOC within the control write's.
  { type: 'localbattery-zero-feed-in', field: 'chargeModePower', value: '', valid: true },
  { type: 'localbattery-zero-feed-in', field: 'chargeModePower', value: '1200', valid: true, node: on1600 },
  { type: 'localbattery-zero-feed-in', field: 'chargeModePower', value: '1201', valid: false, node: on1600 },
  { type: 'localbattery-zero-feed-in', field: 'chargeModePower', value: '49', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'chargeModePower', value: '800.5', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'chargeModeSoc', value: '80', valid: true },
  { type: 'localbattery-zero-feed-in', field: 'chargeModeSoc', value: '101', valid: false },
  // Empty: Charge to. The leash: whole SOC points from 1 (0 would let no command move the battery).
  { type: 'localbattery-zero-feed-in', field: 'chargeModeSoc', value: '', valid: true },
  { type: 'localbattery-zero-feed-in', field: 'leash', value: '', valid: true },
  { type: 'localbattery-zero-feed-in', field: 'leash', value: '3', valid: true },
  { type: 'localbattery-zero-feed-in', field: 'leash', value: '0', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'leash', value: '2.5', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'leash', value: '101', valid: false },
  { type: 'localbattery-zero-feed-in', field: 'meterTimeout', value: '${METER_TIMEOUT}', env: '10', valid: true },
  // New passwords: 1 to 16 bytes.
  { type: 'localbattery-password', field: 'password', value: 'x', valid: true, credential: true },
  { type: 'localbattery-password', field: 'password', value: 'ä'.repeat(8), valid: true, credential: true },
  { type: 'localbattery-password', field: 'password', value: 'ä'.repeat(9), valid: false, credential: true },
];

function limitsOf(node: Record<string, unknown> | undefined): PowerLimits | undefined {
  const device = typeof node?.device === 'string' ? DEVICES[node.device] : undefined;
  return device ? inputs.deviceLimits(inputs.deviceInputs.deploy(device).values) : undefined;
}

function passes(check: () => unknown): boolean {
  try {
    check();
    return true;
  } catch {
    return false;
  }
}

/** The row's value as the node gets it: Node-RED puts in `${NAME}` (as envVarName matches it) before the node starts. */
function deployedValue(row: Verdict): unknown {
  if (inputs.envVarName(row.value) === undefined) return row.value;
  if (row.env === undefined) throw new Error(`${describeRow(row)}: no env value`);
  return row.env;
}

/** The runtime's verdict on a row: the function its node runs at deploy (or, for a write, on each message). */
export function runtimeVerdict(row: Verdict): boolean {
  const value = deployedValue(row);
  const settings = { ...row.node, [row.field]: value };
  switch (row.type) {
    case 'localbattery-control':
      return passes(() => controlSettings(settings, limitsOf(row.node)));
    case 'localbattery-device':
      return inputs.deviceInputs.deploy(settings).error === undefined;
    case 'localbattery-write': {
      const parsed = row.node?.valueType === 'json' ? JSON.parse(value as string) : value;
      return passes(() => validateWrite(resolveWritePoint(row.node?.point), parsed, limitsOf(row.node)));
    }
    case 'localbattery-read':
      if (row.field === 'points') return passes(() => inputs.pointList(value, 'points'));
      if (row.field === 'interval') return passes(() => inputs.numberIn(inputs.NUMBER_RULES.pollInterval)(value, 'interval'));
      return passes(() => inputs.parseDeadBand(value));
    case 'localbattery-discover':
      return passes(() => inputs.discoveryTarget(value, 'target'));
    case 'localbattery-zero-feed-in':
      return passes(() => inputs.zeroFeedInSettings({ [row.field]: value }, limitsOf(row.node) ?? inputs.deviceLimits({})));
    case 'localbattery-password':
      return passes(() => checkPassword(value, 'new password'));
    default:
      throw new Error(`no runtime verdict for ${row.type}`);
  }
}

/** A row's name in an assertion. */
export function describeRow(row: Verdict): string {
  return `${row.type} ${row.field} = ${JSON.stringify(row.value)}${row.node ? ' ' + JSON.stringify(row.node) : ''}`;
}
