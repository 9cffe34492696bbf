/**
 * Every example in examples/ is imported into Node-RED against the simulator and does what its comment says.
 * Debug nodes are swapped for test-helper nodes (same id) so the test can see what they would show.
 */
import fs from 'node:fs';
import path from 'node:path';
import should from 'should';
import { helper, PASSWORD, startSimulator } from './support';
import type { DeviceSimulator } from '../src/simulator';
import { pointByName } from '../src/points/catalogue';
import deviceNode = require('../nodes/localbattery-device');
import readNode = require('../nodes/localbattery-read');
import writeNode = require('../nodes/localbattery-write');
import controlNode = require('../nodes/localbattery-control');
import infoNode = require('../nodes/localbattery-info');
import discoverNode = require('../nodes/localbattery-discover');
import passwordNode = require('../nodes/localbattery-password');
import zeroNode = require('../nodes/localbattery-zero-feed-in');
import { startBroker, type TestBroker } from './mqtt-broker';
import { DISCOVERY_TOPIC, checkNumberConfig, checkSensorSemantics, checkSwitchConfig } from './home-assistant-schema';
import { ZERO_FEED_IN_RULES } from '../src/editor/inputs';
import { lastStatus } from './node-support';

// The core nodes are CommonJS files found by path.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const core = (file: string) => require(require.resolve(`@node-red/nodes/core/${file}`));
const CORE_NODES = [
  'common/20-inject.js',
  'common/90-comment.js',
  'function/10-function.js',
  'function/89-delay.js',
  'function/10-switch.js',
  'function/15-change.js',
  'common/25-catch.js',
].map(core);
const MQTT_NODES = core('network/10-mqtt.js');
const OUR_NODES = [deviceNode, readNode, writeNode, controlNode, infoNode, discoverNode, passwordNode, zeroNode];
const CORE_TYPES = ['comment', 'inject', 'debug', 'function', 'delay', 'change', 'switch', 'catch', 'mqtt out', 'mqtt in', 'mqtt-broker'];

const EXAMPLES = path.join(__dirname, '..', '..', 'examples');
/** Node types of the other modules the examples may use, by the module's package.json. */
const MODULE_TYPES = new Map<string, string>(
  ['@flowfuse/node-red-dashboard'].flatMap((module) =>
    Object.keys(
      (JSON.parse(fs.readFileSync(require.resolve(`${module}/package.json`), 'utf8')) as { 'node-red': { nodes: object } })['node-red']
        .nodes,
    ).map((type): [string, string] => [type, module]),
  ),
);
const moduleOfType = (type: string) => MODULE_TYPES.get(type) ?? 'no module';
type FlowNode = Record<string, any>;

function example(name: string): FlowNode[] {
  return JSON.parse(fs.readFileSync(path.join(EXAMPLES, `${name}.json`), 'utf8'));
}

/** Node types that make the device do something: examples import them disabled, for the user to arm. */
const WRITER_TYPES = ['localbattery-write', 'localbattery-control', 'localbattery-password', 'localbattery-zero-feed-in'];
/** Writers that take control of the battery: an example with one also shows how to hand control back. */
const CONTROL_TYPES = ['localbattery-control', 'localbattery-zero-feed-in'];
/** Operations that change the device (SetData under whatever namespace the device uses). */
const isWriteOperation = (operation: string) => /\.SetData$|^User\.SetConfig$/.test(operation);

/**
 * The example pointed at the simulator, debug nodes replaced by helper nodes; `armed`: its disabled nodes enabled,
 * as the user does following the comment.
 */
/** Examples that need more than Node-RED's core nodes and ours. */
const NEEDS_MORE = ['Dashboard.json', 'Home Assistant (MQTT discovery).json', 'Zero feed-in.json'];

/** `armed`: every disabled node enabled, or only those named. */
function prepared(name: string, simulator: DeviceSimulator, devicePassword = PASSWORD, armed: boolean | string[] = true) {
  // Import puts the nodes on a tab, as the editor's Import does.
  const flow: FlowNode[] = example(name).map((node): FlowNode => {
    if (node.type === 'localbattery-device') return { ...node, host: '127.0.0.1', port: simulator.port, timeout: 3000 };
    if (node.type === 'debug') return { id: node.id, z: 'tab', type: 'helper', name: node.name, wires: [] };
    // Never broadcast from a test: discovery asks the simulator on loopback only.
    if (node.type === 'localbattery-discover')
      return { ...node, z: 'tab', target: '127.0.0.1', port: simulator.udpPort ?? 8099, localPort: 0, listenTime: 1 };
    const copy: FlowNode = { ...node, z: 'tab' };
    if (armed === true || (Array.isArray(armed) && armed.includes(node.name))) delete copy.d;
    return copy;
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

interface Hooks {
  add(name: string, hook: (event: any) => void): void;
  remove(name: string): void;
}
const hooks = (helper as unknown as { _RED: { hooks: Hooks } })._RED.hooks;

/**
 * Runs `act` and resolves when what it starts has gone as far as it goes: the first message each node of `sources`
 * sends from now on, and all that follows from it, handled (every node that received one has called done; test-helper
 * sinks excepted).
 */
async function settle(sources: string[], act: () => unknown): Promise<void> {
  const waiting = new Set(sources);
  const traced = new Set<string>();
  /** Deliveries of traced messages not yet done, by node and message (a source completing its own is not one). */
  const open = new Map<string, number>();
  const count = (key: string, by: number) => open.set(key, (open.get(key) ?? 0) + by);
  // Counted when sent, as delivery comes a turn later; disabled nodes are not in the flow and receive nothing.
  hooks.add('onSend.examplesSettle', (events: { source: { id: string }; destination: { id: string }; msg: FlowNode }[]) => {
    for (const { source, destination, msg } of events) {
      if (waiting.delete(source.id)) traced.add(msg._msgid);
      const target = helper.getNode(destination.id);
      if (traced.has(msg._msgid) && target && target.type !== 'helper') count(`${destination.id} ${msg._msgid}`, 1);
    }
  });
  hooks.add('onComplete.examplesSettle', (event: { node: { id: string }; msg: FlowNode }) => {
    const key = `${event.node.id} ${event.msg._msgid}`;
    if (open.get(key)) count(key, -1);
  });
  try {
    await act();
    await until(() => waiting.size === 0 && [...open.values()].every((n) => n === 0), 15000, 'the flow to settle');
  } finally {
    hooks.remove('*.examplesSettle');
  }
}

describe('examples', function () {
  this.timeout(40000);
  let simulator: DeviceSimulator;

  afterEach(async () => {
    await helper.unload();
    await simulator?.stop();
  });

  it('each starts with a comment, uses only core nodes beside ours or names the module, and ships a config node without secrets', () => {
    const files = fs.readdirSync(EXAMPLES).filter((file) => file.endsWith('.json'));
    files.length.should.be.aboveOrEqual(6);
    const used = new Set<string>();
    for (const file of files) {
      const flow: FlowNode[] = JSON.parse(fs.readFileSync(path.join(EXAMPLES, file), 'utf8'));
      flow[0].type.should.equal('comment', `${file} starts with a comment`);
      flow[0].info.should.match(/Change:|Enter|change/);
      // Other modules' nodes only with a global-config naming the module, so that Node-RED offers to install it.
      const modules = Object.keys(flow.find((node) => node.type === 'global-config')?.modules ?? {});
      for (const node of flow) {
        used.add(node.type);
        const known = node.type.startsWith('localbattery-') || CORE_TYPES.includes(node.type) || node.type === 'global-config';
        (known || modules.includes(moduleOfType(node.type))).should.be.true(`${file}: ${node.type}`);
        should.not.exist(node.credentials);
      }
      JSON.stringify(flow).should.not.match(/password"\s*:\s*"[^"]/);
    }
    for (const type of [
      'localbattery-discover',
      'localbattery-read',
      'localbattery-write',
      'localbattery-control',
      'localbattery-info',
      'localbattery-password',
      'localbattery-zero-feed-in',
    ]) {
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
    Object.keys(msg.payload)
      .sort()
      .should.eql([...reader.points].sort());
    msg.payload.batteryState.should.have.properties(['value', 'label']);
    msg.payload.batterySoc.should.be.within(0, 100);
    msg.units.batterySoc.should.equal('%');
    await perPoint;
    topics.sort().should.eql(['batteryPower', 'batterySoc', 'meterPower', 'pvPower'].map((name) => `home/battery/${name}`));
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

  it('Settings: writes grid charging, feed-in limit and backup SOC, hands control back, and reads them back', async () => {
    simulator = await startSimulator({ workingMode: 4 });
    const { flow, credentials } = prepared('Settings', simulator);
    await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
    const writeResult = idOf(flow, (n) => n.type === 'helper' && n.name === 'write result');
    const settings = idOf(flow, (n) => n.type === 'helper' && n.name === 'settings');
    const written: FlowNode[] = [];
    helper.getNode(writeResult).on('input', (msg: FlowNode) => written.push(msg));
    for (const inject of flow.filter((n) => n.type === 'inject' && n.name !== 'read back')) helper.getNode(inject.id).receive({});
    await until(() => written.length === 4, 15000, 'four write results');
    written.forEach((msg) => msg.payload.should.eql({ result: true }));
    simulator.workingMode.should.equal(1);

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

  describe('imported as they are, inert', function () {
    const files = fs.readdirSync(EXAMPLES).filter((file) => file.endsWith('.json'));

    it('disable every node that writes to the device, and the comment names each one and how to arm it', () => {
      for (const file of files) {
        const flow: FlowNode[] = JSON.parse(fs.readFileSync(path.join(EXAMPLES, file), 'utf8'));
        const writers = flow.filter((node) => WRITER_TYPES.includes(node.type));
        for (const node of writers) {
          should(node.d).equal(true, `${file}: ${node.type} ${node.name} is imported disabled`);
          flow[0].info.should.containEql(`'${node.name}'`, `${file}: the comment names '${node.name}'`);
        }
        if (writers.length > 0) flow[0].info.should.match(/enable node[\s\S]*deploy/);
        // Control (real-time or a changed working mode) can be handed back: a write of working mode 1.
        if (writers.some((node) => CONTROL_TYPES.includes(node.type) || node.point === 'workingModeSetting')) {
          flow
            .some((node) => node.point === 'workingModeSetting' && node.type === 'localbattery-write')
            .should.be.true(`${file} hands control back`);
          flow[0].info.should.match(/hand(s)? control back/);
        }
      }
    });

    // The Dashboard and Home Assistant examples need the dashboard's widgets or a broker: their own tests below
    // check them inert as imported, with the widgets replaced and against a broker.
    for (const file of files.filter((name) => !NEEDS_MORE.includes(name))) {
      const name = file.replace(/\.json$/, '');
      it(`${name}: nothing reaches the device that changes it, even with every inject clicked`, async function () {
        simulator = await startSimulator({ udpPort: 0 });
        const { flow, credentials } = prepared(name, simulator, PASSWORD, false);
        for (const node of flow) if (node.type === 'localbattery-password') credentials[node.id] = { password: 'my-new-pass' };
        await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
        // Every click, and each polling read node's first poll, as far as they go.
        const injects = flow.filter((node) => node.type === 'inject').map((node) => node.id);
        const pollers = flow
          .filter((node) => node.type === 'localbattery-read' && Number(node.interval) > 0 && !node.d)
          .map((node) => node.id);
        await settle([...injects, ...pollers], () => {
          for (const id of injects) helper.getNode(id).receive({});
        });
        const stats = simulator.stats;
        const writes = Object.entries(stats.byOperation).filter(([operation]) => isWriteOperation(operation));
        writes.should.eql([], `${name}: requests that change the device before arming`);
        // The rest of the flow did run: what reads, reads.
        if (flow.some((node) => ['localbattery-read', 'localbattery-info', 'localbattery-discover'].includes(node.type))) {
          (stats.requests + stats.udpQueries).should.be.above(0, `${name}: its reading nodes asked the device`);
        }
        simulator.password.should.equal(PASSWORD);
      });
    }
  });
});

describe('Zero feed-in example', function () {
  this.timeout(40000);
  const NAME = 'Zero feed-in';
  let simulator: DeviceSimulator;
  let broker: TestBroker;
  let feeding: NodeJS.Timeout | undefined;

  afterEach(async () => {
    clearInterval(feeding);
    await helper.unload();
    await broker?.stop();
    await simulator?.stop();
  });

  /** The example against the test's broker; the meter's topic gets the simulator's grid power as a Shelly Pro 3EM sends it. */
  async function run(armed: boolean | string[], startMode = 5) {
    // Mode 5 leaves the battery idle, so the meter starts with the whole house load.
    simulator = await startSimulator({ workingMode: startMode });
    broker = await startBroker();
    const { flow, credentials } = prepared(NAME, simulator, PASSWORD, armed);
    for (const node of flow) if (node.type === 'mqtt-broker') Object.assign(node, { broker: '127.0.0.1', port: broker.port });
    await helper.load([...OUR_NODES, ...CORE_NODES, MQTT_NODES], flow, credentials);
    const topic = flow.find((n) => n.type === 'mqtt in')!.topic as string;
    await until(() => broker.subscriptions.includes(topic), 10000, 'the meter subscription');
    feeding = setInterval(() => void broker.publish(topic, JSON.stringify({ id: 0, total_act_power: simulator.meterPower + 0.4 })), 500);
    return flow;
  }

  it('imported as it is: nothing reaches the device that changes it, with meter readings coming and every inject clicked', async () => {
    const flow = await run(false);
    for (const inject of flow.filter((node) => node.type === 'inject')) helper.getNode(inject.id).receive({});
    await new Promise((resolve) => setTimeout(resolve, 3000));
    Object.keys(simulator.stats.byOperation).filter(isWriteOperation).should.eql([]);
  });

  it('armed with the MQTT meter: brings the meter to about 0 W; loop off hands control back, loop on steers again', async () => {
    const flow = await run(['zero feed-in', 'self-consumption mode']);
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower) <= 50, 25000, 'meter power near 0 W');
    helper.getNode(idOf(flow, (n) => n.name === 'loop off')).receive({});
    await until(() => simulator.workingMode === 1, 10000, 'working mode 1');
    helper.getNode(idOf(flow, (n) => n.name === 'loop on')).receive({});
    await until(() => simulator.workingMode === 4, 10000, 'real-time control again');
    simulator.stats.violations.should.be.empty();
  });

  it("armed with the device's own meter: brings the meter to about 0 W", async () => {
    await run(['zero feed-in (device meter)']);
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower) <= 50, 25000, 'meter power near 0 W');
    simulator.stats.violations.should.be.empty();
  });

  it('the loop on and off injects reach both variants (the MQTT meter and the device meter)', () => {
    const flow = example(NAME);
    const variants = flow.filter((n) => n.type === 'localbattery-zero-feed-in').map((n) => n.id);
    should(variants).have.length(2);
    for (const name of ['loop on', 'loop off']) {
      const inject = flow.find((n) => n.name === name)!;
      should((inject.wires as string[][]).flat().sort()).eql([...variants].sort());
    }
  });

  it('hands control back (working mode 1) by hand with the loop disabled, as the comment says', async () => {
    const flow = await run(['self-consumption mode'], 4);
    const sent = nextMessage(idOf(flow, (n) => n.type === 'helper'));
    helper.getNode(idOf(flow, (n) => n.name === 'hand control back')).receive({});
    (await sent).payload.should.eql({ result: true });
    simulator.workingMode.should.equal(1);
  });
});

describe('Home Assistant (MQTT discovery) example', function () {
  this.timeout(60000);
  const NAME = 'Home Assistant (MQTT discovery)';
  const NODE_RED_STATUS = 'localbattery/node-red/status';
  let simulator: DeviceSimulator;
  let broker: TestBroker;

  afterEach(async () => {
    await helper.unload();
    await broker?.stop();
    await simulator?.stop();
  });

  /** The last message on `topic`. */
  const lastOn = (topic: string) => broker.published.filter((p) => p.topic === topic).at(-1);

  /** The select's writers: armed without zero feed-in, which would overrule them. */
  const SELECT_WRITERS = ['battery setpoint', 'working mode'];

  /** The example against the simulator and the test's broker; `armed` enables the nodes that write (or those named). */
  async function run(armed: boolean | string[], simulatorOptions: Parameters<typeof startSimulator>[0] = {}) {
    simulator = await startSimulator(simulatorOptions);
    broker = await startBroker();
    const { flow, credentials } = prepared(NAME, simulator, PASSWORD, armed);
    for (const node of flow) {
      if (node.type === 'mqtt-broker') Object.assign(node, { broker: '127.0.0.1', port: broker.port });
      // Every 2 s instead of 10 s: a shorter test.
      if (node.type === 'localbattery-read') node.interval = 2;
    }
    await helper.load([...OUR_NODES, ...CORE_NODES, MQTT_NODES], flow, credentials);
    const reader = flow.find((n) => n.type === 'localbattery-read')!;
    const serial = String(simulator.value(0));
    const configs = () => broker.published.filter((p) => p.topic.startsWith('homeassistant/') && p.topic.endsWith('/config'));
    await until(() => configs().length >= reader.points.length + 3, 20000, 'discovery configs');
    await until(() => broker.subscriptions.includes('localbattery/+/control/set'), 10000, 'the control subscription');
    await until(() => broker.subscriptions.includes('localbattery/+/zero_feed_in/#'), 10000, 'the zero feed-in subscription');
    return { flow, reader, serial, configs };
  }

  it('announces one device with a sensor per point, valid for Home Assistant, and publishes their states', async () => {
    const { reader, serial, configs } = await run(false);
    const nodeId = `localbattery_${serial}`;
    const announced = configs();
    announced.length.should.equal(reader.points.length + 3, 'one config per point, the control select, the zero feed-in switch and number');
    const components = new Set<string>();
    const uniqueIds = new Set<string>();
    const sensors = new Map<string, FlowNode>();
    for (const { topic, payload, retain } of announced) {
      retain.should.be.true(`${topic} is retained`);
      const match = DISCOVERY_TOPIC.exec(topic);
      should.exist(match, `${topic} has the discovery form`);
      const [, prefix, component, node, object] = match!;
      prefix.should.equal('homeassistant');
      node.should.equal(nodeId);
      const config = JSON.parse(payload);
      config.should.have.properties(['name', 'unique_id', 'device', 'origin']);
      config.unique_id.should.equal(`${nodeId}_${object}`);
      uniqueIds.has(config.unique_id).should.be.false(`${config.unique_id} is unique`);
      uniqueIds.add(config.unique_id);
      // One device, known by the serial number and model from the device info.
      config.device.should.eql({
        identifiers: [nodeId],
        name: 'Home battery',
        model: 'SIM-5120',
        serial_number: serial,
        sw_version: config.device.sw_version,
      });
      config.device.sw_version.should.be.a.String().and.not.be.empty();
      config.origin.name.should.be.a.String();
      // Unavailable unless Node-RED (the broker configuration's birth and will) and the device both say online.
      config.availability.should.eql([{ topic: NODE_RED_STATUS }, { topic: `localbattery/${serial}/availability` }]);
      config.availability_mode.should.equal('all');
      if (component === 'sensor') {
        config.state_topic.should.equal(`localbattery/${serial}/state`);
        config.value_template.should.equal(`{{ value_json.${object} }}`);
        config.name.should.equal(pointByName(object)!.label);
        checkSensorSemantics(object, config);
        sensors.set(object, config);
      } else if (component === 'switch') {
        object.should.equal('zero_feed_in');
        checkSwitchConfig(object, config);
        config.should.have.properties({
          name: 'Zero feed-in',
          command_topic: `localbattery/${serial}/zero_feed_in/set`,
          state_topic: `localbattery/${serial}/zero_feed_in/state`,
          payload_on: 'ON',
          payload_off: 'OFF',
        });
      } else if (component === 'number') {
        object.should.equal('zero_feed_in_target');
        checkNumberConfig(object, config);
        // The node's range for msg.target.
        config.should.have.properties({
          command_topic: `localbattery/${serial}/zero_feed_in/target/set`,
          state_topic: `localbattery/${serial}/zero_feed_in/target/state`,
          min: ZERO_FEED_IN_RULES.target.min,
          max: ZERO_FEED_IN_RULES.target.max,
          unit_of_measurement: ZERO_FEED_IN_RULES.target.unit,
          device_class: 'power',
        });
        config.step.should.be.above(0);
      } else {
        component.should.equal('select');
        config.command_topic.should.equal(`localbattery/${serial}/control/set`);
        config.options.should.eql(['Charge', 'Discharge', 'Standby', 'Self-consumption']);
      }
      components.add(component);
    }
    [...components].sort().should.eql(['number', 'select', 'sensor', 'switch']);
    // The switch and the number have their state from the start: on, at the node's Target setting.
    const zeroNode = example(NAME).find((n) => n.type === 'localbattery-zero-feed-in')!;
    lastOn(`localbattery/${serial}/zero_feed_in/state`)!.should.eql({
      topic: `localbattery/${serial}/zero_feed_in/state`,
      payload: 'ON',
      retain: true,
    });
    lastOn(`localbattery/${serial}/zero_feed_in/target/state`)!.payload.should.equal(String(zeroNode.target));
    [...sensors.keys()].sort().should.eql([...reader.points].sort());
    sensors.get('batterySoc')!.should.have.properties({ device_class: 'battery', state_class: 'measurement', unit_of_measurement: '%' });
    sensors.get('batteryPower')!.should.have.properties({ device_class: 'power', state_class: 'measurement', unit_of_measurement: 'W' });
    sensors
      .get('batteryChargeEnergyTotal')!
      .should.have.properties({ device_class: 'energy', state_class: 'total_increasing', unit_of_measurement: 'kWh' });
    sensors.get('workingMode')!.should.have.properties({ device_class: 'enum' });

    // States: one JSON object per poll with every point the templates name; enum states among the options.
    const stateOf = () => broker.published.filter((p) => p.topic === `localbattery/${serial}/state`);
    await until(() => stateOf().length >= 1, 10000, 'a state message');
    const state = JSON.parse(stateOf()[0].payload);
    Object.keys(state)
      .sort()
      .should.eql([...reader.points].sort());
    state.batterySoc.should.be.within(simulator.soc - 1, simulator.soc + 1);
    state.batteryPower.should.be.a.Number();
    for (const [name, config] of sensors) {
      if (config.device_class === 'enum') config.options.should.containEql(state[name]);
      else should(typeof state[name]).equal('number', name);
    }

    // Home Assistant restarting asks for the configs again.
    const before = configs().length;
    await broker.publish('homeassistant/status', 'online');
    await until(() => configs().length >= before * 2, 10000, 'discovery again after homeassistant/status online');
    simulator.stats.violations.should.be.empty();
  });

  /** What Home Assistant concludes from the retained availability topics: available only when all say online. */
  function available(topics: string[]): boolean {
    return topics.every((topic) => broker.published.filter((p) => p.topic === topic).at(-1)?.payload === 'online');
  }

  it('makes the entities unavailable during a device outage, and available when the device is back', async () => {
    const { serial, configs } = await run(false);
    const topics = JSON.parse(configs()[0].payload).availability.map((a: { topic: string }) => a.topic) as string[];
    const deviceTopic = `localbattery/${serial}/availability`;
    await until(() => available(topics), 10000, 'available after the first reading');
    lastOn(deviceTopic)!.retain.should.be.true();
    lastOn(NODE_RED_STATUS)!.retain.should.be.true();

    simulator.setFault('offline');
    await until(() => lastOn(deviceTopic)?.payload === 'offline', 15000, 'offline after the read node reports the outage');
    available(topics).should.be.false();
    lastOn(deviceTopic)!.retain.should.be.true();

    simulator.setFault(null);
    await until(() => available(topics), 20000, 'available again with the next reading');
  });

  it('makes the entities unavailable when the flow stops, and when Node-RED goes without a word (will)', async () => {
    const { serial } = await run(false);
    const topics = [NODE_RED_STATUS, `localbattery/${serial}/availability`];
    await until(() => available(topics), 10000, 'available');
    // Connection lost without DISCONNECT: the broker publishes Node-RED's will; on reconnecting, its birth.
    const before = broker.published.length;
    broker.dropClients();
    await until(
      () => broker.published.slice(before).some((p) => p.topic === NODE_RED_STATUS && p.payload === 'offline'),
      10000,
      'the will',
    );
    const will = broker.published.slice(before).find((p) => p.topic === NODE_RED_STATUS)!;
    will.should.eql({ topic: NODE_RED_STATUS, payload: 'offline', retain: true });
    await until(() => available(topics), 20000, 'the birth message after reconnecting');
    // Flow stopped: the close message.
    await helper.unload();
    await until(() => lastOn(NODE_RED_STATUS)?.payload === 'offline', 10000, 'the close message');
    available(topics).should.be.false();
  });

  it("takes the serial from point 0 when the device answers the maker's empty sn: no empty topic level, Control works", async () => {
    const { serial, configs } = await run(SELECT_WRITERS, { blankIdentity: true });
    serial.should.not.be.empty();
    for (const { topic } of configs()) topic.should.containEql(`/localbattery_${serial}/`);
    broker.published.some((p) => p.topic.includes('//') || p.topic.includes('localbattery_/')).should.be.false();
    await until(() => broker.published.some((p) => p.topic === `localbattery/${serial}/state`), 10000, 'a state');
    await broker.publish(`localbattery/${serial}/control/set`, 'Charge');
    await until(() => simulator.workingMode === 4 && simulator.controlState === 1, 15000, 'the simulator charging');
    await broker.publish(`localbattery/${serial}/control/set`, 'Self-consumption');
    await until(() => simulator.workingMode === 1, 15000, 'working mode 1 again');
  });

  it('does not touch the battery until armed', async () => {
    const { flow, serial } = await run(false);
    const startMode = simulator.workingMode;
    const commands = flow.filter((node) => node.type === 'mqtt in' && /control\/set$/.test(node.topic)).map((node) => node.id);
    should(commands).have.length(1);
    await settle(commands, () => broker.publish(`localbattery/${serial}/control/set`, 'Charge'));
    // The zero feed-in switch and number reach a disabled node: nothing.
    const zero = flow.filter((node) => node.type === 'mqtt in' && /zero_feed_in/.test(node.topic)).map((node) => node.id);
    should(zero).have.length(1);
    await settle(zero, () => broker.publish(`localbattery/${serial}/zero_feed_in/set`, 'ON'));
    await settle(zero, () => broker.publish(`localbattery/${serial}/zero_feed_in/target/set`, '300'));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    simulator.workingMode.should.equal(startMode);
    (simulator.stats.byOperation['Vendor.SetData'] ?? 0).should.equal(0);
  });

  it('once armed, takes Charge and Self-consumption from the Home Assistant select', async () => {
    const { serial } = await run(SELECT_WRITERS);
    await broker.publish(`localbattery/${serial}/control/set`, 'Charge');
    await until(() => simulator.workingMode === 4 && simulator.controlState === 1, 15000, 'the simulator charging');
    simulator.control.should.containEql({ state: 1, power: 800, soc: 100 });
    await until(() => simulator.batteryPower < 0, 10000, 'negative battery power (charging)');
    await broker.publish(`localbattery/${serial}/control/set`, 'Self-consumption');
    await until(() => simulator.workingMode === 1, 15000, 'working mode 1 again');
    simulator.stats.violations.should.be.empty();
  });

  it('once zero feed-in is armed: holds the grid at 0 W, the number moves the target, the switch OFF hands back, ON steers again', async () => {
    const { serial } = await run(['zero feed-in']);
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower) <= 50, 25000, 'meter power near 0 W');
    // A new target from Home Assistant's number: exporting 100 W (reachable without grid charging).
    await broker.publish(`localbattery/${serial}/zero_feed_in/target/set`, '-100');
    await until(() => Math.abs(simulator.meterPower + 100) <= 50, 20000, 'meter power near -100 W');
    lastOn(`localbattery/${serial}/zero_feed_in/target/state`)!.should.eql({
      topic: `localbattery/${serial}/zero_feed_in/target/state`,
      payload: '-100',
      retain: true,
    });
    // Out of the number's range: refused before the node, nothing changes.
    await broker.publish(`localbattery/${serial}/zero_feed_in/target/set`, '20000');
    await new Promise((resolve) => setTimeout(resolve, 500));
    lastOn(`localbattery/${serial}/zero_feed_in/target/state`)!.payload.should.equal('-100');
    // The switch OFF hands control back to the battery (the node's On stop: working mode 1).
    await broker.publish(`localbattery/${serial}/zero_feed_in/set`, 'OFF');
    await until(() => simulator.workingMode === 1, 15000, 'working mode 1');
    await until(() => lastOn(`localbattery/${serial}/zero_feed_in/state`)?.payload === 'OFF', 5000, 'the switch state OFF');
    await broker.publish(`localbattery/${serial}/zero_feed_in/set`, 'ON');
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower + 100) <= 50, 20000, 'steering to -100 W again');
    lastOn(`localbattery/${serial}/zero_feed_in/state`)!.payload.should.equal('ON');
    simulator.stats.violations.should.be.empty();
  });
});

describe('Dashboard example', function () {
  this.timeout(40000);
  let simulator: DeviceSimulator;
  let loaded: FlowNode[] = [];
  const flowOf = () => loaded;

  afterEach(async () => {
    await helper.unload();
    await simulator?.stop();
  });

  /**
   * The example with each dashboard widget replaced by a helper node (same id and wires, named "type: label"), so
   * the test sees what a widget would show and sends what it would send; the dashboard's config nodes go. `armed`
   * enables the nodes that write. The real dashboard runs in test/dashboard.test.ts.
   */
  async function run(armed: boolean | string[]) {
    simulator = await startSimulator();
    const { flow, credentials } = prepared('Dashboard', simulator, PASSWORD, armed);
    const nodes = flow
      .filter((node) => node.type !== 'global-config' && !['ui-base', 'ui-theme', 'ui-page', 'ui-group'].includes(node.type))
      .map((node): FlowNode => {
        if (!node.type.startsWith('ui-')) return node;
        return { id: node.id, z: 'tab', type: 'helper', name: `${node.type}: ${node.label ?? node.title}`, wires: node.wires ?? [] };
      });
    await helper.load([...OUR_NODES, ...CORE_NODES], nodes, credentials);
    loaded = nodes;
    return (name: string) => helper.getNode(idOf(nodes, (n) => n.type === 'helper' && n.name === name));
  }

  const first = (widget: { once: (event: string, listener: (msg: FlowNode) => void) => void }) =>
    new Promise<FlowNode>((resolve) => widget.once('input', resolve));

  it('shows the live points, the energy of today and the settings in its widgets; its controls are inert as imported', async () => {
    const widget = await run(false);
    // The first polls come 100 ms after deploy: listening now is in time.
    const gauge = first(widget('ui-gauge: State of charge'));
    const battery = first(widget('ui-text: Battery'));
    const modeText = first(widget('ui-text: Working mode'));
    const modeControl = first(widget('ui-dropdown: Working mode'));
    const gridCharging = first(widget('ui-switch: Grid charging'));
    const today = first(widget('ui-text: Solar today'));
    const chart: FlowNode[] = [];
    widget('ui-chart: Power (W), last hour').on('input', (msg: FlowNode) => chart.push(msg));

    (await gauge).payload.should.be.within(simulator.soc - 1, simulator.soc + 1);
    (await battery).payload.should.match(/^(charging \d+ W|discharging \d+ W|idle)$/);
    (await modeText).payload.should.equal('Self-consumed Prioritized');
    (await modeControl).payload.should.equal(1);
    (await gridCharging).payload.should.equal(simulator.value(pointByName('gridCharging')!.address) === 1001 ? 1 : 0);
    (await today).payload.should.match(/^\d+\.\d kWh$/);
    await until(() => chart.length >= 4, 10000, 'four chart series');
    chart
      .slice(0, 4)
      .map((msg) => msg.topic)
      .should.eql(['Battery', 'Solar', 'Grid', 'AC output']);
    chart.slice(0, 4).forEach((msg) => should(msg.payload).be.a.Number());

    // Not armed: a press of Charge reaches no device (it went as far as it goes, and nothing was written).
    const charge = widget('ui-button: Charge');
    await settle([charge.id], () => charge.send({ topic: 'state', payload: 'charge' }));
    simulator.workingMode.should.equal(1);
    should(simulator.stats.byOperation['Vendor.SetData'] ?? 0).equal(0);
  });

  it('once armed: Charge at the slider power, a new power while charging, Standby, grid charging, working mode 1', async () => {
    // Zero feed-in stays off: it would overrule the buttons (its own test follows).
    const widget = await run(['battery setpoint', 'working mode', 'grid charging']);
    widget('ui-slider: Power (W)').send({ topic: 'power', payload: 1200 });
    widget('ui-button: Charge').send({ topic: 'state', payload: 'charge' });
    await until(() => simulator.workingMode === 4 && simulator.controlState === 1, 15000, 'the simulator charging');
    simulator.control.should.containEql({ state: 1, power: 1200, soc: 100 });
    widget('ui-slider: Power (W)').send({ topic: 'power', payload: 600 });
    await until(() => simulator.controlPower === 600, 10000, 'the new power applied while charging');
    widget('ui-button: Standby').send({ topic: 'state', payload: 'standby' });
    await until(() => simulator.controlState === 0, 10000, 'standby');

    widget('ui-switch: Grid charging').send({ topic: 'gridCharging', payload: 1 });
    await until(() => simulator.value(pointByName('gridCharging')!.address) === 1001, 10000, 'grid charging on');
    // Handing control back: working mode 1 from the drop-down.
    widget('ui-dropdown: Working mode').send({ topic: 'workingMode', payload: 1 });
    await until(() => simulator.workingMode === 1, 10000, 'working mode 1');
    simulator.stats.violations.should.be.empty();
  });

  it('once armed: the Zero feed-in switch holds the grid at about 0 W from the start; off keeps the last setpoint, on steers again', async () => {
    const widget = await run(['zero feed-in']);
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower) <= 50, 20000, 'meter power near 0 W');
    widget('ui-switch: Zero feed-in').send({ topic: 'enable', payload: false });
    const zero: any = helper.getNode(idOf(flowOf(), (n) => n.name === 'zero feed-in'));
    // Texts are keys here (no en-US catalogue in this test).
    await until(() => lastStatus(zero)?.text?.endsWith('status.off') === true, 5000, 'the loop off');
    const writes = simulator.stats.byOperation['Vendor.SetData'] ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    should(simulator.stats.byOperation['Vendor.SetData'] ?? 0).equal(writes);
    widget('ui-switch: Zero feed-in').send({ topic: 'enable', payload: true });
    await until(() => Math.abs(simulator.meterPower) <= 50, 20000, 'meter power near 0 W again');
    simulator.stats.violations.should.be.empty();
  });
});
