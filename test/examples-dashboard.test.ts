/** The Dashboard example in Node-RED against the simulator, its widgets as helper nodes (see examples.test.ts). */
import should from 'should';
import { helper, PASSWORD, startSimulator } from './support';
import type { DeviceSimulator } from '../src/simulator';
import { pointByName } from '../src/points/catalogue';
import { lastStatus } from './node-support';
import { CORE_NODES, OUR_NODES, type FlowNode, prepared, idOf, until, settle } from './examples-support';

const GRID_CHARGING = pointByName('gridCharging')!.address;
const GRID_CHARGING_SETTING = pointByName('gridChargingSetting')!.address;

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
  async function run(armed: boolean | string[], simulatorOptions: Parameters<typeof startSimulator>[0] = {}) {
    simulator = await startSimulator(simulatorOptions);
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
    await settle([charge.id], () => charge.send({ topic: 'mode', payload: 'charge' }));
    simulator.workingMode.should.equal(1);
    should(simulator.stats.byOperation['Vendor.SetData'] ?? 0).equal(0);
  });

  it("on the 1600 class: the Grid row and the chart's Grid line show its meter, and the Grid charging switch, which it lacks, hides", async () => {
    const widget = await run(false, { model: '1600' });
    const grid = first(widget('ui-text: Grid'));
    const gridCharging = first(widget('ui-switch: Grid charging'));
    const chart: FlowNode[] = [];
    widget('ui-chart: Power (W), last hour').on('input', (msg: FlowNode) => chart.push(msg));
    (await grid).payload.should.match(/^(importing \d+ W|exporting \d+ W|0 W)$/);
    const hidden = await gridCharging;
    should(hidden.visible).equal(false);
    should(hidden.payload).be.undefined();
    await until(() => chart.some((msg) => msg.topic === 'Grid'), 10000, "the chart's Grid line");
  });

  it('once armed without zero feed-in: grid charging and working mode 1 from their controls', async () => {
    const widget = await run(['working mode', 'grid charging']);
    widget('ui-switch: Grid charging').send({ topic: 'gridCharging', payload: 0 });
    await until(() => simulator.value(GRID_CHARGING) === 1000, 10000, 'grid charging off');
    widget('ui-dropdown: Working mode').send({ topic: 'workingMode', payload: 4 });
    await until(() => simulator.workingMode === 4, 10000, 'working mode 4');
    // Handing control back: working mode 1 from the drop-down.
    widget('ui-dropdown: Working mode').send({ topic: 'workingMode', payload: 1 });
    await until(() => simulator.workingMode === 1, 10000, 'working mode 1');
    simulator.stats.violations.should.be.empty();
  });

  it('once armed: holds the grid at about 0 W from the start; the mode buttons are obeyed and shown; Steering off hands back', async () => {
    const widget = await run(['zero feed-in']);
    const zero: any = helper.getNode(idOf(flowOf(), (n) => n.name === 'zero feed-in'));
    const modeRow: FlowNode[] = [];
    widget('ui-text: Mode').on('input', (msg: FlowNode) => modeRow.push(msg));
    simulator.setData(GRID_CHARGING_SETTING, [0]);
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower) <= 50, 20000, 'meter power near 0 W');
    await until(() => /^Zero feed-in · /.test(modeRow.at(-1)?.payload ?? ''), 5000, 'the Mode row');

    widget('ui-button: Charge').send({ topic: 'mode', payload: 'charge' });
    await until(() => simulator.controlState === 1 && simulator.controlPower === 800, 5000, 'charging at 800 W');
    await until(() => simulator.value(GRID_CHARGING) === 1001, 5000, 'grid charging on');
    await until(() => modeRow.at(-1)?.payload === 'Charge · charging 800 W', 5000, 'the Mode row to show Charge');
    widget('ui-button: Hold').send({ topic: 'mode', payload: 'hold' });
    await until(() => simulator.controlState === 0, 5000, 'no grid charge in hold (the house imports)');
    await until(() => simulator.value(GRID_CHARGING) === 1000, 5000, 'grid charging back off');
    widget('ui-button: Standby').send({ topic: 'mode', payload: 'standby' });
    await until(() => modeRow.at(-1)?.payload === 'Standby · standby', 5000, 'the Mode row to show Standby');
    widget('ui-button: Zero feed-in').send({ topic: 'mode', payload: 'normal' });
    await until(() => Math.abs(simulator.meterPower) <= 50 && simulator.controlState === 2, 20000, 'meter power near 0 W again');

    // Steering off hands control back (working mode 1); on steers again.
    widget('ui-switch: Steering').send({ topic: 'enable', payload: false });
    await until(() => simulator.workingMode === 1, 10000, 'working mode 1');
    // Texts are keys here (no en-US catalogue in this test).
    await until(() => lastStatus(zero)?.text?.endsWith('status.off') === true, 5000, 'the loop off');
    widget('ui-switch: Steering').send({ topic: 'enable', payload: true });
    await until(() => simulator.workingMode === 4 && Math.abs(simulator.meterPower) <= 50, 20000, 'meter power near 0 W again');
    simulator.stats.violations.should.be.empty();
  });
});
