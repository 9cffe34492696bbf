/** The Several batteries example in Node-RED: two simulated units in one house and a test MQTT broker (see examples.test.ts). */
import should from 'should';
import { SharedHouse, type DeviceSimulator } from '../src/simulator';
import { PASSWORD, helper, startUnits } from './support';
import { held } from './setpoint';
import { startBroker, type TestBroker } from './mqtt-broker';
import { CORE_NODES, MQTT_NODES, OUR_NODES, example, isWriteOperation, prepared, idOf, until } from './examples-support';

describe('Several batteries example', function () {
  this.timeout(40000);
  const NAME = 'Several batteries';
  let sims: DeviceSimulator[] = [];
  let broker: TestBroker;
  let feeding: NodeJS.Timeout | undefined;
  const HOOK = 'severalBatteriesTest';
  const hooks = (helper as any)._RED.hooks as { add(name: string, hook: (event: any) => void): void; remove(name: string): void };

  afterEach(async () => {
    hooks.remove(`*.${HOOK}`);
    clearInterval(feeding);
    await helper.unload();
    await Promise.all([broker?.stop(), ...sims.splice(0).map((sim) => sim.stop())]);
  });

  /** Both units idle (mode 5) in one house of 400 W; the meter's topic gets its grid power as a Shelly Pro 3EM sends it. */
  async function run(armed: boolean | string[]) {
    const house = new SharedHouse({ house: { baseLoadW: 400, noiseW: 0 }, timeScale: 1 });
    sims = await startUnits(house, [
      { workingMode: 5, initialSoc: 80 },
      { workingMode: 5, initialSoc: 40 },
    ]);
    broker = await startBroker();
    const { flow, credentials } = prepared(NAME, sims, PASSWORD, armed);
    for (const node of flow) if (node.type === 'mqtt-broker') Object.assign(node, { broker: '127.0.0.1', port: broker.port });
    await helper.load([...OUR_NODES, ...CORE_NODES, MQTT_NODES], flow, credentials);
    const topic = flow.find((n) => n.type === 'mqtt in')!.topic as string;
    await until(() => broker.subscriptions.includes(topic), 10000, 'the meter subscription');
    feeding = setInterval(() => void broker.publish(topic, JSON.stringify({ id: 0, total_act_power: sims[0].meterPower + 0.4 })), 500);
    return flow;
  }

  const writesTo = (sim: DeviceSimulator) => Object.keys(sim.stats.byOperation).filter(isWriteOperation);

  it('has two device configurations and one zero feed-in node on both', () => {
    const flow = example(NAME);
    const devices = flow.filter((n) => n.type === 'localbattery-device').map((n) => n.id);
    should(devices).have.length(2);
    const zeros = flow.filter((n) => n.type === 'localbattery-zero-feed-in');
    should(zeros.map((z) => [z.device, z.device2])).eql([devices]);
  });

  it('imported as it is: nothing reaches either device that changes it, with meter readings coming and every inject clicked', async () => {
    const flow = await run(false);
    const decisions = idOf(flow, (n) => n.type === 'helper');
    let seen = 0;
    helper.getNode(decisions).on('input', () => seen++);
    for (const inject of flow.filter((node) => node.type === 'inject')) helper.getNode(inject.id).receive({});
    // Six meter readings have come to the (disabled) loop. Counted by a runtime hook, not a second 'input' listener:
    // Node-RED 3 calls no further listener once the change node's own has called done() (fixed in Node-RED 4).
    const gridPower = idOf(flow, (n) => n.name === 'grid power');
    let readings = 0;
    hooks.add(`onReceive.${HOOK}`, (event: { destination: { id: string } }) => void (event.destination.id === gridPower && readings++));
    await until(() => readings >= 6, 10000, 'six meter readings');
    should(seen).equal(0);
    for (const sim of sims) writesTo(sim).should.eql([]);
  });

  it('armed: one unit, the fuller, brings the meter to about 0 W; loop off hands both back', async () => {
    const flow = await run(['zero feed-in (two batteries)', 'self-consumption mode (battery 1)', 'self-consumption mode (battery 2)']);
    await until(() => Math.abs(sims[0].meterPower) <= 50 && held(sims[0]) > 0, 25000, 'meter power near 0 W');
    held(sims[1]).should.equal(0);
    helper.getNode(idOf(flow, (n) => n.name === 'loop off')).receive({});
    await until(() => sims.every((sim) => sim.workingMode === 1), 10000, 'working mode 1 on both');
    for (const sim of sims) sim.stats.violations.should.be.empty();
  });
});
