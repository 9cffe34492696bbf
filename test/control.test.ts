/** The Node-RED-free real-time control logic: payload forms, bounds from the catalogue, repeat skipping, mode memory. */
import should from 'should';
import { REAL_TIME, writePointByAddress } from '../src/points/catalogue';
import {
  CONTROL_DEFAULTS,
  STATE_CODES,
  WORKING_MODE_READ_ADDRESS,
  RealTimeController,
  controlSettings,
  controlValues,
  isRepeat,
  parseControl,
  type ControlOptions,
  type ControllerSettings,
} from '../src/control/control';
import { DeviceClient } from '../src/device/client';
import { DeviceSimulator } from '../src/simulator';
import { ValidationError } from '../src/errors';

const power = writePointByAddress(REAL_TIME.powerAddress)!;
const soc = writePointByAddress(REAL_TIME.socAddress)!;
const OPTIONS: ControlOptions = { power: CONTROL_DEFAULTS.power, chargeSoc: soc.max!, dischargeSoc: soc.min! + 5, clamp: false };
const CLAMP: ControlOptions = { ...OPTIONS, clamp: true };

function invalid(payload: unknown, options: ControlOptions, field: RegExp): ValidationError {
  let caught: unknown;
  try {
    parseControl(payload, options);
  } catch (error) {
    caught = error;
  }
  should(caught).be.instanceOf(ValidationError);
  const error = caught as ValidationError;
  error.code.should.equal('INVALID_VALUE');
  error.field.should.match(field);
  return error;
}

describe('control logic (src/control/control.ts)', () => {
  it('uses the state codes, mode and mode address of the specification (47015 states, 7101 mode 4)', () => {
    STATE_CODES.should.eql({ standby: 0, charge: 1, discharge: 2 });
    WORKING_MODE_READ_ADDRESS.should.equal(7101);
    REAL_TIME.mode.should.equal(4);
  });

  describe('signed watts (battery power 6000 convention: positive discharges)', () => {
    it('bounds a charge by the charge limit and a discharge by the discharge limit', () => {
      const limited: ControlOptions = { ...OPTIONS, limits: { chargeLimit: 1200, dischargeLimit: 800 } };
      parseControl(-1200, limited).should.containEql({ state: 'charge', power: 1200 });
      parseControl(800, limited).should.containEql({ state: 'discharge', power: 800 });
      (() => parseControl(-1201, limited)).should.throw(/power.*-1201.*from -1200 to 800 W/);
      (() => parseControl(801, limited)).should.throw(/power.*801.*from -1200 to 800 W/);
      (() => parseControl({ state: 'discharge', power: 1000 }, limited)).should.throw(/controlPower.*50 to 800 W/);
      parseControl({ state: 'charge', power: 1000 }, limited).should.containEql({ state: 'charge', power: 1000 });
      // Clamping moves each direction to its own limit.
      parseControl(-5000, { ...limited, clamp: true }).should.containEql({ power: 1200, clamped: true });
      parseControl(5000, { ...limited, clamp: true }).should.containEql({ power: 800, clamped: true });
    });

    it('negative charges to the charge SOC, positive discharges to the floor SOC', () => {
      parseControl(-800, OPTIONS).should.eql({
        state: 'charge',
        code: STATE_CODES.charge,
        power: 800,
        soc: OPTIONS.chargeSoc,
        clamped: false,
        belowMinimum: false,
      });
      parseControl(650, OPTIONS).should.eql({
        state: 'discharge',
        code: STATE_CODES.discharge,
        power: 650,
        soc: OPTIONS.dischargeSoc,
        clamped: false,
        belowMinimum: false,
      });
      parseControl(' -900 ', OPTIONS).state.should.equal('charge');
    });

    it('zero is standby with the minimum power and the floor SOC, as integrations send it', () => {
      const standby = parseControl(0, OPTIONS);
      standby.should.eql({
        state: 'standby',
        code: STATE_CODES.standby,
        power: power.min,
        soc: OPTIONS.dischargeSoc,
        clamped: false,
        belowMinimum: false,
      });
      controlValues(standby).should.eql([STATE_CODES.standby, power.min, OPTIONS.dischargeSoc]);
    });

    it('a non-zero amount under the minimum power is standby, with or without clamping', () => {
      for (const options of [OPTIONS, CLAMP]) {
        for (const watts of [power.min! - 1, -(power.min! - 1), 1]) {
          const result = parseControl(watts, options);
          result.state.should.equal('standby');
          result.belowMinimum.should.be.true();
        }
      }
      parseControl(power.min!, OPTIONS).state.should.equal('discharge');
      parseControl(-power.min!, OPTIONS).state.should.equal('charge');
    });

    it('rounds fractional watts', () => {
      parseControl(-799.6, OPTIONS).power.should.equal(800);
      parseControl(power.min! - 0.6, OPTIONS).state.should.equal('standby');
      parseControl(power.min! - 0.4, OPTIONS).power.should.equal(power.min);
    });

    it('rejects more than the maximum, naming the signed value and range', () => {
      const error = invalid(-(power.max! + 1), OPTIONS, /^power$/);
      should(error.value).equal(-(power.max! + 1));
      error.message.should.containEql(String(power.max));
    });

    it('clamps more than the maximum when clamping is on', () => {
      parseControl(power.max! + 500, CLAMP).should.eql({
        state: 'discharge',
        code: STATE_CODES.discharge,
        power: power.max,
        soc: OPTIONS.dischargeSoc,
        clamped: true,
        belowMinimum: false,
      });
      parseControl(-(power.max! * 2), CLAMP).power.should.equal(power.max);
    });

    it('rejects what is no number', () => {
      invalid(Number.NaN, CLAMP, /^power$/);
      invalid(Infinity, CLAMP, /^power$/);
      invalid({ power: 'lots' }, CLAMP, /^power$/);
    });

    it('takes decimal numbers and numeric strings only', () => {
      parseControl('-800', OPTIONS).should.containEql({ state: 'charge', power: 800 });
      for (const payload of ['0x32', '-0x320', '0b110010', '1e400']) invalid(payload, OPTIONS, /^(payload|state)$/);
      invalid({ power: '0x320' }, OPTIONS, /^power$/);
      invalid({ state: 'charge', power: '0x320' }, OPTIONS, /power/);
      invalid({ state: 'charge', soc: '0x32' }, OPTIONS, /soc|SOC/);
      invalid({ state: 'charge', power: '0x320' }, CLAMP, /power/);
      invalid({ state: '0x1' }, OPTIONS, /^state$/);
    });
  });

  describe('object and word payloads', () => {
    it('takes state words, catalogue labels and codes', () => {
      parseControl({ state: 'charge', power: 1200, soc: 90 }, OPTIONS).should.eql({
        state: 'charge',
        code: STATE_CODES.charge,
        power: 1200,
        soc: 90,
        clamped: false,
        belowMinimum: false,
      });
      parseControl({ state: 'Discharging' }, OPTIONS).state.should.equal('discharge');
      parseControl({ state: STATE_CODES.discharge, power: 700 }, OPTIONS).power.should.equal(700);
      parseControl({ state: String(STATE_CODES.charge) }, OPTIONS).state.should.equal('charge');
      parseControl('standby', OPTIONS).state.should.equal('standby');
      parseControl(' CHARGE ', OPTIONS).state.should.equal('charge');
    });

    it('fills power and SOC from the node settings', () => {
      const charge = parseControl({ state: 'charge' }, OPTIONS);
      [charge.power, charge.soc].should.eql([OPTIONS.power, OPTIONS.chargeSoc]);
      const discharge = parseControl({ state: 'discharge', soc: 30 }, OPTIONS);
      [discharge.power, discharge.soc].should.eql([OPTIONS.power, 30]);
    });

    it('standby ignores a given power and keeps a given SOC', () => {
      const standby = parseControl({ state: 'standby', power: 99999, soc: 40 }, OPTIONS);
      [standby.power, standby.soc].should.eql([power.min, 40]);
    });

    it('an object without state uses the signed power', () => {
      const result = parseControl({ power: -600, soc: 95 }, OPTIONS);
      [result.state, result.power, result.soc].should.eql(['charge', 600, 95]);
    });

    it('rejects out-of-range power and SOC, naming the field and allowed range', () => {
      invalid({ state: 'charge', power: power.min! - 1 }, OPTIONS, /controlPower/).allowed.should.containEql(String(power.min));
      invalid({ state: 'charge', power: -800 }, OPTIONS, /controlPower/);
      invalid({ state: 'charge', soc: soc.max! + 1 }, OPTIONS, /controlSoc/).allowed.should.containEql(String(soc.max));
      invalid({ state: 'discharge', soc: soc.min! - 1 }, OPTIONS, /controlSoc/);
      invalid({ state: 'charge', soc: 50.5 }, CLAMP, /controlSoc/);
      invalid({ state: 'charge', power: 800 }, { ...OPTIONS, chargeSoc: soc.max! + 1 }, /controlSoc/);
    });

    it('clamps power and SOC when clamping is on', () => {
      const result = parseControl({ state: 'charge', power: 10, soc: 120 }, CLAMP);
      [result.power, result.soc, result.clamped].should.eql([power.min, soc.max, true]);
      parseControl({ state: 'charge', power: 800, soc: 80 }, CLAMP).clamped.should.be.false();
    });

    it('rejects unknown states and payload shapes', () => {
      invalid({ state: 'boost' }, CLAMP, /^state$/);
      invalid({ state: 7 }, CLAMP, /^state$/);
      invalid('boost', CLAMP, /^state$/);
      for (const payload of [undefined, null, true, [1, 800, 50], {}, { soc: 50 }]) invalid(payload, CLAMP, /^payload$/);
    });
  });

  describe('repeat skipping', () => {
    const sent = { code: STATE_CODES.discharge, power: 800, soc: 15, at: 1000 };
    const same = parseControl({ state: 'discharge', power: 800, soc: 15 }, OPTIONS);

    it('skips the same setpoint inside the window only', () => {
      isRepeat(sent, same, 1000 + 29999, 30000).should.be.true();
      isRepeat(sent, same, 1000 + 30000, 30000).should.be.false();
      isRepeat(undefined, same, 1000, 30000).should.be.false();
    });

    it('never skips a different setpoint, or with a window of 0', () => {
      isRepeat(sent, parseControl({ state: 'discharge', power: 801, soc: 15 }, OPTIONS), 1001, 30000).should.be.false();
      isRepeat(sent, parseControl({ state: 'charge', power: 800, soc: 15 }, OPTIONS), 1001, 30000).should.be.false();
      isRepeat(sent, same, 1001, 0).should.be.false();
    });

    it('does not skip when the clock went backwards', () => {
      isRepeat(sent, same, 999, 30000).should.be.false();
    });
  });

  describe('RealTimeController against the simulator', function () {
    this.timeout(30000);
    const PASSWORD = 'control-pass';
    let simulator: DeviceSimulator;
    let client: DeviceClient;
    const SETTINGS: ControllerSettings = { ...OPTIONS, switchMode: true, repeatMs: 30000, modeCheckMs: 600000 };

    async function start(workingMode: number): Promise<void> {
      simulator = new DeviceSimulator({ port: 0, udpPort: null, password: PASSWORD, workingMode });
      await simulator.start();
      client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, timeoutMs: 3000 });
    }

    afterEach(async () => {
      client?.close();
      await simulator?.stop();
    });

    const discharge = (watts: number) => parseControl(watts, OPTIONS);

    it('writes the mode without reading it first when nothing is known, then the setpoint', async () => {
      await start(1);
      const controller = new RealTimeController(client, SETTINGS);
      (await controller.apply(discharge(900))).should.eql({ status: 'written', modeChanged: true });
      simulator.stats.byOperation.should.eql({ 'Vendor.SetData': 2 });
      simulator.workingMode.should.equal(REAL_TIME.mode);
      simulator.control.should.containEql({ state: STATE_CODES.discharge, power: 900 });
    });

    it('sends the first setpoint at once when a read already showed real-time control', async () => {
      await start(REAL_TIME.mode);
      await client.read([WORKING_MODE_READ_ADDRESS]);
      const controller = new RealTimeController(client, SETTINGS);
      (await controller.apply(discharge(900))).should.eql({ status: 'written', modeChanged: false });
      simulator.stats.byOperation.should.eql({ 'Vendor.GetData': 1, 'Vendor.SetData': 1 });
    });

    it('takes an accepted setpoint as proof of the mode, so no re-check write is needed while setpoints go through', async () => {
      await start(1);
      const controller = new RealTimeController(client, { ...SETTINGS, repeatMs: 0, modeCheckMs: 1500 });
      await controller.apply(discharge(900)); // mode write at once, setpoint a second later
      await new Promise((resolve) => setTimeout(resolve, 1000)); // the mode write is now 2 s old, the setpoint 1 s
      (await controller.apply(discharge(950))).should.eql({ status: 'written', modeChanged: false });
      simulator.stats.byOperation.should.eql({ 'Vendor.SetData': 3 });
    });

    it('switches back and sends once more when the mode was changed in the app', async () => {
      await start(1);
      const controller = new RealTimeController(client, SETTINGS);
      await controller.apply(discharge(900));
      simulator.changeWorkingMode(1);
      (await controller.apply(discharge(1000))).should.eql({ status: 'written', modeChanged: true });
      simulator.workingMode.should.equal(REAL_TIME.mode);
      simulator.control.should.containEql({ power: 1000 });
    });

    it('does not count a superseded setpoint as sent: the same one later goes out', async () => {
      await start(REAL_TIME.mode);
      await client.read([WORKING_MODE_READ_ADDRESS]);
      const controller = new RealTimeController(client, SETTINGS);
      // Another writer's setpoint replaces ours while it waits behind a read.
      const blocker = client.read([WORKING_MODE_READ_ADDRESS]);
      const ours = controller.apply(discharge(900));
      await new Promise((resolve) => setImmediate(resolve));
      const other = client.setRealTime(STATE_CODES.charge, 1200, 100);
      (await ours).status.should.equal('superseded');
      await Promise.all([blocker, other]);
      simulator.control.should.containEql({ state: STATE_CODES.charge, power: 1200 });
      (await controller.apply(discharge(900))).status.should.equal('written');
      simulator.control.should.containEql({ state: STATE_CODES.discharge, power: 900 });
    });

    it('sends a repeat that came while the first was on its way when the first fails, and skips it when it succeeds', async () => {
      await start(REAL_TIME.mode);
      await client.read([WORKING_MODE_READ_ADDRESS]);
      const controller = new RealTimeController(client, { ...SETTINGS, switchMode: false });
      simulator.setFault('http500', 1);
      const first = controller.apply(discharge(900)).then(
        () => undefined,
        (error: Error) => error,
      );
      const repeat = controller.apply(discharge(900));
      should(await first).have.property('code', 'HTTP_STATUS');
      (await repeat).status.should.equal('written');
      simulator.control.should.containEql({ power: 900 });
      const again = [controller.apply(discharge(950)), controller.apply(discharge(950))];
      (await Promise.all(again)).map((outcome) => outcome.status).should.eql(['written', 'repeat']);
      simulator.stats.byOperation['Vendor.SetData'].should.equal(3);
    });

    it('sends a setpoint equal to the last one acknowledged when a different one is on its way: that one would stand', async () => {
      await start(REAL_TIME.mode);
      await client.read([WORKING_MODE_READ_ADDRESS]);
      const controller = new RealTimeController(client, { ...SETTINGS, switchMode: false });
      (await controller.apply(discharge(900))).status.should.equal('written');
      // A pulse goes out, and before it is acknowledged the setpoint before it is wanted again (a loop switched off).
      const pulse = controller.apply(discharge(1000));
      const back = controller.apply(discharge(900));
      await pulse;
      (await back).status.should.equal('written');
      simulator.control.should.containEql({ state: STATE_CODES.discharge, power: 900 });
    });

    it('checks every setting, naming the one that is wrong', () => {
      (() => controlSettings({ repeat: '1e400' })).should.throw(/repeat time.*"1e400".*0 to 604800 s/);
      (() => controlSettings({ power: 5000 })).should.throw(/power.*to 2400 W/);
      // The default power meets the larger limit; a message's state meets its own.
      controlSettings({ power: '5000' }, { chargeLimit: 6000, dischargeLimit: 800 }).power.should.equal(5000);
      (() => controlSettings({ power: 1201 }, { chargeLimit: 1200, dischargeLimit: 800 })).should.throw(/power.*to 1200 W/);
      // Power and SOC are whole numbers, as the control write takes them: 10.5 % would fail every message.
      (() => controlSettings({ dischargeSoc: '10.5' })).should.throw(/discharge SOC.*"10.5".*an integer/);
      (() => controlSettings({ power: 800.5 })).should.throw(/power.*an integer/);
      (() => controlSettings({ chargeSoc: 101 })).should.throw(/charge SOC/);
      (() => controlSettings({ modeCheck: '0x10' })).should.throw(/mode re-check time.*"0x10"/);
      controlSettings({}).should.containEql({ power: CONTROL_DEFAULTS.power, repeatMs: CONTROL_DEFAULTS.repeatSeconds * 1000 });
    });
  });
});
