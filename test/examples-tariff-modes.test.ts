/**
 * The Tariff modes example in Node-RED against the simulator (see examples.test.ts): power-saver's schedules, as its
 * injects send them, turned into battery modes over time and obeyed at the device.
 */
import should from 'should';
import { helper, startSimulator } from './support';
import type { DeviceSimulator } from '../src/simulator';
import { pointByName } from '../src/points/catalogue';
import { CORE_NODES, OUR_NODES, type FlowNode, prepared, idOf, until, signedSetpoint } from './examples-support';

/** The device's minimum interval between requests, as the example's device configuration has it. */
const INTERVAL_MS = 1000;
const GRID_CHARGING = pointByName('gridCharging')!.address;

describe('Tariff modes example', function () {
  this.timeout(60000);
  let simulator: DeviceSimulator;

  afterEach(async () => {
    await helper.unload();
    await simulator?.stop();
  });

  async function run(armed: boolean | string[]) {
    // Mode 5 leaves the battery idle: the meter shows the house's import, which zero feed-in meets by discharging.
    simulator = await startSimulator({ workingMode: 5, initialSoc: 50 });
    const { flow, credentials } = prepared('Tariff modes', simulator, undefined, armed);
    await helper.load([...OUR_NODES, ...CORE_NODES], flow, credentials);
    return flow;
  }

  const signed = () => signedSetpoint(simulator);

  it("its injects send schedules in power-saver's shape that start now in hold, then normal (the peak), charge and hold a minute apart", async () => {
    const flow = await run(false);
    const modes: string[] = [];
    helper.getNode(idOf(flow, (n) => n.type === 'helper' && n.name === 'modes')).on('input', (msg: FlowNode) => modes.push(msg.mode));
    const schedules: FlowNode[] = [];
    const function_ = flow.find((n) => n.type === 'function')!;
    helper.getNode(function_.id).on('input', (msg: FlowNode) => msg.topic && schedules.push(msg));
    for (const inject of flow.filter((n) => n.type === 'inject' && n.topic)) helper.getNode(inject.id).receive({});
    await until(() => schedules.length === 2 && modes.length >= 2, 5000, 'both schedules');
    // Best Save is on now: the battery holds its charge for the peak.
    modes[modes.length - 1].should.equal('hold');
    const now = Date.now();
    const at = (topic: string) => schedules.find((msg) => msg.topic === topic)!.payload.schedule as FlowNode[];
    for (const schedule of [at('best save'), at('lowest price')]) {
      for (const entry of schedule) {
        entry.should.have.properties(['time', 'value', 'countMinutes']);
        should(Date.parse(entry.time)).be.a.Number().and.not.be.NaN();
      }
    }
    // Best Save off (the peak: normal) from the first minute to the second, the lowest price on (charge) in the third.
    const minutesFromNow = (entry: FlowNode) => Math.round((Date.parse(entry.time) - now) / 60000);
    at('best save')
      .map((entry) => [minutesFromNow(entry), entry.value])
      .should.eql([
        [0, true],
        [1, false],
        [2, true],
      ]);
    at('lowest price')
      .map((entry) => [minutesFromNow(entry), entry.value])
      .should.eql([
        [0, false],
        [2, true],
        [3, false],
      ]);
  });

  it('armed: a schedule drives normal (the peak), hold, charge and normal, each at the device within two requests of its time', async () => {
    const flow = await run(['zero feed-in']);
    await until(() => (signed() ?? 0) > 0, 20000, 'zero feed-in discharging against the import');
    simulator.setData(pointByName('gridChargingSetting')!.address, [0]);
    const schedules = flow.find((n) => n.type === 'function')!;
    const zero = flow.find((n) => n.type === 'localbattery-zero-feed-in')!;
    // Within two requests of the mode reaching zero feed-in (the debug node beside it gets the same message): its
    // first request reads (or already writes), its second writes. Counted from that message, not from the slot's time:
    // the schedule's timer may fire after a read already left, which then counts though it answers the old mode (three
    // requests from the slot's time in one CI run under c8). Counted in requests, not ms: a busy host stretches each
    // request's slot.
    const start = Date.now();
    const switched: { mode: string; at: number; requests: number }[] = [];
    helper
      .getNode(idOf(flow, (n) => n.type === 'helper' && n.name === 'modes'))
      .on('input', (msg: FlowNode) => switched.push({ mode: msg.mode, at: Date.now() - start, requests: simulator.stats.requests }));
    // Power-saver's schedules with slots of a few seconds: the peak (Best Save off) now, hold from +3 s (Best Save on),
    // charge from +7 s (the lowest price), the peak again from +11 s.
    const iso = (ms: number) => new Date(start + ms).toISOString();
    const slot = (ms: number, value: boolean, minutes: number | null) => ({ time: iso(ms), value, countMinutes: minutes });
    const send = (topic: string, schedule: FlowNode[]) => helper.getNode(schedules.id).receive({ topic, payload: { schedule } });
    send('best save', [slot(0, false, 1), slot(3000, true, 1), slot(11000, false, null)]);
    send('lowest price', [slot(0, false, 1), slot(7000, true, 1), slot(11000, false, null)]);

    const seen = async (name: string, dueMs: number, check: () => boolean) => {
      await until(check, dueMs + 2 * INTERVAL_MS + 3000 - (Date.now() - start), `${name} at the device`);
      const got = switched.find((event) => event.mode === name && event.at >= dueMs - INTERVAL_MS);
      should.exist(got, `${name} sent to zero feed-in`);
      const requests = simulator.stats.requests - got!.requests;
      should(requests).be.belowOrEqual(
        2,
        `${name}: ${requests} requests after it reached zero feed-in (${Date.now() - start - got!.at} ms)`,
      );
    };
    await seen('hold', 3000, () => signed() === 0);
    await seen('charge', 7000, () => signed() === -zero.chargeModePower);
    simulator.control.soc.should.equal(zero.chargeModeSoc);
    await until(() => simulator.value(GRID_CHARGING) === 1001, 5000, 'grid charging on');
    // Normal: zero feed-in meets the import again (its first move leaves the charge).
    await seen('normal', 11000, () => (signed() ?? -Infinity) > -zero.chargeModePower);
    await until(() => (signed() ?? 0) > 0, 5000, 'discharging again');
    await until(() => simulator.value(GRID_CHARGING) === 1000, 5000, 'grid charging back off');
    simulator.stats.violations.should.be.empty();
  });
});
