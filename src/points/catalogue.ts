/**
 * The point catalogue: every read point (spec 2.1) and write point (spec 2.2) with its address, stable name,
 * label, category, type, unit, enum labels and write bounds, plus the read/write pairs of the field notes and
 * the points shipped devices serve beyond the specification (marked `beyondSpec`, each with its `source`).
 * Runtime validation, the editor pickers, the simulator and the generated docs (`npm run docs`) all derive from this file.
 */
import { ValidationError } from '../errors';
import { homeAssistantSensor, type HomeAssistantSensor } from './home-assistant';
import type { EnumOption, ModelClass, ReadPoint, ReadType } from './read-point';
import { MAX_TEXT_LENGTH, decimalNumber } from '../numbers';

export type { EnumOption, ModelClass, ReadPoint, ReadType } from './read-point';

export type WriteType = 'enum' | 'uint' | 'int';

export interface WritePoint {
  direction: 'write';
  address: number;
  name: string;
  label: string;
  category: string;
  type: WriteType;
  unit?: string;
  enum?: EnumOption[];
  min?: number;
  max?: number;
  note?: string;
  /** True where the device accepts the write only in real-time control mode (spec 4, rule 3). */
  realTimeOnly?: boolean;
  /** Name of the read point that reports this setting. */
  readAs?: string;
  /** Added to a written value to give what the paired read point reports, where the two differ (grid charging). */
  readValueOffset?: number;
  /** A power point whose upper bound is one of the device's limits (see PowerDirection); `max` is the specification's. */
  powerLimited?: PowerDirection;
  /** The model classes that take the write, where the sources say (see SETTINGS_MODELS); else every class. */
  models?: ModelClass[];
}

export type Point = ReadPoint | WritePoint;

const DISABLE_ENABLE: EnumOption[] = [
  { value: 0, label: 'Disable' },
  { value: 1, label: 'Enable' },
];
export const WORKING_MODES: EnumOption[] = [
  { value: 1, label: 'Self-consumed Prioritized' },
  { value: 4, label: 'Real-time Control' },
  { value: 5, label: 'Charge/Discharge Schedule' },
];
const SOURCE_MAKER_1600 = "maker's point table, BK1600/BK1600Ultra tab (INDEVOLT/indevolt-doc, docs/hardware/geek/open-data.md)";
const SOURCE_HA_GEN1 = 'Home Assistant core indevolt test fixture gen_1.json (BK1600)';
const SOURCE_INDEVOLT_API = 'Xirt/indevolt-api const.py';
const SOURCE_MAKER_LIMITS = "maker's point table (INDEVOLT/indevolt-doc), points 114 and 115 (field notes: limits the device reports)";

/** Working modes as read (7101): the specification's, plus 0 that the 1600 class reports. */
const READ_WORKING_MODES: EnumOption[] = [
  { value: 0, label: 'Outdoor Portable', beyondSpec: true, source: `${SOURCE_MAKER_1600}; Home Assistant core indevolt sensor.py` },
  ...WORKING_MODES,
];
export const CONTROL_STATES: EnumOption[] = [
  { value: 0, label: 'Standby' },
  { value: 1, label: 'Charging' },
  { value: 2, label: 'Discharging' },
];

/** Addresses and value ranges of the real-time control write (spec 2.2 and section 4, rule 2). */
export const REAL_TIME = {
  mode: 4,
  modeAddress: 47005,
  stateAddress: 47015,
  powerAddress: 47016,
  socAddress: 47017,
} as const;

/** The real-time control state 0 (Standby). */
const STANDBY = 0;

export const MAX_ADDRESSES_PER_READ = 50;

/**
 * The range of each of the device configuration's two power limits, in W: the charge limit bounds the power of a
 * charge, the discharge limit that of a discharge (and the power points of each direction, see `powerLimited`).
 * `default` is the specification's 2400 W; `max` the 10 800 W the maker's Home Assistant integration allows for a
 * cluster; `min` the 800 W discharge limit of the 1600 class, the smallest limit the sources know, so that no limit
 * shuts out a power every model accepts. Pass `{ chargeLimit, dischargeLimit }` as `limits` to validateWrite,
 * validateWriteValue and describeAllowed; without them they keep the specification's bounds.
 */
export const POWER_LIMIT = { default: 2400, min: 800, max: 10800, unit: 'W' } as const;

/** The device's charge and discharge limits in W, each from POWER_LIMIT.min to POWER_LIMIT.max. */
export interface PowerLimits {
  chargeLimit: number;
  dischargeLimit: number;
}

/** A group's maximum powers are within the sums of its units' limits. */
export function groupLimits(units: readonly { limits: PowerLimits }[]): PowerLimits {
  const sum = (key: 'chargeLimit' | 'dischargeLimit') => units.reduce((total, u) => total + u.limits[key], 0);
  return { chargeLimit: sum('chargeLimit'), dischargeLimit: sum('dischargeLimit') };
}

export type WriteLimits = Partial<PowerLimits>;

/**
 * Which limit bounds a power point: 'charge' (power into the battery), 'discharge' (power out of it), or 'larger'
 * for a power that serves either direction (47016 written alone applies to whatever state is in force, which the
 * client cannot know for sure when it sends: the three-value write of 47015 gets the state's own limit).
 */
export type PowerDirection = 'charge' | 'discharge' | 'larger';

/**
 * The model classes: products, what they accept beyond the point bounds (maker's tables, BK1600 tab, and the
 * integrations) and the minimum firmware of the specification (section 1).
 */
export const MODEL_CLASSES: Record<
  ModelClass,
  { label: string; products: string[]; maxChargePower: number; maxDischargePower: number; minimumFirmware: string; source: string }
> = {
  '2000': {
    label: 'SolidFlex2000/PowerFlex2000',
    products: ['SolidFlex 2000', 'PowerFlex 2000'],
    maxChargePower: 2400,
    maxDischargePower: 2400,
    minimumFirmware: 'CMS V1406.07.002E',
    source: "maker's point table, SolidFlex2000/PowerFlex2000 tab",
  },
  '1600': {
    label: 'BK1600/BK1600Ultra',
    products: ['BK1600', 'BK1600 Ultra'],
    maxChargePower: 1200,
    maxDischargePower: 800,
    minimumFirmware: 'V1.3.0A_R006.072_M4848_00000039',
    source: `${SOURCE_MAKER_1600}; ${SOURCE_INDEVOLT_API} DEVICE_LIMITS`,
  },
};

/** Read addresses of the specification that the 1600 class serves: its tab of the maker's table and the HA gen_1 fixture. */
export const MODEL_1600_SPEC_ADDRESSES: readonly number[] = [
  0, 7101, 1664, 1665, 2108, 1502, 1505, 2101, 2107, 1501, 6000, 6001, 6002, 6105, 6004, 6005, 6006, 6007, 7120, 606, 1600, 1601, 1632,
  1633, 667, 2104, 2105, 11034, 142,
];

type ReadSpec = Omit<ReadPoint, 'direction' | 'category' | 'type'> & { type?: ReadType };

function group(category: string, type: ReadType, specs: ReadSpec[]): ReadPoint[] {
  return specs.map((spec) => ({ direction: 'read', category, ...spec, type: spec.type ?? type }));
}

/** Points shipped devices serve that the specification does not list: own picker groups, each with its source. */
function beyondSpec(category: string, type: ReadType, specs: (ReadSpec & { source: string })[]): ReadPoint[] {
  return group(category, type, specs).map((point) => ({ ...point, beyondSpec: true }));
}

const FIRMWARE_CATEGORY = 'Serial number and firmware';

/** Entries of two tables side by side; tables of different lengths are a mistake in this file, found at load. */
function zip<A, B>(first: readonly A[], second: readonly B[]): [A, B][] {
  if (first.length !== second.length) throw new Error(`catalogue tables of ${first.length} and ${second.length} entries`);
  return first.map((entry, i) => [entry, second[i] as B]);
}

function modularFirmware(): ReadSpec[] {
  const dcdc = [1136, 1138, 1140, 1142, 1098];
  const bms = [1137, 1139, 1141, 1143, 1099];
  return zip(dcdc, bms).flatMap(([dcdcAddress, bmsAddress], i): ReadSpec[] => [
    { address: dcdcAddress, name: `dcdc${i + 1}Firmware`, label: `DCDC${i + 1} firmware version (modular models)` },
    { address: bmsAddress, name: `bms${i + 1}Firmware`, label: `BMS${i + 1} firmware version (modular models)` },
  ]);
}

/** Per-unit battery addresses: SN, SOC, voltage, current, temperature, cell 1 and cell 2 voltage. */
const BATTERY_UNITS: { key: string; label: string; sn: number; snNote?: string; addresses: number[] }[] = [
  { key: 'mb', label: 'MB', sn: 9008, addresses: [9000, 9004, 9013, 9012, 9009, 9011] },
  { key: 'pack1', label: 'Pack1', sn: 9032, addresses: [9016, 9020, 19173, 9030, 9021, 9023] },
  { key: 'pack2', label: 'Pack2', sn: 9051, addresses: [9035, 9039, 19174, 9049, 9040, 9042] },
  { key: 'pack3', label: 'Pack3', sn: 9070, addresses: [9054, 9058, 19175, 9068, 9059, 9061] },
  {
    key: 'pack4',
    label: 'Pack4',
    sn: 9165,
    addresses: [9149, 9153, 19176, 9163, 9154, 9156],
    snNote: 'The specification lists it as Num; read as text so that leading zeros stay.',
  },
  { key: 'pack5', label: 'Pack5', sn: 9218, addresses: [9202, 9206, 19177, 9216, 9219, 9222] },
];

const SOURCE_MAKER_TABLE =
  "maker's point table (INDEVOLT/indevolt-doc docs/hardware/open-data/http-api.md, PG1000/PG2000/PG3000 series tab)";

/** Per-unit points of the maker's table beyond the specification, in BATTERY_UNITS order. */
const UNIT_EXTRAS: { soh: number; cycles: number; dcdcState: number; heaterState: number }[] = [
  { soh: 9002, cycles: 9003, dcdcState: 9079, heaterState: 9080 },
  { soh: 9018, cycles: 9019, dcdcState: 9095, heaterState: 9096 },
  { soh: 9037, cycles: 9038, dcdcState: 9111, heaterState: 9112 },
  { soh: 9056, cycles: 9057, dcdcState: 9127, heaterState: 9128 },
  { soh: 9151, cycles: 9152, dcdcState: 9143, heaterState: 9144 },
  { soh: 9204, cycles: 9205, dcdcState: 9278, heaterState: 9279 },
];
const DCDC_STATES: EnumOption[] = [
  { value: 0, label: 'Standby' },
  { value: 1, label: 'Charging' },
  { value: 2, label: 'Discharging' },
  { value: 3, label: 'Protection' },
];
const OFF_ON: EnumOption[] = [
  { value: 0, label: 'Off' },
  { value: 1, label: 'On' },
];

function batteryUnits(): ReadPoint[] {
  const fields: { suffix: string; label: string; unit?: string }[] = [
    { suffix: 'Soc', label: 'SOC', unit: '%' },
    { suffix: 'Voltage', label: 'voltage', unit: 'V' },
    { suffix: 'Current', label: 'current', unit: 'A' },
    { suffix: 'Temperature', label: 'temperature' },
    { suffix: 'Cell1Voltage', label: 'cell 1 voltage', unit: 'V' },
    { suffix: 'Cell2Voltage', label: 'cell 2 voltage', unit: 'V' },
  ];
  return BATTERY_UNITS.flatMap((unit) => {
    const category = `Battery unit ${unit.label}`;
    const sn: ReadPoint = {
      direction: 'read',
      category,
      type: 'string',
      address: unit.sn,
      name: `${unit.key}SerialNumber`,
      label: `${unit.label} serial number`,
      ...(unit.snNote ? { note: unit.snNote } : {}),
    };
    const values = zip(fields, unit.addresses).map(([field, address]): ReadPoint => ({
      direction: 'read',
      category,
      type: 'num',
      unit: field.unit,
      address,
      name: `${unit.key}${field.suffix}`,
      label: `${unit.label} ${field.label}`,
      ...(field.suffix === 'Temperature' ? { note: 'No unit given by the specification.' } : {}),
    }));
    return [sn, ...values];
  });
}

function pvInputs(): ReadSpec[] {
  const specs: ReadSpec[] = [{ address: 1501, name: 'pvPower', label: 'Total DC output power', unit: 'W' }];
  for (let input = 1; input <= 4; input++) {
    specs.push({ address: 1631 + input, name: `pv${input}Current`, label: `DC input ${input} current`, unit: 'A' });
    specs.push({ address: 1599 + input, name: `pv${input}Voltage`, label: `DC input ${input} voltage`, unit: 'V' });
    specs.push({ address: 1663 + input, name: `pv${input}Power`, label: `DC input ${input} power`, unit: 'W' });
  }
  return specs;
}

export const READ_POINTS: readonly ReadPoint[] = [
  ...group(FIRMWARE_CATEGORY, 'string', [
    { address: 0, name: 'serialNumber', label: 'Device serial number' },
    { address: 1118, name: 'emsFirmware', label: 'EMS firmware version (2000 series)' },
    { address: 1109, name: 'bmsMbFirmware', label: 'BMS-MB firmware version (2000 series)' },
    { address: 1119, name: 'pcsFirmware', label: 'PCS firmware version (2000 series)' },
    { address: 1120, name: 'dcdcFirmware', label: 'DCDC firmware version (2000 series)' },
    ...modularFirmware(),
  ]),
  ...group('System', 'num', [
    { address: 7101, name: 'workingMode', label: 'Working mode', type: 'enum', enum: READ_WORKING_MODES, writtenBy: 'workingModeSetting' },
    { address: 142, name: 'ratedCapacity', label: 'Rated capacity', unit: 'kWh' },
    {
      address: 2618,
      name: 'gridCharging',
      label: 'Grid charging',
      writtenBy: 'gridChargingSetting',
      enum: [
        { value: 1000, label: 'Disable' },
        { value: 1001, label: 'Enable' },
      ],
    },
    { address: 11009, name: 'inverterInputLimit', label: 'Inverter input limit', unit: 'W', writtenBy: 'inverterInputLimitSetting' },
    { address: 2101, name: 'acInputPower', label: 'Total AC input power', unit: 'W' },
    { address: 2108, name: 'acOutputPower', label: 'Total AC output power', unit: 'W' },
    { address: 11010, name: 'feedInPowerLimit', label: 'Feed-in power limit', unit: 'W', writtenBy: 'feedInPowerLimitSetting' },
    { address: 11011, name: 'maxAcOutputPower', label: 'Max AC output power', unit: 'W', writtenBy: 'maxAcOutputPowerSetting' },
    { address: 680, name: 'bypass', label: 'Bypass', enum: DISABLE_ENABLE, writtenBy: 'bypassSetting' },
    {
      address: 11039,
      name: 'bypassMode',
      label: 'Bypass mode',
      enum: [
        { value: 0, label: 'Eps' },
        { value: 1, label: 'M-Inv' },
      ],
      note: 'Switches automatically according to forward and reverse current.',
    },
    { address: 6105, name: 'backupSoc', label: 'Backup SOC', unit: '%', writtenBy: 'backupSocSetting' },
    { address: 7171, name: 'light', label: 'Light', enum: DISABLE_ENABLE, writtenBy: 'lightSetting' },
    {
      address: 8646,
      name: 'calibrationCycle',
      label: 'Battery calibration cycle',
      unit: 'day',
      note: '0 to 60; 0 means off. Operating time without a full charge.',
    },
    {
      address: 8647,
      name: 'calibrationStartTime',
      label: 'Battery calibration start time',
      format: 'hourMinute',
      note: 'High byte is the hour, low byte the minute.',
    },
    { address: 2802, name: 'calibrationChargePower', label: 'Battery calibration charging power (AC)', unit: 'W' },
  ]),
  ...group('Cluster', 'enum', [
    {
      address: 606,
      name: 'masterSlave',
      label: 'Master-slave identification',
      enum: [
        { value: 1000, label: 'Master' },
        { value: 1001, label: 'Slave' },
        { value: 1002, label: 'None' },
      ],
    },
  ]),
  ...group('Bypass', 'float', [
    { address: 667, name: 'bypassPower', label: 'Bypass power', unit: 'W', note: 'Real-time power through the bypass path.' },
  ]),
  ...group('Energy', 'num', [
    { address: 2107, name: 'acInputEnergyTotal', label: 'Total AC input energy', unit: 'kWh' },
    { address: 2104, name: 'acOutputEnergyTotal', label: 'Total AC output energy', unit: 'kWh' },
    { address: 11035, name: 'bypassMinvInputEnergyDaily', label: 'Daily bypass M-inv input energy', unit: 'Wh' },
    { address: 11034, name: 'bypassMinvInputEnergyTotal', label: 'Total bypass M-inv input energy', unit: 'Wh' },
    { address: 11037, name: 'offGridBypassOutputEnergyDaily', label: 'Daily off-grid bypass output energy', unit: 'kWh' },
    { address: 2105, name: 'offGridBypassOutputEnergyTotal', label: 'Total off-grid bypass output energy', unit: 'kWh' },
    { address: 9285, name: 'bypassOutputEnergyDaily', label: 'Daily bypass output energy', unit: 'Wh' },
    { address: 9284, name: 'bypassOutputEnergyTotal', label: 'Total bypass output energy', unit: 'Wh' },
    { address: 1502, name: 'pvEnergyDaily', label: 'Daily PV generation', unit: 'kWh' },
    { address: 1505, name: 'pvEnergyTotal', label: 'Cumulative production', unit: 'Wh' },
    { address: 6004, name: 'batteryChargeEnergyDaily', label: 'Battery daily charging energy', unit: 'kWh' },
    { address: 6005, name: 'batteryDischargeEnergyDaily', label: 'Battery daily discharging energy', unit: 'kWh' },
    { address: 6006, name: 'batteryChargeEnergyTotal', label: 'Battery total charging energy', unit: 'kWh' },
    { address: 6007, name: 'batteryDischargeEnergyTotal', label: 'Battery total discharging energy', unit: 'kWh' },
  ]),
  ...group('Meter and grid', 'num', [
    {
      address: 7120,
      name: 'meterStatus',
      label: 'Meter connection status',
      type: 'enum',
      enum: [
        { value: 1000, label: 'Enable' },
        { value: 1001, label: 'Disable' },
      ],
    },
    { address: 11016, name: 'meterPower', label: 'Meter power', type: 'float', unit: 'W', note: 'Positive: import from the grid.' },
    { address: 2600, name: 'gridVoltage', label: 'Grid voltage', unit: 'V' },
    { address: 2612, name: 'gridFrequency', label: 'Grid frequency', unit: 'Hz' },
  ]),
  ...group('Battery', 'num', [
    {
      address: 6001,
      name: 'batteryState',
      label: 'Battery charge/discharge state',
      type: 'enum',
      enum: [
        { value: 1000, label: 'Static' },
        { value: 1001, label: 'Charging' },
        { value: 1002, label: 'Discharging' },
      ],
    },
    { address: 6000, name: 'batteryPower', label: 'Battery power', unit: 'W', note: 'Positive: discharging; negative: charging.' },
    { address: 6002, name: 'batterySoc', label: 'Battery SOC total', unit: '%' },
  ]),
  ...batteryUnits(),
  ...group('PV', 'num', pvInputs()),
  ...beyondSpec('Real-time control read-back (beyond spec)', 'num', [
    {
      address: 6107,
      name: 'controlStateReadback',
      label: 'Real-time control state (read-back)',
      models: ['1600'],
      source: SOURCE_HA_GEN1,
      note: "The maker's table (PG series) gives 0 standby, 1 charge, 2 discharge; a 1600-class device reported 1000.",
    },
    {
      address: 6108,
      name: 'controlSocReadback',
      label: 'Real-time control SOC (read-back)',
      unit: '%',
      models: ['1600'],
      source: SOURCE_HA_GEN1,
    },
    {
      address: 6109,
      name: 'controlPowerReadback',
      label: 'Real-time control power limit (read-back)',
      unit: 'W',
      models: ['1600'],
      source: `${SOURCE_INDEVOLT_API} (READ_REALTIME_POWER_LIMIT); ${SOURCE_HA_GEN1}`,
    },
  ]),
  ...beyondSpec('Device limits (beyond spec)', 'num', [
    {
      address: 114,
      name: 'maxChargePower',
      label: 'Maximum charge power',
      unit: 'W',
      models: ['2000', '1600'],
      source: SOURCE_MAKER_LIMITS,
      note: 'What the device itself allows; Test connection offers it as the charge limit. The source names no model class.',
    },
    {
      address: 115,
      name: 'maxDischargePower',
      label: 'Maximum discharge power',
      unit: 'W',
      models: ['2000', '1600'],
      source: SOURCE_MAKER_LIMITS,
      note: 'What the device itself allows; Test connection offers it as the discharge limit. The source names no model class.',
    },
  ]),
  ...beyondSpec('Temperatures (beyond spec)', 'num', [
    {
      address: 7600,
      name: 'inverterTemperature',
      label: 'Inverter temperature',
      unit: '°C',
      models: ['1600'],
      source: `${SOURCE_INDEVOLT_API}; ${SOURCE_HA_GEN1}`,
    },
    {
      address: 7605,
      name: 'pack1Temperature1600',
      label: 'Battery pack 1 temperature (1600 class)',
      unit: '°C',
      models: ['1600'],
      source: `${SOURCE_INDEVOLT_API}; ${SOURCE_HA_GEN1}`,
    },
    {
      address: 7620,
      name: 'pack2Temperature1600',
      label: 'Battery pack 2 temperature (1600 class)',
      unit: '°C',
      models: ['1600'],
      source: `${SOURCE_INDEVOLT_API}; ${SOURCE_HA_GEN1}`,
    },
    {
      address: 7621,
      name: 'pack3Temperature1600',
      label: 'Battery pack 3 temperature (1600 class)',
      unit: '°C',
      models: ['1600'],
      source: `${SOURCE_INDEVOLT_API}; ${SOURCE_HA_GEN1}`,
    },
  ]),
  ...beyondSpec('Meter, 1600 class (beyond spec)', 'float', [
    {
      address: 21028,
      name: 'meterPower1600',
      label: 'Meter power (1600 class)',
      unit: 'W',
      models: ['1600'],
      source: SOURCE_MAKER_1600,
      note: 'The 1600 class reports its meter here instead of 11016.',
    },
  ]),
  ...beyondSpec(
    'Battery health (beyond spec)',
    'num',
    zip(BATTERY_UNITS, UNIT_EXTRAS).flatMap(([unit, extra]): (ReadSpec & { source: string })[] => [
      {
        address: extra.soh,
        name: `${unit.key}Soh`,
        label: `${unit.label} state of health`,
        unit: '%',
        models: ['2000'],
        source: SOURCE_MAKER_TABLE,
      },
      {
        address: extra.cycles,
        name: `${unit.key}CycleCount`,
        label: `${unit.label} cycle count`,
        models: ['2000'],
        source: SOURCE_MAKER_TABLE,
      },
    ]),
  ),
  ...beyondSpec('Battery state (beyond spec)', 'enum', [
    {
      address: 7121,
      name: 'heatingState',
      label: 'Heating state',
      type: 'num',
      models: ['1600'],
      source: `${SOURCE_INDEVOLT_API} (HEATING_STATE); ${SOURCE_HA_GEN1}`,
      note: 'Encoding not published.',
    },
    ...zip(BATTERY_UNITS, UNIT_EXTRAS).flatMap(([unit, extra]): (ReadSpec & { source: string })[] => [
      {
        address: extra.dcdcState,
        name: `${unit.key}DcdcState`,
        label: `${unit.label} DC/DC state`,
        enum: DCDC_STATES,
        models: ['2000'],
        source: SOURCE_MAKER_TABLE,
      },
      {
        address: extra.heaterState,
        name: `${unit.key}HeatingState`,
        label: `${unit.label} heater state`,
        enum: OFF_ON,
        models: ['2000'],
        source: `${SOURCE_MAKER_TABLE}; ${SOURCE_INDEVOLT_API}`,
      },
    ]),
  ]),
  ...beyondSpec('System state (beyond spec)', 'num', [
    {
      address: 11006,
      name: 'systemStatus',
      label: 'System operating status',
      type: 'enum',
      models: ['2000'],
      source: SOURCE_MAKER_TABLE,
      enum: [
        'Powered Off',
        'Sleep',
        'Starting',
        'MPPT Operating',
        'Current Limiting',
        'Shutting Down',
        'INV Fault',
        'Standby',
        'Grid Charging',
        'Grid Discharging',
        'Off-grid Charging',
        'Off-grid Discharging',
        'Low Battery Charging (to Backup SOC)',
        'Deep Sleep',
        'Scheduled Full Charge',
        'Off-grid Deep Sleep',
      ].map((label, i) => ({ value: i + 1, label })),
    },
    {
      address: 5000,
      name: 'homeLoadPower',
      label: 'Home load power',
      type: 'float',
      unit: 'W',
      models: ['2000'],
      source: SOURCE_MAKER_TABLE,
    },
    { address: 9405, name: 'systemSoc', label: 'System SOC (all units)', unit: '%', models: ['2000'], source: SOURCE_MAKER_TABLE },
    { address: 11019, name: 'chargeTimeLeft', label: 'Remaining charging time', unit: 'min', models: ['2000'], source: SOURCE_MAKER_TABLE },
    {
      address: 11020,
      name: 'dischargeTimeLeft',
      label: 'Remaining discharging time',
      unit: 'min',
      models: ['2000'],
      source: SOURCE_MAKER_TABLE,
    },
  ]),
];

/**
 * A read point that the model classes serve at different addresses: a read of it asks for each point of `servedAs`,
 * and the first that the device answers goes out under this point's name, so one flow shows it on every model.
 */
export interface ModelReadPoint extends Omit<ReadPoint, 'address' | 'beyondSpec' | 'source' | 'models'> {
  /** Names of the read points that serve it, in order of preference. */
  servedAs: string[];
}

export const MODEL_READ_POINTS: readonly ModelReadPoint[] = [
  {
    direction: 'read',
    category: 'Meter and grid',
    type: 'float',
    name: 'gridPower',
    label: 'Grid power',
    unit: 'W',
    servedAs: ['meterPower', 'meterPower1600'],
    note: "Positive: import from the grid. The device's meter on any model: meterPower (11016) on the 2000 class, meterPower1600 (21028) on the 1600 class.",
  },
];

/** The read points with each model read point at the head of its category: the order of the help and the editor's picker. */
export function readPointsWithModelPoints(): (ReadPoint | ModelReadPoint)[] {
  const points: (ReadPoint | ModelReadPoint)[] = [...READ_POINTS];
  for (const modelPoint of MODEL_READ_POINTS) {
    const at = points.findIndex((p) => p.category === modelPoint.category);
    points.splice(at < 0 ? 0 : at, 0, modelPoint);
  }
  return points;
}

/** Whether model class `model` serves read point `point`, as the maker's tables and the integrations say. */
export function servedBy(point: ReadPoint, model: ModelClass): boolean {
  if (point.beyondSpec) return point.models?.includes(model) ?? false;
  return model === '2000' || MODEL_1600_SPEC_ADDRESSES.includes(point.address);
}

type WriteSpec = Omit<WritePoint, 'direction' | 'category'>;

function writeGroup(category: string, specs: WriteSpec[]): WritePoint[] {
  return specs.map((spec) => ({ direction: 'write', category, ...spec }));
}

/**
 * The classes that take the settings (1138 to 1147, 1, 7265, 7266): the maker's BK1600 tab lists only the working mode
 * and the real-time control points, so the 1600 class refuses the settings.
 */
const SETTINGS_MODELS: ModelClass[] = ['2000'];

/** The model classes that take writes to `point`, in words, where not every class does (for a refusal's message). */
export function modelsTakingText(point: WritePoint): string | undefined {
  return (
    point.models && `only the ${point.models.map((model) => `${model} class (${MODEL_CLASSES[model].label})`).join(' and the ')} takes it`
  );
}

/** Whether model class `model` takes writes to `point`. */
export function acceptedBy(point: WritePoint, model: ModelClass): boolean {
  return point.models?.includes(model) ?? true;
}

export const WRITE_POINTS: readonly WritePoint[] = [
  ...writeGroup('Working mode', [
    { address: 47005, name: 'workingModeSetting', label: 'Mode setting', type: 'enum', enum: WORKING_MODES, readAs: 'workingMode' },
  ]),
  ...writeGroup('Real-time control', [
    {
      address: 47015,
      name: 'controlState',
      label: 'State setting',
      type: 'uint',
      enum: CONTROL_STATES,
      realTimeOnly: true,
      note: 'Only in real-time control. Accepts [state, power, SOC] in one write.',
    },
    {
      address: 47016,
      name: 'controlPower',
      label: 'Power setting',
      type: 'int',
      unit: 'W',
      min: 50,
      max: 2400,
      realTimeOnly: true,
      powerLimited: 'larger',
    },
    { address: 47017, name: 'controlSoc', label: 'SOC setting', type: 'uint', unit: '%', min: 5, max: 100, realTimeOnly: true },
  ]),
  ...writeGroup('Settings', [
    {
      address: 1147,
      name: 'maxAcOutputPowerSetting',
      label: 'Max AC output power setting',
      type: 'int',
      unit: 'W',
      min: 50,
      max: 2400,
      readAs: 'maxAcOutputPower',
      powerLimited: 'discharge',
    },
    {
      address: 1146,
      name: 'feedInPowerLimitSetting',
      label: 'Feed-in power limit setting',
      type: 'int',
      unit: 'W',
      min: 50,
      max: 2400,
      readAs: 'feedInPowerLimit',
      powerLimited: 'discharge',
    },
    {
      address: 1143,
      name: 'gridChargingSetting',
      label: 'Grid charging setting',
      type: 'uint',
      enum: DISABLE_ENABLE,
      readAs: 'gridCharging',
      readValueOffset: 1000,
    },
    {
      address: 1138,
      name: 'inverterInputLimitSetting',
      label: 'Inverter input limit setting',
      type: 'int',
      unit: 'W',
      min: 100,
      max: 2400,
      readAs: 'inverterInputLimit',
      powerLimited: 'charge',
    },
    {
      address: 1,
      name: 'loadSetting',
      label: 'Load setting',
      type: 'enum',
      enum: [
        { value: 1, label: 'Smart Plug' },
        { value: 2, label: 'Meter' },
        { value: 3, label: 'Key Load' },
        { value: 4, label: 'Custom' },
      ],
    },
    { address: 7266, name: 'bypassSetting', label: 'Bypass setting', type: 'enum', enum: DISABLE_ENABLE, readAs: 'bypass' },
    {
      address: 1142,
      name: 'backupSocSetting',
      label: 'Backup SOC setting',
      type: 'int',
      unit: '%',
      min: 0,
      max: 100,
      readAs: 'backupSoc',
      note: 'The specification gives no range; limited to a percentage.',
    },
    { address: 7265, name: 'lightSetting', label: 'Light setting', type: 'enum', enum: DISABLE_ENABLE, readAs: 'light' },
  ]).map((point) => ({ ...point, models: SETTINGS_MODELS })),
];

const readByAddress = new Map(READ_POINTS.map((p) => [p.address, p]));
const writeByAddress = new Map(WRITE_POINTS.map((p) => [p.address, p]));
const byName = new Map<string, Point>([...READ_POINTS, ...WRITE_POINTS].map((p) => [p.name, p]));
const modelPointByName = new Map(MODEL_READ_POINTS.map((p) => [p.name, p]));

export function readPointByAddress(address: number): ReadPoint | undefined {
  return readByAddress.get(address);
}

export function writePointByAddress(address: number): WritePoint | undefined {
  return writeByAddress.get(address);
}

export function pointByName(name: string): Point | undefined {
  return byName.get(name);
}

export function modelReadPointByName(name: string): ModelReadPoint | undefined {
  return modelPointByName.get(name);
}

/** The addresses a model read point is read at, in its order of preference. */
export function servingAddresses(point: ModelReadPoint): number[] {
  return point.servedAs.map((name) => byName.get(name)!.address);
}

/**
 * The model read points that `references` name, by the address each of their serving points goes out from; a serving
 * point that `references` name as well keeps its own name.
 */
export function modelReadKeys(references: readonly unknown[]): Map<number, string> {
  const modelPoints = references.flatMap((reference) =>
    typeof reference === 'string' ? (modelPointByName.get(reference.trim()) ?? []) : [],
  );
  const named = new Set(
    references.flatMap((reference) =>
      typeof reference === 'string' && modelPointByName.has(reference.trim()) ? [] : [resolveReadAddress(reference) ?? []].flat(),
    ),
  );
  const keys = new Map<number, string>();
  for (const point of modelPoints) for (const address of servingAddresses(point)) if (!named.has(address)) keys.set(address, point.name);
  return keys;
}

/** Whether model class `model` serves the read point named `name` (a model read point through one of its points). */
export function servesPoint(model: ModelClass, name: string): boolean {
  const modelPoint = modelPointByName.get(name);
  const points = modelPoint ? modelPoint.servedAs.map((served) => byName.get(served)) : [byName.get(name)];
  return points.some((point) => point?.direction === 'read' && servedBy(point, model));
}

/**
 * The model class a device is of, from which of the model read points' serving addresses it answered: the one class
 * that serves every answered address and none of the unanswered; undefined where none or both fit.
 */
export function modelClassOf(answered: ReadonlySet<number>): ModelClass | undefined {
  const probed = MODEL_READ_POINTS.flatMap((point) => point.servedAs.map((name) => byName.get(name) as ReadPoint));
  const fits = (Object.keys(MODEL_CLASSES) as ModelClass[]).filter((model) =>
    probed.every((point) => servedBy(point, model) === answered.has(point.address)),
  );
  return fits.length === 1 ? fits[0] : undefined;
}

/** The points where a device reports its own charge and discharge limits (114, 115). */
export const REPORTED_LIMIT_ADDRESSES: Readonly<Record<keyof PowerLimits, number>> = {
  chargeLimit: pointByName('maxChargePower')!.address,
  dischargeLimit: pointByName('maxDischargePower')!.address,
};

/** The read point that reports the working mode (7101): the write address (47005) differs. */
export const WORKING_MODE_READ_ADDRESS = pointByName(writePointByAddress(REAL_TIME.modeAddress)!.readAs!)!.address;

/** A read address the catalogue may not know: the device may support more than the specification lists. */
export function isValidAddress(address: unknown): address is number {
  return typeof address === 'number' && Number.isInteger(address) && address >= 0 && address <= 65535;
}

/**
 * Resolves point references (catalogue names, addresses as numbers or decimal strings) to read addresses.
 * Throws a ValidationError naming the first reference that is neither.
 */
/** The longest list of points one read takes: the catalogue's read points (a longer list only queues requests). */
export const MAX_READ_REFERENCES = READ_POINTS.length;

export function resolveReadAddresses(references: readonly (string | number)[], field = 'points'): number[] {
  if (!Array.isArray(references) || references.length === 0) {
    throw new ValidationError(field, references, 'a non-empty list of point names or addresses');
  }
  if (references.length > MAX_READ_REFERENCES) {
    throw new ValidationError(field, `(${references.length} entries)`, `a list of at most ${MAX_READ_REFERENCES} point names or addresses`);
  }
  const addresses = new Set<number>();
  for (const reference of references as readonly unknown[]) {
    const resolved = resolveReadAddress(reference);
    if (resolved === undefined) {
      throw new ValidationError(field, reference, 'a read point name (e.g. batterySoc) or an address from 0 to 65535');
    }
    for (const address of [resolved].flat()) addresses.add(address);
  }
  return [...addresses];
}

/** `reference` is unknown: lists come from messages, whatever their declared type. A model read point gives its addresses. */
function resolveReadAddress(reference: unknown): number | number[] | undefined {
  if (typeof reference === 'number') return isValidAddress(reference) ? reference : undefined;
  if (typeof reference !== 'string') return undefined;
  const trimmed = reference.trim();
  if (/^\d+$/.test(trimmed)) {
    const address = Number(trimmed);
    return isValidAddress(address) ? address : undefined;
  }
  const modelPoint = modelPointByName.get(trimmed);
  if (modelPoint) return servingAddresses(modelPoint);
  const point = byName.get(trimmed);
  return point && point.direction === 'read' ? point.address : undefined;
}

/** Resolves a write point by name, address number or decimal string. */
export function resolveWritePoint(reference: unknown, field = 'point'): WritePoint {
  let point: WritePoint | undefined;
  if (typeof reference === 'number') point = writeByAddress.get(reference);
  else if (typeof reference === 'string') {
    const trimmed = reference.trim();
    if (/^\d+$/.test(trimmed)) point = writeByAddress.get(Number(trimmed));
    else {
      const named = byName.get(trimmed);
      point = named && named.direction === 'write' ? named : undefined;
    }
  }
  if (!point) {
    throw new ValidationError(field, reference, `a write point: ${WRITE_POINTS.map((p) => `${p.name} (${p.address})`).join(', ')}`);
  }
  return point;
}

export interface DecodedValue {
  value: number | string;
  label?: string;
}

/**
 * Turns a raw value from a GetData answer into the point's type: decimal strings become numbers where
 * the point is numeric (some firmware sends enums as "1001"); other text stays as it came; strings stay strings.
 * undefined: the point answered with no value (a boolean, an object; null for a numeric point; a text longer than
 * MAX_TEXT_LENGTH, which is no value of a battery), which counts as missing.
 */
export function decodeValue(address: number, raw: unknown): number | string | undefined {
  if (typeof raw === 'string' && raw.length > MAX_TEXT_LENGTH) return undefined;
  const point = readByAddress.get(address);
  if (point?.type === 'string') {
    if (raw === null || raw === undefined) return '';
    return typeof raw === 'string' || typeof raw === 'number' ? String(raw) : undefined;
  }
  return decimalNumber(raw) ?? (typeof raw === 'string' ? raw : undefined);
}

/** Adds the label of an enumerated value, or the HH:MM form of a packed time. */
export function describeValue(address: number, value: number | string): DecodedValue {
  const point = readByAddress.get(address);
  if (point?.enum && typeof value === 'number') {
    const option = point.enum.find((o) => o.value === value);
    return { value, label: option ? option.label : `Unknown (${value})` };
  }
  if (point?.format === 'hourMinute' && typeof value === 'number') {
    return { value, label: formatHourMinute(value) };
  }
  return { value };
}

export function formatHourMinute(value: number): string {
  const hour = (value >> 8) & 0xff;
  const minute = value & 0xff;
  return `${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`;
}

/** The limit of `direction` in `limits`, or undefined when `limits` does not give it. */
function limitOf(direction: PowerDirection, limits?: WriteLimits): number | undefined {
  if (direction === 'charge') return limits?.chargeLimit;
  if (direction === 'discharge') return limits?.dischargeLimit;
  const given = [limits?.chargeLimit, limits?.dischargeLimit].filter((l): l is number => l !== undefined);
  return given.length ? Math.max(...given) : undefined;
}

/** The upper bound of a write point: for power points the device's limit of their direction where `limits` gives it. */
function upperBound(point: WritePoint, limits?: WriteLimits, direction = point.powerLimited): number | undefined {
  const limit = direction ? limitOf(direction, limits) : undefined;
  return limit !== undefined ? validatePowerLimit(limit) : point.max;
}

/** Checks a charge or discharge limit against POWER_LIMIT and returns it. */
export function validatePowerLimit(value: unknown, field = 'power limit'): number {
  const allowed = `an integer from ${POWER_LIMIT.min} to ${POWER_LIMIT.max} ${POWER_LIMIT.unit}`;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < POWER_LIMIT.min || value > POWER_LIMIT.max) {
    throw new ValidationError(field, value, allowed);
  }
  return value;
}

/** The range a write point accepts, in words, for error messages and the editor; `direction` overrides the point's. */
export function describeAllowed(point: WritePoint, limits?: WriteLimits, direction?: PowerDirection): string {
  if (point.enum) return `one of ${point.enum.map((o) => `${o.value} (${o.label})`).join(', ')}`;
  return `an integer from ${point.min} to ${upperBound(point, limits, direction ?? point.powerLimited)}${point.unit ? ' ' + point.unit : ''}`;
}

/**
 * Checks one value against a write point and returns it as the integer the device expects. `direction` (for the
 * power of a three-value control write) overrides which limit bounds a power point.
 */
export function validateWriteValue(
  point: WritePoint,
  value: unknown,
  field: string = point.name,
  limits?: WriteLimits,
  direction?: PowerDirection,
): number {
  let number = decimalNumber(value);
  if (number === undefined && typeof value === 'string' && point.enum) {
    // An enum value may be given by its label, e.g. "Enable".
    number = point.enum.find((o) => o.label.toLowerCase() === value.trim().toLowerCase())?.value;
  }
  const allowed = describeAllowed(point, limits, direction);
  if (number === undefined || !Number.isInteger(number)) throw new ValidationError(field, value, allowed, point);
  const max = upperBound(point, limits, direction ?? point.powerLimited);
  if (point.enum) {
    if (!point.enum.some((o) => o.value === number)) throw new ValidationError(field, value, allowed, point);
  } else if ((point.min !== undefined && number < point.min) || (max !== undefined && number > max)) {
    throw new ValidationError(field, value, allowed, point);
  }
  return number;
}

/** The limit that bounds the power of control state `code`: 1 charges, 2 discharges, standby either. */
function directionOfState(code: number): PowerDirection {
  return code === 1 ? 'charge' : code === 2 ? 'discharge' : 'larger';
}

/**
 * Validates the values of one SetData request: one value for every point, or the three values
 * [state, power, SOC] for the real-time control state (spec section 4, rule 2). In standby (state 0)
 * power and SOC mean nothing, so 0 is accepted for each as Home Assistant core sends it ([0, 0, 0]);
 * any other value still has to be within bounds. `limits` (see POWER_LIMIT) raises or lowers the power bound: a
 * charge is bounded by the charge limit, a discharge by the discharge limit.
 */
export function validateWrite(point: WritePoint, values: unknown, limits?: WriteLimits): number[] {
  const list = Array.isArray(values) ? values : [values];
  if (point.address === REAL_TIME.stateAddress && list.length === 3) {
    const state = validateWriteValue(point, list[0], `${point.name} (state)`);
    const standbyZero = (value: unknown) => state === STANDBY && decimalNumber(value) === 0;
    return [
      state,
      standbyZero(list[1])
        ? 0
        : validateWriteValue(writeByAddress.get(REAL_TIME.powerAddress)!, list[1], 'controlPower (power)', limits, directionOfState(state)),
      standbyZero(list[2]) ? 0 : validateWriteValue(writeByAddress.get(REAL_TIME.socAddress)!, list[2], 'controlSoc (SOC)', limits),
    ];
  }
  if (list.length !== 1) {
    const expected = point.address === REAL_TIME.stateAddress ? 'one value, or three values [state, power, SOC]' : 'exactly one value';
    throw new ValidationError(`${point.name} value count`, list.length, expected, point);
  }
  return [validateWriteValue(point, list[0], point.name, limits)];
}

/** The catalogue as plain JSON, for the editor and documentation; `powerLimit` is the range of each device limit. */
export function catalogueJson(): {
  read: (ReadPoint & { homeAssistant?: HomeAssistantSensor })[];
  /** The model read points (gridPower), each with the addresses it is read at. */
  modelRead: (ModelReadPoint & { addresses: number[]; homeAssistant?: HomeAssistantSensor })[];
  write: (WritePoint & { allowed: string })[];
  maxAddressesPerRead: number;
  powerLimit: typeof POWER_LIMIT;
} {
  return {
    read: READ_POINTS.map((p) => ({ ...p, homeAssistant: homeAssistantSensor(p) })),
    modelRead: MODEL_READ_POINTS.map((p) => ({ ...p, addresses: servingAddresses(p), homeAssistant: homeAssistantSensor(p) })),
    write: WRITE_POINTS.map((p) => ({ ...p, allowed: describeAllowed(p) })),
    maxAddressesPerRead: MAX_ADDRESSES_PER_READ,
    powerLimit: { ...POWER_LIMIT },
  };
}
