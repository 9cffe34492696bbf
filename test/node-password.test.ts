/** The set password node against the simulator. The passwords must never show up in a msg, log, status or error. */
import should from 'should';
import deviceNode = require('../nodes/localbattery-device');
import infoNode = require('../nodes/localbattery-info');
import passwordNode = require('../nodes/localbattery-password');
import type { DeviceSimulator } from '../src/simulator';
import { PASSWORD, deviceConfig, helper, startSimulator } from './support';
import { inEnglish, lastStatus, nextInput, statusesOf, text } from './node-support';

const nodes = [inEnglish(deviceNode), inEnglish(infoNode), inEnglish(passwordNode)];
const NEW_PASSWORD = 'n3w-Secret-pw';

function flow(simulator: DeviceSimulator, options: { source?: string; password?: string; current?: string } = {}) {
  const device = deviceConfig(simulator);
  const credentials: Record<string, unknown> = { ...device.credentials };
  if (options.current !== undefined) credentials.device1 = { password: options.current };
  if (options.password !== undefined) credentials.pw1 = { password: options.password };
  return {
    flow: [
      device.node as Record<string, unknown>,
      { id: 'pw1', type: 'localbattery-password', device: 'device1', source: options.source ?? 'field', wires: [['out']] },
      { id: 'info1', type: 'localbattery-info', device: 'device1', wires: [['infoOut']] },
      { id: 'out', type: 'helper' },
      { id: 'infoOut', type: 'helper' },
      { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
      { id: 'caught', type: 'helper' },
    ],
    credentials,
  };
}

/** Everything a user could see: statuses of every node, log entries, the msgs given. */
function visibleText(msgs: unknown[]): string {
  const statuses = ['device1', 'pw1', 'info1'].flatMap((id) => (helper.getNode(id) ? statusesOf(helper.getNode(id)) : []));
  const logs = helper
    .log()
    .getCalls()
    .map((call: { args: unknown[] }) => call.args);
  return JSON.stringify([statuses, logs, msgs], (_key, value) => (value instanceof Error ? { ...value, message: value.message } : value));
}

describe('localbattery-password node', function () {
  let simulator: DeviceSimulator;

  afterEach(async function () {
    await helper.unload();
    await simulator?.stop();
  });

  it('changes the password from its credential; the shared client uses the new one at once', async function () {
    simulator = await startSimulator();
    const { flow: f, credentials } = flow(simulator, { password: NEW_PASSWORD });
    await helper.load(nodes, f, credentials);
    const pw = helper.getNode('pw1');
    const output = nextInput(helper.getNode('out'));
    pw.receive({ payload: 'ignored', topic: 'setup' });
    const msg = await output;

    should(msg.payload).eql({ result: true });
    should(msg.topic).equal('setup');
    should(simulator.password).equal(NEW_PASSWORD);
    should(simulator.hasDefaultPassword).be.false();
    should(statusesOf(pw)).eql([
      { fill: 'blue', shape: 'ring', text: text('localbattery-password.status.changing') },
      { fill: 'green', shape: 'dot', text: text('localbattery-device.status.connected') },
      { fill: 'yellow', shape: 'dot', text: text('localbattery-password.status.changed') },
    ]);
    const warnings = (pw.warn as unknown as { getCalls(): { thisValue: unknown; args: unknown[] }[] })
      .getCalls()
      .filter((call) => call.thisValue === pw);
    should(warnings.map((call) => call.args[0])).eql([text('localbattery-password.warn.updateConfig', { device: 'sim' })]);

    // The config node still holds the old password, but its client already uses the new one.
    const infoOutput = nextInput(helper.getNode('infoOut'));
    helper.getNode('info1').receive({});
    should((await infoOutput).payload.sn).be.a.String();
    should(simulator.stats.violations).eql([]);

    const seen = visibleText([msg]);
    should(seen).containEql('Device password changed'); // the record does hold the logs
    should(seen).not.containEql(NEW_PASSWORD);
    should(seen).not.containEql(PASSWORD);
  });

  it('takes the new password from msg.payload and replaces it with {result: true}', async function () {
    simulator = await startSimulator();
    const { flow: f, credentials } = flow(simulator, { source: 'payload' });
    await helper.load(nodes, f, credentials);
    const output = nextInput(helper.getNode('out'));
    helper.getNode('pw1').receive({ payload: NEW_PASSWORD });
    const msg = await output;
    should(msg.payload).eql({ result: true });
    should(simulator.password).equal(NEW_PASSWORD);
    should(visibleText([msg])).not.containEql(NEW_PASSWORD);
  });

  it('sets the first password of a device that still has its default password', async function () {
    simulator = await startSimulator({ password: undefined, defaultPassword: 'factory-pw' });
    should(simulator.hasDefaultPassword).be.true();
    const { flow: f, credentials } = flow(simulator, { password: NEW_PASSWORD, current: 'factory-pw' });
    await helper.load(nodes, f, credentials);
    const output = nextInput(helper.getNode('out'));
    helper.getNode('pw1').receive({});
    should((await output).payload).eql({ result: true });
    should(simulator.hasDefaultPassword).be.false();
    should(simulator.password).equal(NEW_PASSWORD);
  });

  describe('refuses before sending anything', function () {
    const cases: { name: string; source: string; password?: string; payload?: unknown; field: RegExp }[] = [
      { name: 'a payload of 17 bytes (9 characters)', source: 'payload', payload: 'ääääääääa', field: /msg\.payload.*17 bytes/ },
      { name: 'an empty payload', source: 'payload', payload: '', field: /msg\.payload/ },
      { name: 'a payload that is not text', source: 'payload', payload: 12345678, field: /msg\.payload.*\(number\)/ },
      { name: 'a missing payload', source: 'payload', field: /msg\.payload/ },
      { name: 'an empty password field', source: 'field', field: /new password/ },
      { name: 'a password field over 16 bytes', source: 'field', password: 'x'.repeat(17), field: /new password.*17 bytes/ },
    ];
    for (const c of cases) {
      it(c.name, async function () {
        simulator = await startSimulator();
        const { flow: f, credentials } = flow(simulator, { source: c.source, password: c.password });
        await helper.load(nodes, f, credentials);
        const pw = helper.getNode('pw1');
        const caught = nextInput(helper.getNode('caught'));
        let outputs = 0;
        helper.getNode('out').on('input', () => outputs++);
        pw.receive(c.payload === undefined ? {} : { payload: c.payload });
        const msg = await caught;

        should(msg.error.code).equal('INVALID_VALUE');
        should(msg.error.message).match(c.field);
        should(msg).not.have.property('payload');
        should(outputs).equal(0);
        should(simulator.stats.requests).equal(0);
        should(simulator.password).equal(PASSWORD);
        should(lastStatus(pw)).eql({ fill: 'red', shape: 'ring', text: 'invalid value' });
        if (typeof c.payload === 'string' && c.payload) should(visibleText([msg])).not.containEql(c.payload);
        if (c.password) should(visibleText([msg])).not.containEql(c.password);
      });
    }
  });

  it('reports a refusal to Catch and leaves the password as it was', async function () {
    simulator = await startSimulator();
    simulator.setFault('resultFalse', 1);
    const { flow: f, credentials } = flow(simulator, { source: 'payload' });
    await helper.load(nodes, f, credentials);
    const caught = nextInput(helper.getNode('caught'));
    helper.getNode('pw1').receive({ payload: NEW_PASSWORD });
    const msg = await caught;
    should(msg.error.code).equal('REFUSED');
    should(msg).not.have.property('payload');
    should(simulator.password).equal(PASSWORD);
    should(lastStatus(helper.getNode('pw1'))).eql({ fill: 'red', shape: 'ring', text: 'refused' });
    should(visibleText([msg])).not.containEql(NEW_PASSWORD);
  });

  it('reports a wrong current password (the config node) to Catch', async function () {
    simulator = await startSimulator();
    const { flow: f, credentials } = flow(simulator, { password: NEW_PASSWORD, current: 'not-the-password' });
    await helper.load(nodes, f, credentials);
    const caught = nextInput(helper.getNode('caught'));
    helper.getNode('pw1').receive({});
    const msg = await caught;
    should(msg.error.code).equal('UNAUTHORIZED');
    should(simulator.password).equal(PASSWORD);
    should(simulator.stats.byOperation['User.SetConfig']).equal(1);
    const seen = visibleText([msg]);
    should(seen).not.containEql(NEW_PASSWORD);
    should(seen).not.containEql('not-the-password');
  });

  it('reports a missing device configuration', async function () {
    simulator = await startSimulator();
    const { flow: f, credentials } = flow(simulator, { password: NEW_PASSWORD });
    f[1] = { ...f[1], device: '' };
    await helper.load(nodes, f, credentials);
    const caught = nextInput(helper.getNode('caught'));
    helper.getNode('pw1').receive({});
    should((await caught).error.message).equal(`Error: ${text('localbattery-password.errors.noDevice')}`);
    should(simulator.stats.requests).equal(0);
  });
});
