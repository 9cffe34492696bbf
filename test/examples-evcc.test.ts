/**
 * The evcc battery mode example in Node-RED against the simulator and a test MQTT broker (see examples.test.ts):
 * evcc's evcc/site/batteryMode drives the zero feed-in node's modes, and nothing writes before it is armed.
 */
import 'should';
import { helper, PASSWORD, startSimulator } from './support';
import type { DeviceSimulator } from '../src/simulator';
import { startBroker, type TestBroker } from './mqtt-broker';
import {
  CORE_NODES,
  MQTT_NODES,
  OUR_NODES,
  type FlowNode,
  isWriteOperation,
  prepared,
  settle,
  until,
  signedSetpoint,
} from './examples-support';

describe('evcc battery mode example', function () {
  this.timeout(40000);
  let simulator: DeviceSimulator;
  let broker: TestBroker;
  let topic: string;

  afterEach(async () => {
    await helper.unload();
    await broker?.stop();
    await simulator?.stop();
  });

  async function run(armed: boolean | string[]) {
    // Mode 5 leaves the battery idle: the meter shows the house's import, which zero feed-in meets by discharging.
    simulator = await startSimulator({ workingMode: 5, initialSoc: 50 });
    broker = await startBroker();
    const { flow, credentials } = prepared('evcc battery mode', simulator, PASSWORD, armed);
    for (const node of flow) if (node.type === 'mqtt-broker') Object.assign(node, { broker: '127.0.0.1', port: broker.port });
    await helper.load([...OUR_NODES, ...CORE_NODES, MQTT_NODES], flow, credentials);
    topic = flow.find((n) => n.type === 'mqtt in')!.topic as string;
    await until(() => broker.subscriptions.includes(topic), 10000, 'the batteryMode subscription');
    return flow;
  }

  const signed = () => signedSetpoint(simulator);

  it("imported as it is: nothing reaches the device that changes it, with evcc's modes coming and every inject clicked", async () => {
    const flow = await run(false);
    const mapping = flow.find((n) => n.type === 'function')!.id;
    for (const mode of ['charge', 'hold', 'normal']) await settle([mapping], () => broker.publish(topic, mode));
    const injects = flow.filter((node) => node.type === 'inject').map((node) => node.id);
    await settle(injects, () => injects.forEach((id) => helper.getNode(id).receive({})));
    Object.keys(simulator.stats.byOperation).filter(isWriteOperation).should.eql([]);
  });

  it("armed: evcc's charge charges from the grid, hold stands by under an import, normal discharges for zero feed-in", async () => {
    const flow = await run(['zero feed-in']);
    const zero: FlowNode = flow.find((n) => n.type === 'localbattery-zero-feed-in')!;
    await until(() => (signed() ?? 0) > 0, 20000, 'zero feed-in discharging against the import');
    await broker.publish(topic, 'charge');
    await until(() => signed() === -zero.chargeModePower, 10000, 'charging at the charge mode power');
    await broker.publish(topic, 'hold');
    await until(() => signed() === 0, 10000, 'standing by in hold');
    await broker.publish(topic, 'normal');
    await until(() => (signed() ?? 0) > 0, 10000, 'discharging again');
    simulator.stats.violations.should.be.empty();
  });
});
