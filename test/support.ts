/** Shared test set-up: a simulator with its password already changed, and the config node that points at it. */
import helper from 'node-red-node-test-helper';
import { DeviceSimulator, type SharedHouse, type SimulatorOptions } from '../src/simulator';

// NODE_RED_RUNTIME: the runtime under test (e.g. another Node-RED's lib/red.js, see scripts/compat-node-red.sh);
// by default the node-red of this package's devDependencies.
helper.init(process.env.NODE_RED_RUNTIME || require.resolve('node-red'));

// The helper builds the nodes' RED from a stand-in runtime without `hooks` and `version`, which Node-RED gives every
// node: fill them in from the runtime under test, so the nodes see what they see in Node-RED.
const internals = helper as unknown as {
  _RED: { hooks: unknown; version(): string };
  _registryUtil?: { createNodeApi(node: unknown): Record<string, unknown> };
  _events: { once(event: string, listener: () => void): void };
  _redNodes: { setFlows(flow: unknown[], credentials: Record<string, unknown>, type: string): Promise<unknown> };
};
const registryUtil = internals._registryUtil;
if (registryUtil) {
  const createNodeApi = registryUtil.createNodeApi.bind(registryUtil);
  registryUtil.createNodeApi = (node: unknown) => {
    const api = createNodeApi(node);
    api.hooks ??= internals._RED.hooks;
    api.version ??= () => internals._RED.version();
    return api;
  };
}

export const PASSWORD = 'test-secret-1';

export async function startSimulator(options: SimulatorOptions = {}): Promise<DeviceSimulator> {
  const simulator = new DeviceSimulator({ port: 0, udpPort: null, password: PASSWORD, ...options });
  await simulator.start();
  return simulator;
}

/** Simulated units in one house, each listening and started; `units` their own options (model, SOC, ...). */
export async function startUnits(house: SharedHouse, units: SimulatorOptions[]): Promise<DeviceSimulator[]> {
  const sims = units.map(
    (options, i) =>
      new DeviceSimulator({
        port: 0,
        udpPort: null,
        password: PASSWORD,
        sharedHouse: house,
        serialNumber: `SIMUNIT00000000${i + 1}`,
        ...options,
      }),
  );
  for (const sim of sims) await sim.start();
  return sims;
}

/** The config node and its credentials for a flow that talks to `simulator`. */
export function deviceConfig(simulator: DeviceSimulator, id = 'device1', extra: Record<string, unknown> = {}) {
  return {
    node: {
      id,
      type: 'localbattery-device',
      name: 'sim',
      host: '127.0.0.1',
      port: simulator.port,
      username: 'opend',
      namespace: 'Vendor',
      minInterval: 1000,
      timeout: 2000,
      ...extra,
    },
    credentials: { [id]: { password: PASSWORD } },
  };
}

export { helper };

/**
 * A deploy of `flow` (as the editor's: 'full', 'flows' or 'nodes'), done once its nodes have started. The helper's own
 * setFlows gives them 300 ms and then fails with "timeout waiting event": on a busy machine a redeploy takes longer
 * (a CI run failed so). Bounded by the test's own timeout.
 */
export async function redeploy(flow: unknown[], type = 'full', credentials: Record<string, unknown> = {}): Promise<void> {
  const started = new Promise<void>((resolve) => internals._events.once('flows:started', resolve));
  await internals._redNodes.setFlows(flow, credentials, type);
  await started;
}

/**
 * Job options whose onStart tells when the job's request has gone out: what is asked after it waits for the next
 * slot (instead of a fixed sleep that relies on the interval).
 */
export function goingOut(): { onStart: () => void; out: Promise<void> } {
  let onStart!: () => void;
  const out = new Promise<void>((resolve) => (onStart = resolve));
  return { onStart, out };
}
