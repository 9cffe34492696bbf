/** What the example tests share: the examples pointed at the simulator, the node sets they load, waits on a flow. */
import fs from 'node:fs';
import path from 'node:path';
import should from 'should';
import { helper, PASSWORD } from './support';
import type { DeviceSimulator } from '../src/simulator';
import { REAL_TIME } from '../src/points/catalogue';
import { STATE_CODES } from '../src/control/control';
import deviceNode = require('../nodes/localbattery-device');
import readNode = require('../nodes/localbattery-read');
import writeNode = require('../nodes/localbattery-write');
import controlNode = require('../nodes/localbattery-control');
import infoNode = require('../nodes/localbattery-info');
import discoverNode = require('../nodes/localbattery-discover');
import passwordNode = require('../nodes/localbattery-password');
import zeroNode = require('../nodes/localbattery-zero-feed-in');

// The core nodes are CommonJS files found by path.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const core = (file: string) => require(require.resolve(`@node-red/nodes/core/${file}`));
export const CORE_NODES = [
  'common/20-inject.js',
  'common/90-comment.js',
  'function/10-function.js',
  'function/89-delay.js',
  'function/10-switch.js',
  'function/15-change.js',
  'common/25-catch.js',
].map(core);
export const MQTT_NODES = core('network/10-mqtt.js');
export const OUR_NODES = [deviceNode, readNode, writeNode, controlNode, infoNode, discoverNode, passwordNode, zeroNode];
export const CORE_TYPES = [
  'comment',
  'inject',
  'debug',
  'function',
  'delay',
  'change',
  'switch',
  'catch',
  'mqtt out',
  'mqtt in',
  'mqtt-broker',
];

export const EXAMPLES = path.join(__dirname, '..', '..', 'examples');
/** Node types of the other modules the examples may use, by the module's package.json. */
const MODULE_TYPES = new Map<string, string>(
  ['@flowfuse/node-red-dashboard'].flatMap((module) =>
    Object.keys(
      (JSON.parse(fs.readFileSync(require.resolve(`${module}/package.json`), 'utf8')) as { 'node-red': { nodes: object } })['node-red']
        .nodes,
    ).map((type): [string, string] => [type, module]),
  ),
);
export const moduleOfType = (type: string) => MODULE_TYPES.get(type) ?? 'no module';
export type FlowNode = Record<string, any>;

export function example(name: string): FlowNode[] {
  return JSON.parse(fs.readFileSync(path.join(EXAMPLES, `${name}.json`), 'utf8'));
}

/** Node types that make the device do something: examples import them disabled, for the user to arm. */
export const WRITER_TYPES = ['localbattery-write', 'localbattery-control', 'localbattery-password', 'localbattery-zero-feed-in'];
/** Writers that take control of the battery: an example with one also shows how to hand control back. */
export const CONTROL_TYPES = ['localbattery-control', 'localbattery-zero-feed-in'];
/** Operations that change the device (SetData under whatever namespace the device uses). */
export const isWriteOperation = (operation: string) => /\.SetData$|^User\.SetConfig$/.test(operation);

/**
 * The example pointed at the simulator, debug nodes replaced by helper nodes; `armed`: its disabled nodes enabled,
 * as the user does following the comment.
 */
/** Examples that need more than Node-RED's core nodes and ours. */
export const NEEDS_MORE = [
  'Dashboard.json',
  'Home Assistant (MQTT discovery).json',
  'Zero feed-in.json',
  'Several batteries.json',
  'evcc battery mode.json',
];

/**
 * The example ready to load, `simulators` one per device configuration in order (one for all when one is given);
 * `armed`: every disabled node enabled, or only those named.
 */
export function prepared(
  name: string,
  simulators: DeviceSimulator | DeviceSimulator[],
  devicePassword = PASSWORD,
  armed: boolean | string[] = true,
) {
  const sims = Array.isArray(simulators) ? simulators : [simulators];
  const simulator = sims[0];
  let devices = 0;
  // Import puts the nodes on a tab, as the editor's Import does.
  const flow: FlowNode[] = example(name).map((node): FlowNode => {
    if (node.type === 'localbattery-device') {
      const sim = sims[Math.min(devices++, sims.length - 1)];
      return { ...node, host: '127.0.0.1', port: sim.port, timeout: 3000 };
    }
    if (node.type === 'debug') return { id: node.id, z: 'tab', type: 'helper', name: node.name, wires: [] };
    // Never broadcast from a test: discovery asks the simulator on loopback only.
    if (node.type === 'localbattery-discover')
      return { ...node, z: 'tab', target: '127.0.0.1', port: simulator.udpPort ?? 8099, localPort: 0, listenTime: 1 };
    const copy: FlowNode = { ...node, z: 'tab' };
    if (armed === true || (Array.isArray(armed) && armed.includes(node.name))) delete copy.d;
    return copy;
  });
  flow.unshift({ id: 'tab', type: 'tab', label: name });
  const configs = flow.filter((node) => node.type === 'localbattery-device');
  return { flow, credentials: Object.fromEntries(configs.map((c) => [c.id, { password: devicePassword }])) as Record<string, unknown> };
}

export function idOf(flow: FlowNode[], predicate: (node: FlowNode) => boolean): string {
  const node = flow.find(predicate);
  should.exist(node);
  return node!.id;
}

export function nextMessage(id: string, timeoutMs = 15000): Promise<FlowNode> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no message at ${id} within ${timeoutMs} ms`)), timeoutMs);
    helper.getNode(id).once('input', (msg: FlowNode) => {
      clearTimeout(timer);
      resolve(msg);
    });
  });
}

export async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Hooks {
  add(name: string, hook: (event: any) => void): void;
  remove(name: string): void;
}
const hooks = (helper as unknown as { _RED: { hooks: Hooks } })._RED.hooks;

/**
 * Runs `act` and resolves when what it starts has gone as far as it goes: the first message each node of `sources`
 * sends from now on, and all that follows from it, handled (every node that received one has called done; test-helper
 * sinks excepted).
 */
export async function settle(sources: string[], act: () => unknown): Promise<void> {
  const waiting = new Set(sources);
  const traced = new Set<string>();
  /** Deliveries of traced messages not yet done, by node and message (a source completing its own is not one). */
  const open = new Map<string, number>();
  const count = (key: string, by: number) => open.set(key, (open.get(key) ?? 0) + by);
  // Counted when sent, as delivery comes a turn later; disabled nodes are not in the flow and receive nothing.
  hooks.add('onSend.examplesSettle', (events: { source: { id: string }; destination: { id: string }; msg: FlowNode }[]) => {
    for (const { source, destination, msg } of events) {
      if (waiting.delete(source.id)) traced.add(msg._msgid);
      const target = helper.getNode(destination.id);
      if (traced.has(msg._msgid) && target && target.type !== 'helper') count(`${destination.id} ${msg._msgid}`, 1);
    }
  });
  hooks.add('onComplete.examplesSettle', (event: { node: { id: string }; msg: FlowNode }) => {
    const key = `${event.node.id} ${event.msg._msgid}`;
    if (open.get(key)) count(key, -1);
  });
  try {
    await act();
    await until(() => waiting.size === 0 && [...open.values()].every((n) => n === 0), 15000, 'the flow to settle');
  } finally {
    hooks.remove('*.examplesSettle');
  }
}

/** The simulator's setpoint in W, signed like 6000; undefined out of real-time control. */
export function signedSetpoint(simulator: DeviceSimulator): number | undefined {
  if (simulator.workingMode !== REAL_TIME.mode) return undefined;
  const { state, power } = simulator.control;
  return state === STATE_CODES.charge ? -power : state === STATE_CODES.discharge ? power : 0;
}
