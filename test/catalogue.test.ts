/** The point catalogue against spec sections 2.1 and 2.2 and the field-notes pairs table. */
import should from 'should';
import {
  READ_POINTS,
  WRITE_POINTS,
  MAX_ADDRESSES_PER_READ,
  MODEL_1600_SPEC_ADDRESSES,
  POWER_LIMIT,
  catalogueJson,
  describeAllowed,
  validatePowerLimit,
  decodeValue,
  describeValue,
  formatHourMinute,
  pointByName,
  readPointByAddress,
  resolveReadAddresses,
  resolveWritePoint,
  validateWrite,
  validateWriteValue,
  writePointByAddress,
  type ReadPoint,
  type WritePoint,
} from '../src/points/catalogue';
import { ValidationError } from '../src/errors';

// Spec 2.1, table by table, with the type each table gives.
const SPEC_STRING = [0, 1118, 1109, 1119, 1120, 1136, 1138, 1140, 1142, 1098, 1137, 1139, 1141, 1143, 1099];
const SPEC_ENUM = [7101, 606, 7120, 6001];
const SPEC_FLOAT = [667, 11016];
const SPEC_NUM = [
  142,
  2618,
  11009,
  2101,
  2108,
  11010,
  11011,
  680,
  11039,
  6105,
  7171,
  8646,
  8647,
  2802, // system
  2107,
  2104,
  11035,
  11034,
  11037,
  2105,
  9285,
  9284,
  1502,
  1505,
  6004,
  6005,
  6006,
  6007, // energy
  2600,
  2612,
  6000,
  6002, // grid, battery
  1501,
  1632,
  1633,
  1634,
  1635,
  1600,
  1601,
  1602,
  1603,
  1664,
  1665,
  1666,
  1667, // PV
];
// Per-unit battery table: SN, SOC, voltage, current, temperature, cell 1 V, cell 2 V.
const SPEC_UNITS: Record<string, number[]> = {
  mb: [9008, 9000, 9004, 9013, 9012, 9009, 9011],
  pack1: [9032, 9016, 9020, 19173, 9030, 9021, 9023],
  pack2: [9051, 9035, 9039, 19174, 9049, 9040, 9042],
  pack3: [9070, 9054, 9058, 19175, 9068, 9059, 9061],
  pack4: [9165, 9149, 9153, 19176, 9163, 9154, 9156],
  pack5: [9218, 9202, 9206, 19177, 9216, 9219, 9222],
};

const SPEC_UNITS_BY_ADDRESS: Record<number, string> = {
  142: 'kWh',
  11009: 'W',
  2101: 'W',
  2108: 'W',
  11010: 'W',
  11011: 'W',
  6105: '%',
  8646: 'day',
  2802: 'W',
  667: 'W',
  2107: 'kWh',
  2104: 'kWh',
  11035: 'Wh',
  11034: 'Wh',
  11037: 'KWh',
  2105: 'KWh',
  9285: 'Wh',
  9284: 'Wh',
  1502: 'kWh',
  1505: 'Wh',
  6004: 'kWh',
  6005: 'kWh',
  6006: 'kWh',
  6007: 'kWh',
  11016: 'W',
  2600: 'V',
  2612: 'Hz',
  6000: 'W',
  6002: '%',
  1501: 'W',
  1632: 'A',
  1633: 'A',
  1634: 'A',
  1635: 'A',
  1600: 'V',
  1601: 'V',
  1602: 'V',
  1603: 'V',
  1664: 'W',
  1665: 'W',
  1666: 'W',
  1667: 'W',
};

const SPEC_READ_ENUMS: Record<number, [number, string][]> = {
  7101: [
    [1, 'Self-consumed Prioritized'],
    [4, 'Real-time Control'],
    [5, 'Charge/Discharge Schedule'],
  ],
  2618: [
    [1000, 'Disable'],
    [1001, 'Enable'],
  ],
  680: [
    [0, 'Disable'],
    [1, 'Enable'],
  ],
  11039: [
    [0, 'Eps'],
    [1, 'M-Inv'],
  ],
  7171: [
    [0, 'Disable'],
    [1, 'Enable'],
  ],
  606: [
    [1000, 'Master'],
    [1001, 'Slave'],
    [1002, 'None'],
  ],
  7120: [
    [1000, 'Enable'],
    [1001, 'Disable'],
  ],
  6001: [
    [1000, 'Static'],
    [1001, 'Charging'],
    [1002, 'Discharging'],
  ],
};

// Spec 2.2: address, type, unit, and either [min, max] or the allowed enumerated values.
const SPEC_WRITE: { address: number; type: string; unit?: string; range?: [number, number]; values?: number[] }[] = [
  { address: 47005, type: 'enum', values: [1, 4, 5] },
  { address: 47015, type: 'uint', values: [0, 1, 2] },
  { address: 47016, type: 'int', unit: 'W', range: [50, 2400] },
  { address: 47017, type: 'uint', unit: '%', range: [5, 100] },
  { address: 1147, type: 'int', unit: 'W', range: [50, 2400] },
  { address: 1146, type: 'int', unit: 'W', range: [50, 2400] },
  { address: 1143, type: 'uint', values: [0, 1] },
  { address: 1138, type: 'int', unit: 'W', range: [100, 2400] },
  { address: 1, type: 'enum', values: [1, 2, 3, 4] },
  { address: 7266, type: 'enum', values: [0, 1] },
  { address: 1142, type: 'int', unit: '%' },
  { address: 7265, type: 'enum', values: [0, 1] },
];

// Field notes: setting → read point, write point.
const PAIRS: [number, number][] = [
  [7101, 47005],
  [2618, 1143],
  [6105, 1142],
  [7171, 7265],
  [680, 7266],
  [11011, 1147],
  [11010, 1146],
  [11009, 1138],
];

function read(address: number): ReadPoint {
  const point = readPointByAddress(address);
  should.exist(point, `read point ${address} missing`);
  return point!;
}

function write(address: number): WritePoint {
  const point = writePointByAddress(address);
  should.exist(point, `write point ${address} missing`);
  return point!;
}

function catchError(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    should(error).be.instanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

const SPEC_READ_POINTS = READ_POINTS.filter((p) => !p.beyondSpec);

describe('catalogue', function () {
  describe('contents against the specification', function () {
    it('has every read point of spec 2.1 with the type the spec gives, serial numbers as strings, and no other', function () {
      const expected = new Map<number, string>();
      for (const a of SPEC_STRING) expected.set(a, 'string');
      for (const a of SPEC_ENUM) expected.set(a, 'enum');
      for (const a of SPEC_FLOAT) expected.set(a, 'float');
      for (const a of SPEC_NUM) expected.set(a, 'num');
      for (const addresses of Object.values(SPEC_UNITS)) {
        // Serial numbers are String. The spec lists Pack4's as Num, but as a number it would lose leading zeros.
        addresses.forEach((a, i) => expected.set(a, i === 0 ? 'string' : 'num'));
      }
      for (const [address, type] of expected) should(read(address).type).equal(type, `type of read point ${address}`);
      should(SPEC_READ_POINTS.map((p) => p.address).sort((a, b) => a - b)).eql([...expected.keys()].sort((a, b) => a - b));
      for (const point of SPEC_READ_POINTS) should(point).not.have.properties(['source', 'models']);
    });

    it('gives read points the units of the spec', function () {
      for (const [address, unit] of Object.entries(SPEC_UNITS_BY_ADDRESS)) {
        // The spec writes "KWh" for two energy points; the catalogue normalises to kWh.
        should(read(Number(address)).unit?.toLowerCase()).equal(unit.toLowerCase(), `unit of ${address}`);
      }
      for (const addresses of Object.values(SPEC_UNITS)) {
        should(addresses.slice(1).map((a) => read(a).unit)).eql(['%', 'V', 'A', undefined, 'V', 'V']);
      }
    });

    it('names a selection of read points as expected', function () {
      should(read(6002)).match({ name: 'batterySoc', type: 'num', unit: '%' });
      should(read(0)).match({ name: 'serialNumber', type: 'string' });
      should(read(9165)).match({ name: 'pack4SerialNumber', type: 'string' });
      should(read(9218)).match({ name: 'pack5SerialNumber', type: 'string' });
      should(read(1138)).match({ name: 'dcdc2Firmware', type: 'string' });
      should(read(1143)).match({ name: 'bms4Firmware', type: 'string' });
      should(read(8647)).match({ name: 'calibrationStartTime', format: 'hourMinute' });
      should(read(19176)).match({ name: 'pack4Current', unit: 'A' });
    });

    it('gives read enumerations the values and labels of the spec', function () {
      for (const [address, options] of Object.entries(SPEC_READ_ENUMS)) {
        const specOptions = read(Number(address)).enum!.filter((o) => !o.beyondSpec);
        should(specOptions.map((o) => [o.value, o.label])).eql(options, `enum of ${address}`);
      }
      should(
        SPEC_READ_POINTS.filter((p) => p.enum)
          .map((p) => p.address)
          .sort(),
      ).eql(Object.keys(SPEC_READ_ENUMS).map(Number).sort());
    });

    it('has every write point of spec 2.2 with its type, unit and allowed values, and no other', function () {
      for (const spec of SPEC_WRITE) {
        const point = write(spec.address);
        should(point.type).equal(spec.type, `type of write point ${spec.address}`);
        should(point.unit).equal(spec.unit, `unit of write point ${spec.address}`);
        if (spec.range) should([point.min, point.max]).eql(spec.range, `range of ${spec.address}`);
        if (spec.values) should(point.enum!.map((o) => o.value)).eql(spec.values, `values of ${spec.address}`);
      }
      should(WRITE_POINTS.map((p) => p.address).sort((a, b) => a - b)).eql(SPEC_WRITE.map((s) => s.address).sort((a, b) => a - b));
      should(write(1138)).match({ name: 'inverterInputLimitSetting', min: 100, max: 2400 });
      should(write(47016)).match({ name: 'controlPower', min: 50, max: 2400 });
    });

    it('marks the real-time control points as real-time only', function () {
      should(
        WRITE_POINTS.filter((p) => p.realTimeOnly)
          .map((p) => p.address)
          .sort(),
      ).eql([47015, 47016, 47017]);
    });

    it('keeps colliding numbers apart by direction (1138 to 1143)', function () {
      for (const address of [1138, 1142, 1143]) {
        should(read(address).type).equal('string');
        should(write(address).direction).equal('write');
      }
      should(readPointByAddress(1147)).be.undefined();
      should(writePointByAddress(6002)).be.undefined();
    });
  });

  describe('names and pairs', function () {
    it('has unique camelCase names across both directions', function () {
      const names = [...READ_POINTS, ...WRITE_POINTS].map((p) => p.name);
      should(new Set(names).size).equal(names.length);
      for (const name of names) should(name).match(/^[a-z][a-zA-Z0-9]*$/);
      for (const point of [...READ_POINTS, ...WRITE_POINTS]) should(pointByName(point.name)).equal(point);
    });

    it('has unique addresses per direction', function () {
      should(new Set(READ_POINTS.map((p) => p.address)).size).equal(READ_POINTS.length);
      should(new Set(WRITE_POINTS.map((p) => p.address)).size).equal(WRITE_POINTS.length);
    });

    it('pairs read and write points consistently both ways, exactly as the field notes table', function () {
      const fromWrite = WRITE_POINTS.filter((p) => p.readAs).map((p) => {
        const partner = pointByName(p.readAs!);
        should(partner?.direction).equal('read', `${p.name}.readAs`);
        should((partner as ReadPoint).writtenBy).equal(p.name, `${partner!.name}.writtenBy`);
        return [partner!.address, p.address];
      });
      const fromRead = READ_POINTS.filter((p) => p.writtenBy).map((p) => {
        const partner = pointByName(p.writtenBy!);
        should(partner?.direction).equal('write', `${p.name}.writtenBy`);
        should((partner as WritePoint).readAs).equal(p.name, `${partner!.name}.readAs`);
        return [p.address, partner!.address];
      });
      const sort = (list: number[][]) => [...list].sort((a, b) => a[0] - b[0]);
      should(sort(fromWrite)).eql(sort(PAIRS));
      should(sort(fromRead)).eql(sort(PAIRS));
    });

    it('maps written enum values to the read values with the same label (grid charging 0/1 → 1000/1001)', function () {
      for (const point of WRITE_POINTS.filter((p) => p.readAs && p.enum)) {
        const partner = pointByName(point.readAs!) as ReadPoint;
        for (const option of point.enum!) {
          const readValue = option.value + (point.readValueOffset ?? 0);
          should(partner.enum?.find((o) => o.value === readValue)?.label.toLowerCase()).equal(
            option.label.toLowerCase(),
            `${point.name} ${option.value} → ${partner.name} ${readValue}`,
          );
        }
      }
      should(write(1143).readValueOffset).equal(1000);
    });

    it('exports plain JSON', function () {
      const json = catalogueJson();
      should(json.maxAddressesPerRead).equal(MAX_ADDRESSES_PER_READ).and.equal(50);
      should(json.write.find((p) => p.address === 47016)!.allowed).equal('an integer from 50 to 2400 W');
      should(JSON.parse(JSON.stringify(json)).read).have.length(READ_POINTS.length);
    });
  });

  describe('points beyond the specification', function () {
    const beyond = READ_POINTS.filter((p) => p.beyondSpec);

    it('has the read-backs, temperatures, 1600-class meter and heating states of the sources, each with its source', function () {
      should(beyond.map((p) => p.address)).containDeep([
        6107, 6108, 6109, 7600, 7605, 7620, 7621, 21028, 7121, 9080, 9096, 9112, 9128, 9144, 9279,
      ]);
      for (const point of beyond) {
        should(point.source).be.a.String().and.match(/\S/, `source of ${point.name}`);
        should(point.models!.length).be.above(0, `models of ${point.name}`);
        should(point.category).match(/\(beyond spec\)$/, `category of ${point.name}`);
      }
      should(read(21028)).match({ name: 'meterPower1600', type: 'float', unit: 'W', models: ['1600'] });
      should(read(7620)).match({ name: 'pack2Temperature1600', unit: '°C', models: ['1600'] });
      should(read(6109)).match({ name: 'controlPowerReadback', unit: 'W' });
      should(read(6109).source).match(/indevolt-api/);
      should(read(21028).source).match(/BK1600/);
    });

    it("has the maker's per-unit state of health, cycle counts, DC/DC and heater states, and the system state points", function () {
      const units = ['mb', 'pack1', 'pack2', 'pack3', 'pack4', 'pack5'];
      should(units.map((unit) => pointByName(`${unit}Soh`)!.address)).eql([9002, 9018, 9037, 9056, 9151, 9204]);
      should(units.map((unit) => pointByName(`${unit}CycleCount`)!.address)).eql([9003, 9019, 9038, 9057, 9152, 9205]);
      should(units.map((unit) => pointByName(`${unit}DcdcState`)!.address)).eql([9079, 9095, 9111, 9127, 9143, 9278]);
      // The maker's table: 9079 is the MB's DC/DC state, its heater is 9080.
      should(units.map((unit) => pointByName(`${unit}HeatingState`)!.address)).eql([9080, 9096, 9112, 9128, 9144, 9279]);
      should(read(9002)).match({ unit: '%', models: ['2000'], source: /http-api\.md/ });
      should(describeValue(9079, 3)).eql({ value: 3, label: 'Protection' });
      should(describeValue(9080, 1)).eql({ value: 1, label: 'On' });
      should(decodeValue(9143, '2')).equal(2);
      should([9405, 11019, 11020].map((a) => read(a).name)).eql(['systemSoc', 'chargeTimeLeft', 'dischargeTimeLeft']);
      should(read(11019).unit).equal('min');
      should(read(5000)).match({ name: 'homeLoadPower', type: 'float', unit: 'W' });
      should(describeValue(11006, 9)).eql({ value: 9, label: 'Grid Charging' });
      should(describeValue(11006, 16)).eql({ value: 16, label: 'Off-grid Deep Sleep' });
    });

    it('shows them in their own picker groups, apart from the specification points', function () {
      // The editor's picker groups the points by category, in catalogue order.
      const byCategory = new Map<string, ReadPoint[]>();
      for (const point of READ_POINTS) byCategory.set(point.category, [...(byCategory.get(point.category) ?? []), point]);
      const groups = [...byCategory].map(([category, points]) => ({ category, points }));
      for (const group of groups) {
        const kinds = new Set(group.points.map((p) => Boolean(p.beyondSpec)));
        should(kinds.size).equal(1, `category ${group.category} mixes specification and beyond-specification points`);
      }
      should(groups.filter((g) => g.points[0].beyondSpec).map((g) => g.category)).containDeep([
        'Real-time control read-back (beyond spec)',
        'Temperatures (beyond spec)',
        'Meter, 1600 class (beyond spec)',
      ]);
    });

    it('keeps addresses and names unique per direction, and away from the specification addresses', function () {
      const addresses = READ_POINTS.map((p) => p.address);
      should(new Set(addresses).size).equal(addresses.length);
      const names = [...READ_POINTS, ...WRITE_POINTS].map((p) => p.name);
      should(new Set(names).size).equal(names.length);
      for (const point of beyond) should(SPEC_READ_POINTS.some((p) => p.address === point.address)).be.false();
    });

    it('decodes working mode 0 as Outdoor Portable (1600 class) without letting it be written', function () {
      should(describeValue(7101, 0)).eql({ value: 0, label: 'Outdoor Portable' });
      const option = read(7101).enum!.find((o) => o.value === 0)!;
      should(option).have.properties({ beyondSpec: true });
      should(option.source).match(/BK1600/);
      should(catchError(() => validateWrite(write(47005), [0])).message).containEql('workingModeSetting');
    });

    it('lists the 1600 class served specification points, all of them in the catalogue', function () {
      for (const address of MODEL_1600_SPEC_ADDRESSES) should(readPointByAddress(address)).be.ok();
      should(MODEL_1600_SPEC_ADDRESSES).containEql(6002).and.not.containEql(11016);
    });
  });

  describe('recorded answers', function () {
    // Shapes from the field notes and the Home Assistant fixtures: numeric strings, two-decimal energies,
    // serials as text where the 1600 table says Float, Wh counters as large integers.
    const recorded: Record<string, unknown> = {
      0: 'BK1600-12345678',
      606: '1000',
      7101: 5,
      2107: 289.97,
      6006: 380.58,
      6007: '338.07',
      1505: 553673,
      6001: '1001',
      7120: 1001,
      6002: 92,
      11016: '-12.5',
      2612: '50.0',
      9165: 'PACK4-44444444',
      7600: 35.2,
      21028: '0',
    };

    it('decodes every value to the type the catalogue gives', function () {
      const decoded = Object.fromEntries(Object.entries(recorded).map(([key, raw]) => [key, decodeValue(Number(key), raw)]));
      should(decoded).eql({
        0: 'BK1600-12345678',
        606: 1000,
        7101: 5,
        2107: 289.97,
        6006: 380.58,
        6007: 338.07,
        1505: 553673,
        6001: 1001,
        7120: 1001,
        6002: 92,
        11016: -12.5,
        2612: 50,
        9165: 'PACK4-44444444',
        7600: 35.2,
        21028: 0,
      });
      should(describeValue(606, decoded[606]!)).eql({ value: 1000, label: 'Master' });
      should(describeValue(6001, decoded[6001]!)).eql({ value: 1001, label: 'Charging' });
    });

    it('passes on a string that is no number where the specification says number', function () {
      should(decodeValue(6002, 'n/a')).equal('n/a');
      should(decodeValue(6002, '')).equal('');
      should(describeValue(6001, 'n/a')).eql({ value: 'n/a' });
    });
  });

  describe('charge and discharge limits', function () {
    const power = ['controlPower', 'maxAcOutputPowerSetting', 'feedInPowerLimitSetting', 'inverterInputLimitSetting'];
    const both = (limit: number) => ({ chargeLimit: limit, dischargeLimit: limit });

    it('marks exactly the power points 47016, 1147, 1146 and 1138, each with the limit of its direction', function () {
      should(WRITE_POINTS.filter((p) => p.powerLimited).map((p) => p.name)).eql(power);
      should(WRITE_POINTS.filter((p) => p.powerLimited).map((p) => p.powerLimited)).eql(['larger', 'discharge', 'discharge', 'charge']);
      should(POWER_LIMIT).eql({ default: 2400, min: 800, max: 10800, unit: 'W' });
      for (const point of WRITE_POINTS.filter((p) => p.powerLimited)) should(point.max).equal(POWER_LIMIT.default);
    });

    it('raises and lowers the upper bound of the power points only', function () {
      should(validateWrite(write(47016), [10800], both(10800))).eql([10800]);
      should(validateWrite(write(1147), [3000], both(3000))).eql([3000]);
      should(catchError(() => validateWrite(write(1147), [3001], both(3000))).message).containEql('50 to 3000 W');
      should(catchError(() => validateWrite(write(1146), [900], both(800))).message).containEql('50 to 800 W');
      should(catchError(() => validateWrite(write(1138), [50], both(5000))).message).containEql('100 to 5000 W');
      should(validateWrite(write(47015), [2, 6000, 10], both(6000))).eql([2, 6000, 10]);
      should(catchError(() => validateWrite(write(47015), [2, 6001, 10], both(6000))).message).containEql('controlPower');
      // SOC and the enumerations do not move.
      should(catchError(() => validateWrite(write(47017), [101], both(10800))).message).containEql('5 to 100');
      should(describeAllowed(write(47017), both(10800))).equal('an integer from 5 to 100 %');
      should(describeAllowed(write(47016), both(10800))).equal('an integer from 50 to 10800 W');
    });

    it('bounds a charge by the charge limit and a discharge by the discharge limit (the 1600 class)', function () {
      const limits = { chargeLimit: 1200, dischargeLimit: 800 };
      should(validateWrite(write(47015), [1, 1200, 90], limits)).eql([1, 1200, 90]);
      should(catchError(() => validateWrite(write(47015), [1, 1201, 90], limits)).message).containEql('50 to 1200 W');
      should(validateWrite(write(47015), [2, 800, 10], limits)).eql([2, 800, 10]);
      should(catchError(() => validateWrite(write(47015), [2, 801, 10], limits)).message).containEql('50 to 800 W');
      // Power alone applies to whatever state is in force: the larger limit.
      should(validateWrite(write(47016), [1200], limits)).eql([1200]);
      should(catchError(() => validateWrite(write(47016), [1201], limits)).message).containEql('50 to 1200 W');
      // AC output and feed-in are discharge, the inverter input is charge.
      should(catchError(() => validateWrite(write(1147), [801], limits)).message).containEql('50 to 800 W');
      should(catchError(() => validateWrite(write(1146), [801], limits)).message).containEql('50 to 800 W');
      should(validateWrite(write(1138), [1200], limits)).eql([1200]);
      // A limit not given keeps the specification's bound for its direction.
      should(validateWrite(write(47015), [1, 2400, 90], { dischargeLimit: 800 })).eql([1, 2400, 90]);
    });

    it('keeps the specification bounds without a limit', function () {
      should(catchError(() => validateWrite(write(47016), [2401])).message).containEql('50 to 2400 W');
      should(catchError(() => validateWriteValue(write(1147), 2401)).message).containEql('50 to 2400 W');
      should(describeAllowed(write(1146))).equal('an integer from 50 to 2400 W');
    });

    it('refuses a limit outside 800 to 10800 W, naming the limit', function () {
      for (const bad of [799, 10801, 1200.5, '2400', NaN]) {
        const error = catchError(() => validatePowerLimit(bad, 'charge limit'));
        should(error.message).containEql('charge limit').and.containEql('800 to 10800 W');
      }
      should(catchError(() => validateWrite(write(47016), [500], { chargeLimit: 20000 })).message).containEql('power limit');
      should(validatePowerLimit(800)).equal(800);
    });

    it('serves the range of a limit to the editor in catalogueJson', function () {
      should(catalogueJson().powerLimit).eql({ default: 2400, min: 800, max: 10800, unit: 'W' });
    });

    it('knows the points 114 and 115 that report the limits, with their source', function () {
      for (const [address, name] of [
        [114, 'maxChargePower'],
        [115, 'maxDischargePower'],
      ] as const) {
        const point = readPointByAddress(address)!;
        should(point).have.properties({ name, unit: 'W', beyondSpec: true });
        should(point.source).match(/maker's point table/);
      }
    });
  });

  describe('decodeValue and describeValue', function () {
    it('turns numeric strings into numbers for numeric points', function () {
      should(decodeValue(6001, '1001')).equal(1001);
      should(decodeValue(6001, 1001)).equal(1001);
      should(decodeValue(6004, '380.58')).equal(380.58);
      should(decodeValue(65000, '12')).equal(12); // not in the catalogue: still numeric
    });

    it('keeps a text that is no decimal number as it came, and leaves null, booleans and objects out of numeric points', function () {
      should(decodeValue(6002, '0x32')).equal('0x32');
      should(decodeValue(6002, 'N/A')).equal('N/A');
      for (const raw of [null, true, false, {}, [1]]) should(decodeValue(6002, raw)).be.undefined();
    });

    it('keeps string points strings', function () {
      should(decodeValue(0, 'HMG50DEV1234')).equal('HMG50DEV1234');
      should(decodeValue(0, 12345)).equal('12345');
      should(decodeValue(1138, 'V1.2')).equal('V1.2');
      should(decodeValue(0, null)).equal('');
      for (const raw of [true, { sn: 'x' }]) should(decodeValue(0, raw)).be.undefined();
      // The spec lists Pack4's serial as Num, but a text serial must survive.
      should(decodeValue(9165, 'ABC')).equal('ABC');
      should(decodeValue(9165, '00912')).equal('00912');
      for (const point of READ_POINTS.filter((p) => /serialNumber$/i.test(p.name))) should(point.type).equal('string');
    });

    it('labels enumerated values and packed times', function () {
      should(describeValue(6001, 1001)).eql({ value: 1001, label: 'Charging' });
      should(describeValue(2618, 1000)).eql({ value: 1000, label: 'Disable' });
      should(describeValue(7101, 4)).eql({ value: 4, label: 'Real-time Control' });
      should(describeValue(6001, 7)).eql({ value: 7, label: 'Unknown (7)' });
      should(describeValue(8647, 0x0200)).eql({ value: 512, label: '02:00' });
      should(describeValue(8647, 0x0c1e)).eql({ value: 0x0c1e, label: '12:30' });
      should(describeValue(6002, 55)).eql({ value: 55 });
      should(formatHourMinute(0x173b)).equal('23:59');
    });
  });

  describe('validateWrite', function () {
    it('accepts values in bounds and returns integers', function () {
      should(validateWrite(write(47016), 2400)).eql([2400]);
      should(validateWrite(write(47016), [50])).eql([50]);
      should(validateWrite(write(1138), '100')).eql([100]);
      should(validateWrite(write(1142), 0)).eql([0]);
    });

    it('rejects values out of bounds, naming the point, the value and the range', function () {
      const error = catchError(() => validateWrite(write(47016), 2401));
      should(error.code).equal('INVALID_VALUE');
      should(error.message).containEql('controlPower').and.containEql('47016').and.containEql('2401').and.containEql('50 to 2400');
      should(error.point).eql({ name: 'controlPower', address: 47016 });
      catchError(() => validateWrite(write(47016), 49));
      catchError(() => validateWrite(write(1138), 99));
      catchError(() => validateWrite(write(47017), 101));
      catchError(() => validateWrite(write(1142), 101));
    });

    it('rejects non-integers and non-numbers', function () {
      should(catchError(() => validateWrite(write(47016), 100.5)).message).containEql('100.5');
      catchError(() => validateWrite(write(47016), 'lots'));
      catchError(() => validateWrite(write(47016), null));
      catchError(() => validateWrite(write(47016), NaN));
      catchError(() => validateWrite(write(47016), Infinity));
      catchError(() => validateWrite(write(47016), ''));
      catchError(() => validateWrite(write(47016), { value: 100 }));
    });

    it('takes decimal numbers and numeric strings only: no hex, binary or octal literals, no booleans', function () {
      should(validateWrite(write(47016), ' 50 ')).eql([50]);
      should(validateWrite(write(47016), '+1.5e3')).eql([1500]);
      should(validateWrite(write(47016), '50.0')).eql([50]);
      for (const value of ['0x32', '0b110010', '0o62', '1e400', 'Infinity', '50 W', true, false]) {
        should(catchError(() => validateWrite(write(47016), value)).message).containEql(JSON.stringify(value));
      }
      catchError(() => validateWrite(write(7265), true));
    });

    it('checks enum membership and accepts labels', function () {
      should(validateWrite(write(47005), 4)).eql([4]);
      const error = catchError(() => validateWrite(write(47005), 2));
      should(error.message).containEql('workingModeSetting').and.containEql('1 (Self-consumed Prioritized)').and.containEql('got 2');
      should(validateWrite(write(7265), 'Enable')).eql([1]);
      should(validateWrite(write(7265), ' disable ')).eql([0]);
      should(validateWrite(write(1), 'Key Load')).eql([3]);
      catchError(() => validateWrite(write(7265), 'On'));
      catchError(() => validateWrite(write(1143), 1001));
    });

    it('takes [state, power, SOC] for 47015 and validates each as its own point', function () {
      should(validateWrite(write(47015), [1, 800, 90])).eql([1, 800, 90]);
      should(validateWrite(write(47015), ['Standby', '50', '5'])).eql([0, 50, 5]);
      should(validateWrite(write(47015), [2])).eql([2]);
      should(catchError(() => validateWrite(write(47015), [3, 800, 90])).message).containEql('controlState');
      const power = catchError(() => validateWrite(write(47015), [1, 3000, 90]));
      should(power.message).containEql('controlPower').and.containEql('3000').and.containEql('50 to 2400');
      const soc = catchError(() => validateWrite(write(47015), [1, 800, 4]));
      should(soc.message).containEql('controlSoc').and.containEql('5 to 100');
    });

    it('accepts the standby write [0, 0, 0] of Home Assistant core, and keeps the bounds for charge and discharge', function () {
      should(validateWrite(write(47015), [0, 0, 0])).eql([0, 0, 0]);
      should(validateWrite(write(47015), ['0', '0', '0'])).eql([0, 0, 0]);
      should(validateWrite(write(47015), [0, 50, 5])).eql([0, 50, 5]); // evcc's standby
      should(catchError(() => validateWrite(write(47015), [0, 3000, 0])).message).containEql('controlPower');
      should(catchError(() => validateWrite(write(47015), [0, 0, 101])).message).containEql('controlSoc');
      should(catchError(() => validateWrite(write(47015), [1, 0, 0])).message)
        .containEql('controlPower')
        .and.containEql('50 to 2400');
      should(catchError(() => validateWrite(write(47015), [2, 800, 0])).message)
        .containEql('controlSoc')
        .and.containEql('5 to 100');
      should(catchError(() => validateWrite(write(47016), [0])).message).containEql('50 to 2400');
    });

    it('rejects a wrong number of values', function () {
      const two = catchError(() => validateWrite(write(47015), [1, 800]));
      should(two.message).containEql('controlState').and.containEql('three values');
      catchError(() => validateWrite(write(47016), [100, 200]));
      catchError(() => validateWrite(write(47016), []));
      catchError(() => validateWrite(write(1146), [100, 200, 300]));
    });

    it('validates a single value directly', function () {
      should(validateWriteValue(write(1147), 1500)).equal(1500);
      should(catchError(() => validateWriteValue(write(1147), 5000, 'msg.payload')).message).startWith('Invalid msg.payload');
    });
  });

  describe('resolving references', function () {
    it('resolves read names, numbers and numeric strings, without duplicates', function () {
      should(resolveReadAddresses(['batterySoc', 6000, '6001', ' 7101 ', 'batterySoc'])).eql([6002, 6000, 6001, 7101]);
      // Addresses the catalogue does not list are allowed: a device may know more.
      should(resolveReadAddresses([12345, '54321'])).eql([12345, 54321]);
    });

    it('rejects unknown names, write names, bad numbers and empty lists, naming the reference', function () {
      const error = catchError(() => resolveReadAddresses(['batterySoc', 'battery_soc']));
      should(error.message).containEql('battery_soc');
      catchError(() => resolveReadAddresses(['lightSetting']));
      catchError(() => resolveReadAddresses([-1]));
      catchError(() => resolveReadAddresses([65536]));
      catchError(() => resolveReadAddresses([1.5]));
      catchError(() => resolveReadAddresses([]));
    });

    it('resolves write points by name, number and numeric string', function () {
      should(resolveWritePoint('controlPower').address).equal(47016);
      should(resolveWritePoint(47016).name).equal('controlPower');
      should(resolveWritePoint(' 1138 ').name).equal('inverterInputLimitSetting');
      const error = catchError(() => resolveWritePoint('batterySoc', 'msg.point'));
      should(error.message).containEql('msg.point').and.containEql('batterySoc').and.containEql('controlPower (47016)');
      catchError(() => resolveWritePoint(6002));
      catchError(() => resolveWritePoint(undefined));
    });
  });
});
