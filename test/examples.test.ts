/**
 * Every example in examples/ is imported into Node-RED against the simulator and does what its comment says.
 * Debug nodes are swapped for test-helper nodes (same id) so the test can see what they would show.
 */
import fs from 'node:fs';
import path from 'node:path';
import should from 'should';
import { helper, PASSWORD, startSimulator } from './support';
import type { DeviceSimulator } from '../src/simulator';
import { pointByName } from '../src/catalogue';
import deviceNode = require('../nodes/localbattery-device');
import readNode = require('../nodes/localbattery-read');
import writeNode = require('../nodes/localbattery-write');
import controlNode = require('../nodes/localbattery-control');
import infoNode = require('../nodes/localbattery-info');
import discoverNode = require('../nodes/localbattery-discover');
import passwordNode = require('../nodes/localbattery-password');

// The core nodes are CommonJS files found by path.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const core = (file: string) => require(require.resolve(`@node-red/nodes/core/${file}`));
const CORE_NODES = ['common/20-inject.js', 'common/90-comment.js', 'function/10-function.js', 'function/89-delay.js'].map(core);
const OUR_NODES = [deviceNode, readNode, writeNode, controlNode, infoNode, discoverNode, passwordNode];
const CORE_TYPES = ['comment', 'inject', 'debug', 'function', 'delay', 'change', 'switch', 'mqtt out'];

const EXAMPLES = path.join(__dirname, '..', '..', 'examples');
type FlowNode = Record<string, any>;

function example(name: string): FlowNode[] {
  return JSON.parse(fs.readFileSync(path.join(EXAMPLES, `${name}.json`), 'utf8'));
}

/** The example pointed at the simulator, debug nodes replaced by helper nodes. */
function prepared(name: string, simulator: DeviceSimulator, devicePassword = PASSWORD) {
  // Import puts the nodes on a tab, as the editor's Import does.
  const flow: FlowNode[] = example(name).map((node): FlowNode => {
    if (node.type === 'localbattery-device') return { ...node, host: '127.0.0.1', port: simulator.port, timeout: 3000 };
    if (node.type === 'debug') return { id: node.id, z: 'tab', type: 'helper', name: node.name, wires: [] };
    return { ...node, z: 'tab' };
  });
  flow.unshift({ id: 'tab', type: 'tab', label: name });
  const device = flow.find((node) => node.type === 'localbattery-device')!;
  return { flow, credentials: { [device.id]: { password: devicePassword } } as Record<string, unknown> };
}

function idOf(flow: FlowNode[], predicate: (node: FlowNode) => boolean): string {
  const node = flow.find(predicate);
  should.exist(node);
  return node!.id;
}

function nextMessage(id: string, timeoutMs = 15000): Promise<FlowNode> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no message at ${id} within ${timeoutMs} ms`)), timeoutMs);
    helper.getNode(id).once('input', (msg: FlowNode) => {
      clearTimeout(timer);
      resolve(msg);
    });
  });
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('examples', function () {
  this.timeout(40000);
  let simulator: DeviceSimulator;

  afterEach(async () => {
    await helper.unload();
    await simulator?.stop();
  });

  it('each starts with a comment, uses only core nodes beside ours, and ships a config node without secrets', () => {
    const files = fs.readdirSync(EXAMPLES).filter((file) => file.endsWith('.json'));
    files.length.should.be.aboveOrEqual(6);
    const used = new Set<string>();
    for (const file of files) {
      const flow: FlowNode[] = JSON.parse(fs.readFileSync(path.join(EXAMPLES, file), 'utf8'));
      flow[0].type.should.equal('comment', `${file} starts with a comment`);
      flow[0].info.should.match(/Change:|Enter|change/);
      for (const node of flow) {
        used.add(node.type);
        (node.type.startsWith('localbattery-') || CORE_TYPES.includes(node.type)).should.be.true(`${file}: ${node.type}`);
        should.not.exist(node.credentials);
      }
      JSON.stringify(flow).should.not.match(/password"\s*:\s*"[^"]/);
    }
    for (const type of ['localbattery-discover', 'localbattery-read', 'localbattery-write', 'localbattery-control', 'localbattery-info', 'localbattery-password']) {
      used.has(type).should.be.true(`an example uses ${type}`);
    }
  });

  it('Monitoring: shows key points as one object and sends per-point topics', async () => {
    simulator = await startSimulator();
    const { flow, credentials } = prepared('Monitoring', simulator);
    const overviewDebug = idOf(flow, (n) => n.type === 'helper' && n.name === 'overview');
    const mqttDebug = idOf(flow, (n) => n.type === 'helper' && n.name === 'to MQTT out');
    await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
    // The first poll comes 100 ms after deploy: listening now is in time.
    const overview = nextMessage(overviewDebug);
    const topics: string[] = [];
    const perPoint = new Promise<void>((resolve) => {
      helper.getNode(mqttDebug).on('input', (msg: FlowNode) => {
        topics.push(msg.topic);
        should(msg.payload).be.a.Number();
        if (topics.length === 4) resolve();
      });
    });
    const msg = await overview;
    const reader = flow.find((n) => n.name === 'Battery overview')!;
    Object.keys(msg.payload).sort().should.eql([...reader.points].sort());
    msg.payload.batteryState.should.have.properties(['value', 'label']);
    msg.payload.batterySoc.should.be.within(0, 100);
    msg.units.batterySoc.should.equal('%');
    await perPoint;
    topics.sort().should.eql(['batteryPower', 'batterySoc', 'meterPower', 'pvPower'].map((name) => `home/battery/${name}`));
    simulator.stats.violations.should.be.empty();
  });

  it('Zero feed-in: brings the meter to about 0 W with real-time control', async () => {
    // Mode 5 leaves the battery idle, so the meter starts with the whole house load.
    simulator = await startSimulator({ workingMode: 5 });
    const { flow, credentials } = prepared('Zero feed-in', simulator);
    Math.abs(simulator.meterPower).should.be.above(40, 'the house imports or exports at the start');
    await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower) <= 60, 25000, 'meter power near 0 W');
    simulator.stats.violations.should.be.empty();
  });

  it('Cheap-hours charging: starts grid charging at the start time, then switches it off and returns to self-consumption', async () => {
    simulator = await startSimulator();
    const { flow, credentials } = prepared('Cheap-hours charging', simulator);
    await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
    const result = idOf(flow, (n) => n.type === 'helper');
    const start = flow.find((n) => n.type === 'inject' && /start/.test(n.name))!;
    const stop = flow.find((n) => n.type === 'inject' && /back/.test(n.name))!;
    start.crontab.should.equal('00 02 * * *');
    stop.crontab.should.equal('00 05 * * *');

    const results: FlowNode[] = [];
    helper.getNode(result).on('input', (msg: FlowNode) => results.push(msg));
    helper.getNode(start.id).receive({});
    await until(() => results.length === 2, 15000, 'grid charging and charge results');
    simulator.workingMode.should.equal(4);
    simulator.control.should.containEql({ state: 1, power: 1500, soc: 90 });
    simulator.value(pointByName('gridCharging')!.address)!.should.equal(1001);

    helper.getNode(stop.id).receive({});
    await until(() => results.length === 4, 10000, 'mode and grid charging write results');
    simulator.workingMode.should.equal(1);
    simulator.value(pointByName('gridCharging')!.address)!.should.equal(1000);
    simulator.stats.violations.should.be.empty();
  });

  it('Settings: writes grid charging, feed-in limit and backup SOC, and reads them back', async () => {
    simulator = await startSimulator();
    const { flow, credentials } = prepared('Settings', simulator);
    await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
    const writeResult = idOf(flow, (n) => n.type === 'helper' && n.name === 'write result');
    const settings = idOf(flow, (n) => n.type === 'helper' && n.name === 'settings');
    const written: FlowNode[] = [];
    helper.getNode(writeResult).on('input', (msg: FlowNode) => written.push(msg));
    for (const inject of flow.filter((n) => n.type === 'inject' && n.name !== 'read back')) helper.getNode(inject.id).receive({});
    await until(() => written.length === 3, 15000, 'three write results');
    written.forEach((msg) => msg.payload.should.eql({ result: true }));

    const readBack = nextMessage(settings);
    helper.getNode(idOf(flow, (n) => n.name === 'read back')).receive({});
    const msg = await readBack;
    msg.payload.gridCharging.should.eql({ value: 1001, label: 'Enable' });
    msg.payload.feedInPowerLimit.should.equal(800);
    msg.payload.backupSoc.should.equal(20);
  });

  it('Device info: shows the device object', async () => {
    simulator = await startSimulator();
    const { flow, credentials } = prepared('Device info', simulator);
    await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
    const shown = nextMessage(idOf(flow, (n) => n.type === 'helper'));
    helper.getNode(idOf(flow, (n) => n.type === 'inject')).receive({});
    const msg = await shown;
    msg.payload.sn.should.equal(simulator.value(0));
    msg.payload.should.have.properties(['type', 'fw', 'run_time']);
  });

  it('First-time setup: finds the device and replaces its default password', async () => {
    simulator = await startSimulator({ password: undefined, udpPort: 0 });
    const defaultPassword = simulator.password;
    simulator.hasDefaultPassword.should.be.true();
    const { flow, credentials } = prepared('First-time setup', simulator, defaultPassword);
    // Never broadcast from a test: ask the simulator on loopback only.
    const discover = flow.find((n) => n.type === 'localbattery-discover')!;
    Object.assign(discover, { target: '127.0.0.1', port: simulator.udpPort, localPort: 0, listenTime: 1 });
    const setter = flow.find((n) => n.type === 'localbattery-password')!;
    credentials[setter.id] = { password: 'my-new-pass' };
    await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);

    const found = nextMessage(idOf(flow, (n) => n.type === 'helper' && n.name === 'devices found'));
    helper.getNode(idOf(flow, (n) => n.name === 'find devices')).receive({});
    const devices = (await found).payload as FlowNode[];
    devices.map((d) => d.sn).should.containEql(simulator.value(0));

    const changed = nextMessage(idOf(flow, (n) => n.type === 'helper' && n.name === 'result'));
    helper.getNode(idOf(flow, (n) => n.name === 'change password')).receive({});
    const msg = await changed;
    JSON.stringify(msg).should.not.containEql('my-new-pass');
    simulator.hasDefaultPassword.should.be.false();
    simulator.password.should.equal('my-new-pass');
  });
});
