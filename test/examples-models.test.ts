/**
 * The examples on both model classes (the simulator serves each class's points and takes only its writes): the grid
 * power on every model, nothing written beyond a model's limits, and what a class lacks said in the comments.
 */
import type { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import should from 'should';
import { PASSWORD, helper, startSimulator } from './support';
import { startBroker, type TestBroker } from './mqtt-broker';
import type { DeviceSimulator } from '../src/simulator';
import { MODEL_CLASSES, acceptedBy, pointByName, resolveWritePoint, servesPoint, type ModelClass } from '../src/points/catalogue';
import {
  CORE_NODES,
  EXAMPLES,
  MQTT_NODES,
  OUR_NODES,
  type FlowNode,
  example,
  idOf,
  nextMessage,
  prepared,
  until,
} from './examples-support';

const MODELS = Object.keys(MODEL_CLASSES) as ModelClass[];
const FILES = fs.readdirSync(EXAMPLES).filter((file) => file.endsWith('.json'));
const GRID_CHARGING = pointByName('gridCharging')!.address;

/** The texts of an example's comment nodes, together. */
const commentsOf = (flow: FlowNode[]) =>
  flow
    .filter((node) => node.type === 'comment')
    .map((node) => `${node.name}\n${node.info}`)
    .join('\n');

/** Runs `act` with the server's local time zone `hours` east of UTC (Etc/GMT names have the sign reversed). */
async function inTimeZone(hours: number, act: () => Promise<void>): Promise<void> {
  const before = process.env.TZ;
  process.env.TZ = `Etc/GMT${hours > 0 ? '-' : '+'}${Math.abs(hours)}`;
  try {
    await act();
  } finally {
    if (before === undefined) delete process.env.TZ;
    else process.env.TZ = before;
  }
}

/** The offset from UTC (-12 to +14 h) at which the local hour is `hour` now. */
function offsetForLocalHour(hour: number): number {
  const offset = hour - new Date().getUTCHours();
  return offset < -12 ? offset + 24 : offset > 14 ? offset - 24 : offset;
}

describe('examples on both model classes', function () {
  this.timeout(40000);
  let simulator: DeviceSimulator | undefined;
  let broker: TestBroker | undefined;

  afterEach(async () => {
    await helper.unload();
    await broker?.stop();
    await simulator?.stop();
    simulator = broker = undefined;
  });

  it("every read node's point that a class lacks is named in the example's comments, with the class", () => {
    for (const file of FILES) {
      const flow: FlowNode[] = JSON.parse(fs.readFileSync(path.join(EXAMPLES, file), 'utf8'));
      const comments = commentsOf(flow);
      for (const reader of flow.filter((node) => node.type === 'localbattery-read'))
        for (const point of reader.points as string[])
          for (const model of MODELS.filter((m) => !servesPoint(m, point))) {
            const address = String(pointByName(point)?.address);
            comments.includes(`${model} class`).should.be.true(`${file}: the comment names the ${model} class, which lacks ${point}`);
            (comments.includes(point) || comments.includes(address)).should.be.true(`${file}: the comment names ${point} (${address})`);
          }
    }
  });

  it("every power an example commands is within both classes' limits, or clamped to the device's", () => {
    const smallest = Math.min(...MODELS.flatMap((m) => [MODEL_CLASSES[m].maxChargePower, MODEL_CLASSES[m].maxDischargePower]));
    const smallestCharge = Math.min(...MODELS.map((m) => MODEL_CLASSES[m].maxChargePower));
    for (const file of FILES) {
      for (const node of JSON.parse(fs.readFileSync(path.join(EXAMPLES, file), 'utf8')) as FlowNode[]) {
        // A control node's own power serves charge and discharge alike, unless it clamps to the device's limits.
        if (node.type === 'localbattery-control' && !node.clamp)
          Number(node.power).should.be.belowOrEqual(smallest, `${file}: ${node.name}`);
        if (node.type === 'localbattery-zero-feed-in' && node.chargeModePower)
          Number(node.chargeModePower).should.be.belowOrEqual(smallestCharge, `${file}: ${node.name}'s charge mode power`);
        if (node.type === 'inject' && /"power"/.test(node.payload ?? ''))
          Number(JSON.parse(node.payload).power).should.be.belowOrEqual(smallest, `${file}: ${node.name}`);
      }
    }
  });

  for (const model of MODELS) {
    describe(`against the ${model} class (${MODEL_CLASSES[model].label})`, () => {
      it('Monitoring: the overview and the per-point topics carry the grid power', async () => {
        simulator = await startSimulator({ model });
        const { flow, credentials } = prepared('Monitoring', simulator);
        await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
        const overview = nextMessage(idOf(flow, (n) => n.type === 'helper' && n.name === 'overview'));
        const topics: string[] = [];
        helper
          .getNode(idOf(flow, (n) => n.type === 'helper' && n.name === 'to MQTT out'))
          .on('input', (msg: FlowNode) => topics.push(msg.topic));
        const msg = await overview;
        should(msg.payload.gridPower).be.a.Number();
        msg.units.gridPower.should.equal('W');
        const reader = flow.find((n) => n.name === 'Battery overview')!;
        Object.keys(msg.payload)
          .sort()
          .should.eql((reader.points as string[]).filter((point) => servesPoint(model, point)).sort());
        msg.missing.should.eql((reader.points as string[]).filter((point) => !servesPoint(model, point)));
        await until(() => topics.includes('home/battery/gridPower'), 10000, 'the grid power topic');
      });

      it("Cheap-hours charging: charges within the model's charge limit, ends at 05:00, and hands back at a deploy after a missed end", async () => {
        simulator = await startSimulator({ model });
        const sim = simulator;
        const { flow, credentials } = prepared('Cheap-hours charging', sim);
        const results: FlowNode[] = [];
        // Deployed inside the cheap hours: the deploy check leaves the device alone.
        await inTimeZone(offsetForLocalHour(3), async () => {
          await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
          helper.getNode(idOf(flow, (n) => n.type === 'helper')).on('input', (msg: FlowNode) => results.push(msg));
          const takesGridCharging = acceptedBy(resolveWritePoint('gridChargingSetting'), model);
          const writes = takesGridCharging ? 2 : 1;
          helper.getNode(idOf(flow, (n) => n.type === 'inject' && /start/.test(n.name))).receive({});
          await until(() => results.length === writes, 15000, 'the start writes');
          sim.workingMode.should.equal(4);
          sim.control.should.containEql({ state: 1, power: Math.min(1500, MODEL_CLASSES[model].maxChargePower), soc: 90 });
          if (takesGridCharging) should(sim.value(GRID_CHARGING)).equal(1001);

          helper.getNode(idOf(flow, (n) => n.type === 'inject' && /05:00/.test(n.name))).receive({});
          await until(() => results.length === 2 * writes, 10000, 'the end writes');
          sim.workingMode.should.equal(1);
          if (takesGridCharging) should(sim.value(GRID_CHARGING)).equal(1000);
        });
        // The end was missed: in real-time control at a deploy outside the cheap hours, it hands back.
        sim.setData(47005, [4]).should.be.true();
        await inTimeZone(offsetForLocalHour(12), async () => {
          helper.getNode(idOf(flow, (n) => n.type === 'inject' && /deploy/.test(n.name))).receive({});
          await until(() => sim.workingMode === 1, 10000, 'the hand-back at deploy');
        });
        sim.stats.refusedWrites.should.eql([]);
        sim.stats.violations.should.be.empty();
      });

      it("Zero feed-in (the device's meter), its device configuration's limits left empty: covers a 1500 W load within the model's own discharge limit, nothing refused", async () => {
        simulator = await startSimulator({ model, workingMode: 5, house: { baseLoadW: 1500, noiseW: 0, pvW: 0 } });
        const sim = simulator;
        broker = await startBroker();
        const { flow, credentials } = prepared('Zero feed-in', sim, PASSWORD, ['zero feed-in (device meter)']);
        for (const node of flow) if (node.type === 'mqtt-broker') Object.assign(node, { broker: '127.0.0.1', port: broker.port });
        await helper.load([...OUR_NODES, ...CORE_NODES, MQTT_NODES], flow, credentials);
        const limit = Math.min(1500, MODEL_CLASSES[model].maxDischargePower);
        await until(
          () => sim.workingMode === 4 && sim.control.state === 2 && Math.abs(sim.control.power - limit) <= 60,
          30000,
          `discharging about ${limit} W`,
        );
        const seen = sim.stats.requests;
        await until(() => sim.stats.requests >= seen + 5, 15000, 'five more requests');
        sim.control.power.should.be.belowOrEqual(MODEL_CLASSES[model].maxDischargePower);
        sim.stats.refusedWrites.should.eql([]);
        sim.stats.violations.should.be.empty();
      });

      it('Settings: a setting the model refuses is reported as such, naming the classes that take it', async () => {
        simulator = await startSimulator({ model, workingMode: 4 });
        const sim = simulator;
        const { flow, credentials } = prepared('Settings', sim);
        await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
        const writers = flow.filter((n) => n.type === 'localbattery-write' && n.point !== 'workingModeSetting');
        const written = helper.getNode(idOf(flow, (n) => n.type === 'helper' && n.name === 'write result'));
        const outcomes = writers.map(
          (writer) =>
            new Promise<string>((resolve) => {
              (helper.getNode(writer.id) as unknown as EventEmitter).on('call:error', (call: { args: unknown[] }) =>
                resolve(String(call.args[0])),
              );
              written.on('input', (msg: FlowNode) => msg.point === writer.point && resolve('written'));
            }),
        );
        for (const writer of writers) helper.getNode(idOf(flow, (n) => n.type === 'inject' && n.wires[0].includes(writer.id))).receive({});
        const said = await Promise.all(outcomes);
        writers.forEach((writer, i) => {
          if (acceptedBy(resolveWritePoint(writer.point), model)) said[i].should.equal('written');
          else said[i].should.match(/refused[\s\S]*only the 2000 class/);
        });
        // The comment says which class takes them.
        commentsOf(example('Settings'))
          .should.match(/only the 2000 class/)
          .and.match(/1600 class/);
      });
    });
  }
});
