/** What the zero feed-in node's tests share: the flow around the node, a kettle house and a meter fed from the simulator. */
import deviceNode = require('../nodes/localbattery-device');
import zeroNode = require('../nodes/localbattery-zero-feed-in');
import controlNode = require('../nodes/localbattery-control');
import writeNode = require('../nodes/localbattery-write');
import type { DeviceSimulator } from '../src/simulator';
import { deviceConfig, helper } from './support';
import { inEnglish } from './node-support';

export const nodes = [inEnglish(deviceNode), inEnglish(zeroNode), inEnglish(controlNode), inEnglish(writeNode)];

/** The loaded flow: the zero feed-in node, its output messages, and the flow with credentials for a redeploy. */
export interface LoadedFlow {
  node: any;
  outputs: any[];
  flow: Record<string, unknown>[];
  credentials: ReturnType<typeof deviceConfig>['credentials'];
}

export async function load(simulator: DeviceSimulator, zero: Record<string, unknown> = {}): Promise<LoadedFlow> {
  const device = deviceConfig(simulator);
  const flow = [
    device.node as Record<string, unknown>,
    { id: 'zero1', type: 'localbattery-zero-feed-in', device: 'device1', meterSource: 'message', ...zero, wires: [['out']] },
    { id: 'out', type: 'helper' },
    { id: 'catch1', type: 'catch', scope: null, uncaught: false, wires: [['caught']] },
    { id: 'caught', type: 'helper' },
    { id: 'control1', type: 'localbattery-control', device: 'device1', power: 800, chargeSoc: 100, dischargeSoc: 10, wires: [[]] },
    { id: 'write1', type: 'localbattery-write', device: 'device1', point: 'controlPower', value: 'payload', valueType: 'msg', wires: [[]] },
  ];
  await helper.load(nodes, flow, device.credentials);
  const outputs: any[] = [];
  helper.getNode('out').on('input', (msg: any) => outputs.push(msg));
  return { node: helper.getNode('zero1'), outputs, flow, credentials: device.credentials };
}

/** A kettle on for 8 s every 16 s over 300 W of house; the battery lags 1.5 s after a dead time of 1 s. */
export const KETTLE_HOUSE = {
  workingMode: 5,
  deadTimeS: 1,
  lagS: 1.5,
  house: { baseLoadW: 300, events: [{ name: 'kettle', atS: 4, durationS: 8, everyS: 16, loadW: 2000 }] },
};

export const writes = (simulator: DeviceSimulator) => simulator.stats.byOperation['Vendor.SetData'] ?? 0;

/** Feeds the simulator's own meter to the node every 500 ms until stopped: the loop closed through the house. */
export function feedMeter(simulator: DeviceSimulator, node: any): () => void {
  const timer = setInterval(() => node.receive({ payload: simulator.meterPower }), 500);
  return () => clearInterval(timer);
}
