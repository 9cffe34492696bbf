/**
 * One truth about each device (src/device/device-state.ts): the last command wins over folds and retries, state kept once
 * per device, dropped jobs never send, callbacks cannot break the queue. Real clients against the simulator.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import should from 'should';
import { REAL_TIME, pointByName } from '../src/points/catalogue';
import { DeviceClient, type ClientOptions } from '../src/device/client';
import {
  CONTROL_DEFAULTS,
  RealTimeController,
  STATE_CODES,
  WORKING_MODE_READ_ADDRESS,
  parseControl,
  type ControllerSettings,
} from '../src/control/control';
import { RetriedLoad } from '../src/device/auth';
import type { DeviceError } from '../src/errors';
import { deviceQueue } from '../src/device/scheduler';
import { DeviceSimulator, type SimulatorOptions } from '../src/simulator';
import { goingOut } from './support';

const PASSWORD = 'state-pass';
const address = (name: string) => pointByName(name)!.address;
/** Read back with an offset: 1000 disabled, 1001 enabled. */
const GRID_CHARGING = address('gridCharging');
const SETTINGS: ControllerSettings = {
  power: CONTROL_DEFAULTS.power,
  chargeSoc: 90,
  dischargeSoc: 10,
  clamp: false,
  switchMode: true,
  repeatMs: 30000,
  modeCheckMs: 600000,
};
const settle = (promise: Promise<unknown>) =>
  promise.then(
    (value) => value,
    (error: DeviceError) => error.code,
  );
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, what: string): Promise<void> {
  for (const started = Date.now(); !check(); await sleep(5)) if (Date.now() - started > 5000) throw new Error(`no ${what}`);
}

describe('device state (one truth about each device)', function () {
  this.timeout(30000);
  let simulator: DeviceSimulator;
  const clients: DeviceClient[] = [];

  async function start(options: SimulatorOptions = {}): Promise<void> {
    simulator = new DeviceSimulator({ port: 0, udpPort: null, password: PASSWORD, ...options });
    await simulator.start();
  }

  function clientFor(options: Partial<ClientOptions> = {}): DeviceClient {
    const client = new DeviceClient({ host: '127.0.0.1', port: simulator.port, password: PASSWORD, timeoutMs: 3000, ...options });
    clients.push(client);
    return client;
  }

  /** A read that has gone out: the writes asked after it wait for the next slot, and fold. */
  async function busyLine(client: DeviceClient): Promise<Promise<unknown>> {
    const read = goingOut();
    const blocker = client.read([address('batterySoc')], { onStart: read.onStart });
    await read.out;
    return blocker;
  }

  /** Every write of `client` the device accepted, in order. */
  function acceptedWrites(client: DeviceClient): string[] {
    const writes: string[] = [];
    const writeRange = client.writeRange.bind(client);
    client.writeRange = async (at, values, context) => {
      await writeRange(at, values, context);
      writes.push(`${at}=${JSON.stringify(values)}`);
    };
    return writes;
  }

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await simulator?.stop();
  });

  describe('the last command wins', () => {
    // The Cheap-hours charging example: "start charging" (grid charging on, control node charge 1500 W to 90 %) and,
    // 0.4 s later, "stop" (working mode 1, grid charging off).
    function cheapHours(client: DeviceClient) {
      const gridOn = client.session();
      const control = client.session();
      const modeOne = client.session();
      const gridOff = client.session();
      const controller = new RealTimeController(control, { ...SETTINGS, repeatMs: 0 });
      const charge = parseControl(
        { state: 'charge', power: 1500, soc: 90 },
        { ...SETTINGS, limits: { chargeLimit: 2400, dischargeLimit: 2400 } },
      );
      return {
        controller,
        start: () => [settle(gridOn.write('gridChargingSetting', 1)), settle(controller.apply(charge))],
        stop: () => [settle(modeOne.write('workingModeSetting', 1)), settle(gridOff.write('gridChargingSetting', 0))],
      };
    }

    it('stop 0.4 s after start: the device ends in mode 1 with grid charging off, never charging at 1500 W', async () => {
      await start({ workingMode: 1 });
      const client = clientFor();
      const writes = acceptedWrites(client);
      const flows = cheapHours(client);
      const started = flows.start();
      await sleep(400);
      const stopped = flows.stop();
      const outcomes = await Promise.all([...started, ...stopped]);
      should(outcomes[1]).containEql({ status: 'superseded' });
      simulator.workingMode.should.equal(1);
      simulator.value(GRID_CHARGING)!.should.equal(1000);
      writes.should.not.containEql(`${REAL_TIME.stateAddress}=[1,1500,90]`);
      simulator.control.state.should.not.equal(STATE_CODES.charge);
    });

    // The case: a slow device (answers after 1 s), and the line busy when "start" comes.
    for (const busy of ["the control node's start read of the mode", "a monitor's read", 'nothing']) {
      it(`stop 0.4 s after start on a slow device, the line busy with ${busy}: working mode 1, never charging`, async () => {
        await start({ workingMode: 1, latencyMs: 1000 });
        const client = clientFor();
        const writes = acceptedWrites(client);
        const flows = cheapHours(client);
        const inFlight =
          busy === 'nothing'
            ? Promise.resolve()
            : busy === "a monitor's read"
              ? client.read([address('batterySoc')])
              : flows.controller.learnMode();
        if (busy !== 'nothing') await until(() => simulator.stats.requests === 1, 'the read at the device');
        const started = flows.start();
        await sleep(400);
        const stopped = flows.stop();
        const outcomes = await Promise.all([...started, ...stopped, inFlight]);
        should(outcomes[1]).containEql({ status: 'superseded' });
        simulator.workingMode.should.equal(1);
        simulator.value(GRID_CHARGING)!.should.equal(1000);
        writes.should.not.containEql(`${REAL_TIME.stateAddress}=[1,1500,90]`);
        writes.should.not.containEql(`${REAL_TIME.modeAddress}=[${REAL_TIME.mode}]`);
        simulator.control.state.should.not.equal(STATE_CODES.charge);
      });
    }

    it('start 0.4 s after stop: the device ends charging at 1500 W in real-time control with grid charging on', async () => {
      await start({ workingMode: REAL_TIME.mode });
      const client = clientFor();
      const flows = cheapHours(client);
      await Promise.all(flows.start());
      const stopped = flows.stop();
      await sleep(400);
      const started = flows.start();
      const outcomes = await Promise.all([...stopped, ...started]);
      should(outcomes[3]).containEql({ status: 'written' });
      simulator.workingMode.should.equal(REAL_TIME.mode);
      simulator.value(GRID_CHARGING)!.should.equal(1001);
      simulator.control.should.containEql({ state: STATE_CODES.charge, power: 1500, soc: 90 });
    });

    it('a refused setpoint is not retried over a newer mode write that went out before it', async () => {
      await start({ workingMode: REAL_TIME.mode });
      const client = clientFor();
      await client.read([WORKING_MODE_READ_ADDRESS]);
      const controller = new RealTimeController(client.session(), SETTINGS);
      const blocker = await busyLine(client);
      const older = settle(client.session().write('workingModeSetting', 5));
      const ours = settle(controller.apply(parseControl(900, SETTINGS)));
      await new Promise((resolve) => setImmediate(resolve));
      // The owner's app (or another node) puts the device back to self-consumption: folded into the older mode write,
      // it goes out before our setpoint, which the device then refuses.
      const newer = settle(client.session().write('workingModeSetting', 1));
      const outcomes = await Promise.all([blocker, older, ours, newer]);
      should(outcomes[2]).containEql({ status: 'superseded' });
      simulator.workingMode.should.equal(1);
      simulator.stats.byOperation['Vendor.SetData'].should.equal(2); // the mode, the refused setpoint: no retry
    });

    it('checks a folded write as it will go out: state 1 alone over a waiting standby [0, 0, 0] is refused', async () => {
      await start({ workingMode: REAL_TIME.mode });
      const client = clientFor();
      const blocker = await busyLine(client);
      const standby = settle(client.write(REAL_TIME.stateAddress, [0, 0, 0]));
      const charge = client.write(REAL_TIME.stateAddress, 1).then(
        () => undefined,
        (error: Error) => error,
      );
      const error = (await charge)!;
      should(error).have.property('code', 'INVALID_VALUE');
      error.message.should.match(/folded into the waiting \[0,0,0\].*\[1,0,0\]/);
      should(await standby).containEql({ status: 'written' });
      await blocker;
      simulator.control.state.should.equal(STATE_CODES.standby);
      simulator.stats.byOperation['Vendor.SetData'].should.equal(1);
    });

    it("closing the newer caller of a folded write keeps the older caller's value (a partial deploy)", async () => {
      await start();
      const client = clientFor();
      const older = client.session();
      const newer = client.session();
      const blocker = await busyLine(client);
      const first = settle(older.write('feedInPowerLimitSetting', 600));
      const second = settle(newer.write('feedInPowerLimitSetting', 700));
      should(await first).containEql({ status: 'superseded' });
      newer.close();
      should(await second).equal('CLOSED');
      await blocker;
      await client.read([address('batterySoc')]); // behind the write
      simulator.value(address('feedInPowerLimit'))!.should.equal(600);
    });
  });

  describe('a re-fold after a caller leaves (a partial deploy)', () => {
    it('is checked again: [2, 2000, 90] left by a leaving 800 W is no setpoint under an 800 W discharge limit, and is not sent', async () => {
      await start({ workingMode: REAL_TIME.mode });
      const client = clientFor({ dischargeLimit: 800 });
      const [a, b, c] = [client.session(), client.session(), client.session()];
      const blocker = await busyLine(client);
      const first = settle(a.write(REAL_TIME.stateAddress, [1, 2000, 90]));
      const second = settle(b.write(REAL_TIME.powerAddress, 800));
      const third = c.write(REAL_TIME.stateAddress, 2).then(
        () => undefined,
        (e: DeviceError) => e,
      );
      b.close();
      should(await first).containEql({ status: 'superseded' });
      should(await second).containEql({ status: 'superseded' });
      const error = (await third)!;
      should(error).have.property('code', 'INVALID_VALUE');
      error.message.should.match(/\[2,2000,90\].*nothing was sent/);
      await blocker;
      await client.read([address('batterySoc')]); // where the write would have gone
      simulator.control.should.not.containEql({ state: STATE_CODES.discharge, power: 2000 });
      should(simulator.stats.byOperation['Vendor.SetData']).be.undefined();
    });

    it("does not keep the leaving caller's onStart and urgency", async () => {
      await start();
      const client = clientFor();
      const [older, leaving] = [client.session(), client.session()];
      const inFlight = client.write('backupSocSetting', 30); // a command: the reads' turn comes next
      await until(() => simulator.stats.requests === 1, 'the write at the device');
      const order: string[] = [];
      const read = client.read([address('batterySoc')]).then(() => order.push('read'));
      const kept = older.write('feedInPowerLimitSetting', 600).then(() => order.push('write'));
      let started = false;
      const gone = settle(leaving.write('feedInPowerLimitSetting', 700, { urgent: true, onStart: () => (started = true) }));
      leaving.close();
      await Promise.all([inFlight, read, kept, gone]);
      await client.read([address('batterySoc')]); // behind the folded write
      simulator.value(address('feedInPowerLimit'))!.should.equal(600);
      order.should.eql(['write', 'read']); // the older caller was told at once; the read went first
      started.should.be.false();
    });

    it('whose callers all left sends nothing', async () => {
      await start({ workingMode: REAL_TIME.mode });
      const client = clientFor();
      const sessions = [client.session(), client.session(), client.session()];
      const blocker = await busyLine(client);
      const outcomes = [
        settle(sessions[0].write(REAL_TIME.stateAddress, [1, 900, 90])),
        settle(sessions[1].write(REAL_TIME.powerAddress, 800)),
        settle(sessions[2].write(REAL_TIME.stateAddress, 2)),
      ];
      for (const session of sessions) session.close();
      await Promise.all([blocker, ...outcomes]);
      await client.read([address('batterySoc')]);
      should(simulator.stats.byOperation['Vendor.SetData']).be.undefined();
    });
  });

  describe('kept once per device', () => {
    it('a write node standby between two equal control setpoints makes the second one go out', async () => {
      await start({ workingMode: REAL_TIME.mode });
      const client = clientFor();
      await client.read([WORKING_MODE_READ_ADDRESS]);
      const controller = new RealTimeController(client.session(), SETTINGS);
      (await controller.apply(parseControl(-800, SETTINGS))).status.should.equal('written');
      await client.session().write('controlState', [STATE_CODES.standby, 0, 0]);
      (await controller.apply(parseControl(-800, SETTINGS))).status.should.equal('written');
      simulator.control.should.containEql({ state: STATE_CODES.charge, power: 800 });
      client.deviceState.setpoint!.should.containEql({ code: STATE_CODES.charge, power: 800 });
    });

    it("another node's refused write to the power point is no mode change: the next setpoint is one request", async () => {
      await start({ workingMode: REAL_TIME.mode });
      const client = clientFor();
      const controller = new RealTimeController(client.session(), SETTINGS);
      should(await controller.learnMode()).equal(REAL_TIME.mode);
      (await controller.apply(parseControl(900, SETTINGS))).status.should.equal('written');
      simulator.setFault('resultFalse', 1);
      should(await settle(client.session().write(REAL_TIME.powerAddress, 700))).equal('REFUSED');
      const before = simulator.stats.byOperation['Vendor.SetData'];
      (await controller.apply(parseControl(950, SETTINGS))).should.eql({ status: 'written', modeChanged: false });
      (simulator.stats.byOperation['Vendor.SetData'] - before).should.equal(1);
      client.deviceState.mode()!.should.equal(REAL_TIME.mode);
    });

    it('detects the namespace once per device, not once per client', async () => {
      await start({ namespace: 'Indevolt' });
      await clientFor().read([address('batterySoc')]);
      const later = clientFor();
      await later.read([address('batterySoc')]);
      later.namespace!.should.equal('Indevolt');
      simulator.stats.byOperation.should.eql({ 'Vendor.GetData': 1, 'Indevolt.GetData': 2 });
    });

    it('Test connection reports the namespace that answered while another flow polls', async () => {
      await start({ latencyMs: 200 }); // the flow's poll comes while the device info is answered
      const flow = clientFor();
      const test = clientFor();
      const report = test.testConnection();
      await until(() => simulator.stats.requests === 1, 'device info request');
      const poll = flow.read([address('batterySoc')]); // older than the test's read: it leads the merged request
      const [answer] = await Promise.all([report, poll]);
      should(answer.namespace).equal('Vendor');
      should(answer).have.properties({ detected: true, auth: 'digest' });
      simulator.stats.byOperation['Vendor.GetData'].should.equal(1);
    });

    it('a 400 to a write is about its values, not a wrong namespace', async () => {
      const server = http.createServer((req, res) => {
        const operation = (req.url ?? '').split('?')[0];
        const status = operation === '/rpc/Vendor.SetData' ? 400 : operation === '/rpc/Vendor.GetData' ? 200 : 404;
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(status === 200 ? '{"0":"SN1"}' : '{}');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const client = new DeviceClient({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, auth: 'none' });
      try {
        const error = await client.write('feedInPowerLimitSetting', 600).then(
          () => undefined,
          (e: DeviceError & { status?: number; message: string }) => e,
        );
        should(error).have.property('status', 400);
        error!.message.should.match(/Vendor\.SetData/);
        should(client.namespace).equal('Vendor');
      } finally {
        client.close();
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('the merge key follows a password change', async () => {
      await start();
      const client = clientFor();
      const before = client.mergeKey;
      await client.changePassword('another-pass-2');
      client.mergeKey.should.not.equal(before);
      clientFor({ password: 'another-pass-2' }).mergeKey.should.equal(client.mergeKey);
    });

    it('forgets the queue of a host no client used for the keep-alive time', () => {
      const queue = deviceQueue('192.0.2.1', 8080);
      should(deviceQueue('192.0.2.1', 8080)).equal(queue);
      const now = performance.now.bind(performance);
      performance.now = () => now() + 60000;
      try {
        deviceQueue('192.0.2.2', 8080);
      } finally {
        performance.now = now;
      }
      should(deviceQueue('192.0.2.1', 8080)).not.equal(queue);
    });
  });

  describe('the mode learnt at start (issue 16)', () => {
    it('first setpoint in one request when the device is in real-time control', async () => {
      await start({ workingMode: REAL_TIME.mode });
      const controller = new RealTimeController(clientFor().session(), SETTINGS);
      should(await controller.learnMode()).equal(REAL_TIME.mode);
      const before = simulator.stats.requests;
      (await controller.apply(parseControl(900, SETTINGS))).should.eql({ status: 'written', modeChanged: false });
      (simulator.stats.requests - before).should.equal(1);
    });

    /** A controller sent 900 W in mode 4; the redeploy; the owner's app puts the device back to self-consumption. */
    async function redeployedIntoSelfConsumption(): Promise<RealTimeController> {
      await start({ workingMode: REAL_TIME.mode });
      const old = clientFor();
      await new RealTimeController(old.session(), SETTINGS).apply(parseControl(900, SETTINGS));
      old.close();
      simulator.changeWorkingMode(1);
      return new RealTimeController(clientFor().session(), SETTINGS);
    }

    it('in two after a redeploy that found the mode changed meanwhile, and none refused', async () => {
      const controller = await redeployedIntoSelfConsumption();
      const sent = simulator.stats.requests;
      const learning = controller.learnMode(); // the node starts
      await until(() => simulator.stats.requests === sent + 1, 'the start read at the device');
      const setpoint = controller.apply(parseControl(1000, SETTINGS)); // a message: it waits for the read
      should(await learning).equal(1);
      const before = simulator.stats.byOperation['Vendor.SetData'];
      (await setpoint).should.eql({ status: 'written', modeChanged: true });
      (simulator.stats.byOperation['Vendor.SetData'] - before).should.equal(2);
      simulator.control.should.containEql({ state: STATE_CODES.discharge, power: 1000 });
    });

    it('a failed start read is told to the warn hook, and what the earlier deployment saw stays untrusted', async () => {
      const controller = await redeployedIntoSelfConsumption();
      simulator.setFault('http500', 1);
      const warnings: string[] = [];
      should(await controller.learnMode((error) => warnings.push(error.message))).be.undefined();
      warnings.should.have.length(1);
      warnings[0].should.match(/500/);
      const before = simulator.stats.byOperation['Vendor.SetData'];
      // The same setpoint as before the redeploy: no repeat, and the mode is written first, not refused.
      (await controller.apply(parseControl(900, SETTINGS))).should.eql({ status: 'written', modeChanged: true });
      (simulator.stats.byOperation['Vendor.SetData'] - before).should.equal(2);
      simulator.control.should.containEql({ state: STATE_CODES.discharge, power: 900 });
    });

    it('a message before the start read has gone out withdraws the read: mode and setpoint, two requests in all', async () => {
      const controller = await redeployedIntoSelfConsumption();
      const before = simulator.stats.requests;
      const learning = controller.learnMode(); // the node starts; its read waits for the interval after the 900
      // The same setpoint as before the redeploy: what the earlier deployment saw is no repeat and no known mode.
      (await controller.apply(parseControl(900, SETTINGS))).should.eql({ status: 'written', modeChanged: true });
      should(await learning).be.undefined();
      (simulator.stats.requests - before).should.equal(2);
      should(simulator.stats.byOperation['Vendor.GetData'] ?? 0).equal(0);
      simulator.workingMode.should.equal(REAL_TIME.mode);
      simulator.control.should.containEql({ state: STATE_CODES.discharge, power: 900 });
    });
  });

  describe('a dropped job never sends', () => {
    it('a read whose caller left while it waits to retry after a 503 is not sent again', async () => {
      await start();
      const client = clientFor();
      const session = client.session();
      simulator.setFault('http503', 1);
      const read = settle(session.read([address('batterySoc')]));
      const margin = deviceQueue('127.0.0.1', simulator.port).margin;
      const before = margin.ms;
      await until(() => margin.ms > before, 'the 503'); // the retry waits for the interval
      session.close();
      should(await read).equal('CLOSED');
      // Another read takes the slot the retry would have had: it is the only request after the 503.
      await client.read([address('batteryPower')]);
      simulator.stats.requests.should.equal(2);
      simulator.stats.byOperation['Vendor.GetData'].should.equal(2);
      client.queueSize.should.equal(0);
    });
  });

  describe('no error escapes', () => {
    it("a throwing onStart callback does not stop the queue or the caller's read", async () => {
      await start();
      const client = clientFor();
      const rejections: unknown[] = [];
      const onRejection = (reason: unknown) => rejections.push(reason);
      process.on('unhandledRejection', onRejection);
      const warnings: string[] = [];
      const onWarning = (warning: Error) => warnings.push(warning.message);
      process.on('warning', onWarning);
      try {
        const result = await client.read([address('batterySoc')], {
          onStart: () => {
            throw new Error('status failed');
          },
        });
        result.values.has(address('batterySoc')).should.be.true();
        (await client.read([address('batterySoc')])).values.has(address('batterySoc')).should.be.true();
        await sleep(10);
        rejections.should.eql([]);
        warnings.should.containEql('status failed');
      } finally {
        process.off('unhandledRejection', onRejection);
        process.off('warning', onWarning);
      }
    });
  });

  it('a failed load is tried again, a successful one kept', async () => {
    let calls = 0;
    const load = new RetriedLoad(() => (++calls === 1 ? Promise.reject(new Error('not yet')) : Promise.resolve(calls)));
    await load.get().should.be.rejectedWith('not yet');
    (await load.get()).should.equal(2);
    (await load.get()).should.equal(2);
    calls.should.equal(2);
  });
});
