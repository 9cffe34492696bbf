/** The Zero feed-in example in Node-RED against the simulator and a test MQTT broker (see examples.test.ts). */
import { helper, PASSWORD, startSimulator } from './support';
import type { DeviceSimulator } from '../src/simulator';
import { startBroker, type TestBroker } from './mqtt-broker';
import should from 'should';
import { CORE_NODES, MQTT_NODES, OUR_NODES, example, isWriteOperation, prepared, idOf, nextMessage, until } from './examples-support';

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
