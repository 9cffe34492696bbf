/**
 * The discover node against the simulator's UDP responder. Every scan here targets a loopback address: a guard
 * on dgram's send fails the test before anything could go elsewhere (never a broadcast from a test).
 */
import * as dgram from 'node:dgram';
import should from 'should';
import discoverNode = require('../nodes/localbattery-discover');
import type { DeviceSimulator } from '../src/simulator';
import { helper, startSimulator } from './support';
import { inEnglish, lastStatus, nextInput, onlyLoopbackUdp, sleep, statusesOf, text, until } from './node-support';

const IDENTITY = { serialNumber: 'SIMDISC000000007', firmware: 'V1.3.07_R003.001_DISC_00000001' };
const nodes = [inEnglish(discoverNode)];

function flow(settings: Record<string, unknown>) {
  return [
    {
      id: 'disc',
      type: 'localbattery-discover',
      target: '127.0.0.1',
      listenTime: 0.5,
      port: 8099,
      localPort: 0,
      ...settings,
      wires: [['all'], ['each']],
    },
    { id: 'all', type: 'helper' },
    { id: 'each', type: 'helper' },
    { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper' },
  ];
}

/** Collects every msg that `id` receives. */
function received(id: string): any[] {
  const msgs: any[] = [];
  helper.getNode(id).on('input', (msg: unknown) => msgs.push(msg));
  return msgs;
}

function udpHandles(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === 'UDPWrap').length;
}

describe('localbattery-discover node', function () {
  let simulator: DeviceSimulator;
  onlyLoopbackUdp();

  beforeEach(async function () {
    simulator = await startSimulator({ udpPort: 0, ...IDENTITY });
  });

  afterEach(async function () {
    await helper.unload();
    await simulator.stop();
  });

  it('finds the simulator: one msg with the array on output 1, one msg per device on output 2', async function () {
    await helper.load(nodes, flow({ port: simulator.udpPort }));
    const disc = helper.getNode('disc');
    const each = received('each');
    const all = nextInput(helper.getNode('all'));
    disc.receive({ payload: 'scan', topic: 'kept' });
    const msg = await all;

    should(msg.topic).equal('kept');
    should(msg.payload).be.an.Array().and.have.length(1);
    should(msg.payload[0]).have.properties({ ip: '127.0.0.1', sn: IDENTITY.serialNumber, fw: IDENTITY.firmware });
    await until(() => each.length === 1, 1000, 'the per-device msg');
    should(each[0].payload).eql(msg.payload[0]);
    should(each[0].topic).equal('kept');
    should(simulator.stats.udpQueries).equal(1);
    should(statusesOf(disc)).eql([
      { fill: 'blue', shape: 'dot', text: text('localbattery-discover.status.searching') },
      { fill: 'green', shape: 'dot', text: '1 found' },
    ]);
  });

  it('takes msg.target and msg.listenTime over the settings', async function () {
    // The settings point at a loopback address where nothing answers, and would listen for 30 s.
    await helper.load(nodes, flow({ port: simulator.udpPort, target: '127.0.0.2', listenTime: 30 }));
    const all = nextInput(helper.getNode('all'), 5000);
    const started = Date.now();
    helper.getNode('disc').receive({ target: '127.0.0.1', listenTime: 0.5 });
    const msg = await all;
    should(Date.now() - started).be.below(3000);
    should(msg.payload.map((d: { sn: string }) => d.sn)).eql([IDENTITY.serialNumber]);
  });

  it('sends an empty array and nothing per device when no device answers', async function () {
    await helper.load(nodes, flow({ port: simulator.udpPort, target: '127.0.0.2' }));
    const each = received('each');
    const all = nextInput(helper.getNode('all'));
    helper.getNode('disc').receive({});
    should((await all).payload).eql([]);
    await sleep(50);
    should(each).have.length(0);
    should(lastStatus(helper.getNode('disc'))).eql({ fill: 'yellow', shape: 'ring', text: text('localbattery-discover.status.none') });
  });

  it('refuses a second scan while one runs, with error code BUSY', async function () {
    await helper.load(nodes, flow({ port: simulator.udpPort, listenTime: 1 }));
    const disc = helper.getNode('disc');
    const all = received('all');
    const caught = nextInput(helper.getNode('caught'));
    disc.receive({ payload: 1 });
    disc.receive({ payload: 2 });
    const error = await caught;
    should(error.error.code).equal('BUSY');
    should(error.payload).equal(2);
    await until(() => all.length === 1, 3000, 'the first scan');
    should(all[0].payload).have.length(1);
    should(simulator.stats.udpQueries).equal(1);
    // Once the first scan is over, the next one runs.
    disc.receive({ payload: 3 });
    await until(() => all.length === 2, 3000, 'the next scan');
    should(all[1].payload).have.length(1);
  });

  for (const [name, override] of [
    ['msg.listenTime that is not a number', { listenTime: 'soon' }],
    ['msg.listenTime below 0.5 s', { listenTime: 0.1 }],
    ['msg.listenTime above 60 s', { listenTime: 61 }],
    ['msg.target that is not text', { target: 42 }],
    ['msg.method that is not a search', { method: 'dns' }],
  ] as const) {
    it(`rejects ${name} without sending`, async function () {
      await helper.load(nodes, flow({ port: simulator.udpPort }));
      const caught = nextInput(helper.getNode('caught'));
      helper.getNode('disc').receive({ ...override });
      const msg = await caught;
      should(msg.error.code).equal('INVALID_VALUE');
      should(msg.error.message).match(new RegExp(`msg\\.${Object.keys(override)[0]}`));
      should(simulator.stats.udpQueries).equal(0);
      should(lastStatus(helper.getNode('disc'))).eql({ fill: 'red', shape: 'ring', text: 'invalid value' });
    });
  }

  it('takes the search method from the settings and msg.method; with a target it asks over UDP only, and says so', async function () {
    await helper.load(nodes, flow({ port: simulator.udpPort, method: 'udp' }));
    const disc = helper.getNode('disc');
    const all = received('all');
    disc.receive({});
    await until(() => all.length === 1, 3000, 'the udp scan');
    should(all[0].payload.map((d: { sn: string; sources: string[] }) => [d.sn, d.sources])).eql([[IDENTITY.serialNumber, ['udp']]]);
    disc.receive({ method: 'mdns' });
    await until(() => all.length === 2, 3000, 'the mdns scan');
    should(all[1].payload.map((d: { sources: string[] }) => d.sources)).eql([['udp']]);
    const warnings = (disc.warn as unknown as { getCalls(): { thisValue: unknown; args: unknown[] }[] })
      .getCalls()
      .filter((call) => call.thisValue === disc)
      .map((call) => String(call.args[0]));
    should(warnings).eql(['Discovery: mDNS searches the whole network; with a target the scan asks over UDP only']);
  });

  it('shows invalid settings at start and sends nothing on input', async function () {
    await helper.load(nodes, flow({ port: 70000 }));
    const disc = helper.getNode('disc');
    should(lastStatus(disc)).eql({ fill: 'red', shape: 'ring', text: text('localbattery-discover.status.invalid') });
    const caught = nextInput(helper.getNode('caught'));
    disc.receive({});
    should((await caught).error.message).match(/device port/);
    should(simulator.stats.udpQueries).equal(0);
  });

  it('passes socket warnings on (local port taken) and still finds the device', async function () {
    const blocker = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => blocker.bind(0, () => resolve()));
    try {
      await helper.load(nodes, flow({ port: simulator.udpPort, localPort: blocker.address().port }));
      const disc = helper.getNode('disc');
      const all = nextInput(helper.getNode('all'));
      disc.receive({});
      should((await all).payload).have.length(1);
      const warnings = (disc.warn as unknown as { getCalls(): { thisValue: unknown; args: unknown[] }[] })
        .getCalls()
        .filter((call) => call.thisValue === disc)
        .map((call) => String(call.args[0]));
      should(warnings).have.length(1);
      should(warnings[0]).match(new RegExp(`local UDP port ${blocker.address().port} is not available`));
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });

  it('ends a running scan on close: no output, no error, no socket left', async function () {
    const before = udpHandles();
    await helper.load(nodes, flow({ port: simulator.udpPort, listenTime: 30 }));
    const all = received('all');
    const caught = received('caught');
    helper.getNode('disc').receive({});
    await until(() => simulator.stats.udpQueries === 1, 2000, 'the query');
    const started = Date.now();
    await helper.unload();
    should(Date.now() - started).be.below(1000);
    await sleep(50);
    should(all).have.length(0);
    should(caught).have.length(0);
    should(udpHandles()).not.be.above(before);
  });
});
