/**
 * Every example in examples/ is imported into Node-RED against the simulator and does what its comment says.
 * Debug nodes are swapped for test-helper nodes (same id) so the test can see what they would show.
 */
import fs from 'node:fs';
import path from 'node:path';
import should from 'should';
import { helper, PASSWORD, startSimulator } from './support';
import type { DeviceSimulator } from '../src/simulator';
import {
  CORE_NODES,
  CORE_TYPES,
  OUR_NODES,
  EXAMPLES,
  moduleOfType,
  type FlowNode,
  WRITER_TYPES,
  CONTROL_TYPES,
  isWriteOperation,
  NEEDS_MORE,
  prepared,
  idOf,
  nextMessage,
  until,
  settle,
} from './examples-support';

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
    topics.sort().should.eql(['batteryPower', 'batterySoc', 'gridPower', 'pvPower'].map((name) => `home/battery/${name}`));
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
          // Every device a controller steers (a zero feed-in node's devices 2 to 4 too) can be handed back by hand.
          const steered = writers.flatMap((node) =>
            ['device', 'device2', 'device3', 'device4'].map((field) => node[field]).filter(Boolean),
          );
          for (const device of new Set(steered))
            flow
              .some((node) => node.point === 'workingModeSetting' && node.type === 'localbattery-write' && node.device === device)
              .should.be.true(`${file} hands ${device} back`);
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
