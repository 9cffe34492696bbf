/**
 * The mapping functions of the Tariff modes and evcc battery mode examples in Node-RED, fed what power-saver and evcc
 * send: the price peak (Best Save off) discharges, Best Save on holds, the cheapest hours (Lowest Price on) charge,
 * evcc's mode passes through, and the mode in force goes out again after a redeploy without a new message.
 */
import 'should';
import { helper, redeploy } from './support';
import { CORE_NODES, example, settle, type FlowNode, until } from './examples-support';

const MODES = 'modes';

/** The example's function node and the injects that feed it, its output into a helper node. */
function mappingFlow(name: string): FlowNode[] {
  const flow = example(name);
  const mapping = flow.find((node) => node.type === 'function')!;
  const injects = flow.filter((node) => node.type === 'inject' && node.wires.flat().includes(mapping.id));
  return [
    { id: 'tab', type: 'tab', label: name },
    { ...mapping, z: 'tab', wires: [[MODES]] },
    ...injects.map((node) => ({ ...node, z: 'tab', wires: [[mapping.id]] })),
    { id: MODES, z: 'tab', type: 'helper', wires: [] },
  ];
}

describe('the tariff examples map prices and evcc onto battery modes', function () {
  this.timeout(20000);
  let flow: FlowNode[];
  let mapping: string;
  let modes: string[];

  const listen = () => helper.getNode(MODES).on('input', (msg: FlowNode) => modes.push(msg.mode));
  async function load(name: string) {
    flow = mappingFlow(name);
    mapping = flow[1].id;
    modes = [];
    await helper.load(CORE_NODES, flow);
    listen();
    // The example's inject at start runs once, a second after the deploy: the tests begin after it.
    const atStart = flow.find((node) => node.type === 'inject' && node.once);
    if (atStart) await settle([atStart.id], () => undefined);
    modes = [];
  }
  /** The mode the function sends for `msg`. */
  async function modeFor(msg: FlowNode): Promise<string> {
    const before = modes.length;
    helper.getNode(mapping).receive(msg);
    await until(() => modes.length > before, 5000, 'a mode');
    return modes[modes.length - 1];
  }
  /** A full deploy of the same flow: the mode in force comes again without a new message. */
  async function modeAfterRedeploy(): Promise<string> {
    modes = [];
    await redeploy(flow, 'full');
    listen();
    await until(() => modes.length > 0, 5000, 'the mode in force after the redeploy');
    return modes[0];
  }

  afterEach(() => helper.unload());

  describe('Tariff modes (power-saver)', () => {
    beforeEach(() => load('Tariff modes'));
    // Power-saver's times carry the local offset, e.g. 2026-11-28T05:00:00.000+02:00.
    const at = (offsetMs: number) => new Date(Date.now() + offsetMs + 7200000).toISOString().replace('Z', '+02:00');
    const HOUR = 3600000;
    /** Power-saver's third output: msg.payload.schedule, the value now first, then the next hour's. */
    const schedule = (topic: string, now: boolean, next: boolean) => ({
      topic,
      payload: {
        schedule: [
          { time: at(-HOUR / 2), value: now, countMinutes: 60 },
          { time: at(HOUR / 2), value: next, countMinutes: null },
        ],
        current: now,
        time: at(0),
      },
    });

    it('the price peak (Best Save off) → normal, Best Save on → hold, the cheapest hours (Lowest Price on) → charge', async () => {
      (await modeFor(schedule('best save', false, true))).should.equal('normal');
      (await modeFor(schedule('best save', true, false))).should.equal('hold');
      (await modeFor(schedule('lowest price', true, false))).should.equal('charge');
      (await modeFor(schedule('lowest price', false, true))).should.equal('hold');
    });

    it("power-saver's on/off outputs (msg.payload true/false) map the same way", async () => {
      (await modeFor({ topic: 'best save', payload: false })).should.equal('normal');
      (await modeFor({ topic: 'best save', payload: true })).should.equal('hold');
      (await modeFor({ topic: 'lowest price', payload: true })).should.equal('charge');
      (await modeFor({ topic: 'lowest price', payload: false })).should.equal('hold');
    });

    it("a schedule's change goes out at its time: the peak starts, the battery discharges", async () => {
      const peakIn = 1500;
      const sent = Date.now();
      const bestSave = {
        schedule: [
          { time: at(-HOUR), value: true, countMinutes: 60 },
          { time: at(peakIn), value: false, countMinutes: 60 },
        ],
      };
      (await modeFor({ topic: 'best save', payload: bestSave })).should.equal('hold');
      await until(() => modes[modes.length - 1] === 'normal', 5000, 'normal at the peak');
      (Date.now() - sent).should.be.aboveOrEqual(peakIn - 50);
    });

    it('after a redeploy the mode in force goes out again, with no new schedule', async () => {
      (await modeFor(schedule('best save', true, false))).should.equal('hold');
      (await modeAfterRedeploy()).should.equal('hold');
      (await modeFor(schedule('lowest price', true, false))).should.equal('charge');
      (await modeAfterRedeploy()).should.equal('charge');
    });
  });

  describe('evcc battery mode', () => {
    beforeEach(() => load('evcc battery mode'));

    it('evcc/site/batteryMode normal, hold and charge pass as msg.mode; unknown is normal', async () => {
      for (const mode of ['hold', 'charge', 'normal'])
        (await modeFor({ topic: 'evcc/site/batteryMode', payload: mode })).should.equal(mode);
      (await modeFor({ topic: 'evcc/site/batteryMode', payload: 'hold' })).should.equal('hold');
      (await modeFor({ topic: 'evcc/site/batteryMode', payload: 'unknown' })).should.equal('normal');
    });

    it("after a redeploy evcc's last mode goes out again, with no new message", async () => {
      (await modeFor({ topic: 'evcc/site/batteryMode', payload: 'charge' })).should.equal('charge');
      (await modeAfterRedeploy()).should.equal('charge');
    });
  });
});
