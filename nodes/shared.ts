/** Glue shared by the node adapters: the config node's interface as flow nodes see it, and small helpers. */
import type { Node, NodeMessage, NodeMessageInFlow, NodeStatus } from 'node-red';
import type { DeviceClient } from '../src/client';
import { DeviceError } from '../src/errors';

/** What a flow node gets from its config node. */
export interface DeviceConfigNode extends Node {
  /** The shared client, or undefined when the configuration is invalid. */
  client: DeviceClient | undefined;
  /** Why there is no client. */
  configError: string | undefined;
  register(user: Node): void;
  deregister(user: Node): void;
}

/** Looks up the config node and returns it, or sets an error status and returns undefined. */
export function deviceOf(
  RED: { nodes: { getNode(id: string): Node | null } },
  node: Node,
  deviceId: string | undefined,
  missingText: string,
): DeviceConfigNode | undefined {
  const device = deviceId ? (RED.nodes.getNode(deviceId) as DeviceConfigNode | null) : null;
  if (!device) {
    node.status({ fill: 'red', shape: 'ring', text: missingText });
    node.error(missingText);
    return undefined;
  }
  return device;
}

/** The client, or an error that says why there is none; for use inside an input handler. */
export function clientOf(device: DeviceConfigNode): DeviceClient {
  if (!device.client) throw new Error(device.configError ?? 'device configuration is invalid');
  return device.client;
}

/** Short status text for a failure: the error code where there is one, kept under 32 characters. */
export function errorStatus(error: unknown): NodeStatus {
  const text = error instanceof DeviceError ? error.code.toLowerCase().replace(/_/g, ' ') : 'error';
  return { fill: 'red', shape: 'ring', text };
}

/** Puts `error.code` (and the HTTP status where there is one) on the message for Switch/Catch logic. */
export function describeError(error: unknown): { message: string; code?: string; status?: number } {
  const err = error as { message?: string; code?: string; status?: number };
  return { message: err?.message ?? String(error), code: err?.code, status: err?.status };
}

export function timeOfDay(): string {
  // 24-hour HH:MM:SS whatever the server's locale: statuses are narrow.
  return new Date().toTimeString().slice(0, 8);
}

/**
 * The input life cycle the device nodes share: registers with the device; per message gets the client (a missing
 * or invalid config fails with done(err) and leaves the status that already says so), runs `handle`, sends what
 * it returns and calls done(), or shows the error and calls done(err); nothing happens after close.
 * `take` runs first of all, for what must leave the message before anything can fail (a password).
 */
export function serveDevice<M extends NodeMessageInFlow, T = undefined>(
  node: Node,
  device: DeviceConfigNode | undefined,
  missingText: string,
  handle: (msg: M, client: DeviceClient, taken: T) => Promise<NodeMessage | undefined>,
  take?: (msg: M) => T,
): { readonly closed: boolean } {
  const life = { closed: false };
  device?.register(node);
  node.on('input', (msg: NodeMessageInFlow, send: (msg: NodeMessage) => void, done: (error?: Error) => void) => {
    const taken = take ? take(msg as M) : (undefined as T);
    let client: DeviceClient;
    try {
      if (!device) throw new Error(missingText);
      client = clientOf(device);
    } catch (error) {
      done(error as Error);
      return;
    }
    Promise.resolve()
      .then(() => handle(msg as M, client, taken))
      .then(
        (out) => {
          if (life.closed) return;
          if (out) send(out);
          done();
        },
        (error: Error) => {
          if (life.closed) return;
          node.status(errorStatus(error));
          done(error);
        },
      );
  });
  node.on('close', (_removed: boolean, done: () => void) => {
    life.closed = true;
    device?.deregister(node);
    done();
  });
  return life;
}

/** Error codes on their way to Catch nodes, by reporting node id (see keepErrorCodes). */
const deliveringCodes = new Map<string, { message: string; code: string }>();
const CODE_HOOK = 'onReceive.localbatteryErrorCode';

interface HookingRED {
  version?: () => string;
  hooks?: { has(name: string): boolean; add(name: string, hook: (event: { msg: NodeMessage & { error?: Record<string, unknown> } }) => void): void };
}

/** Node-RED copies `error.code` into what a Catch node receives from 4.1 on; before, the code was lost. */
function copiesErrorCodes(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 4 || (major === 4 && minor >= 1);
}

/**
 * Makes `msg.error.code` reach Catch nodes on Node-RED before 4.1, as 4.1 does itself: `node.error` (which done(err)
 * calls) notes the code while Node-RED hands the error to the Catch nodes, synchronously, and a receive hook puts it
 * on their message. Nothing is installed on a runtime that does it already.
 */
export function keepErrorCodes(RED: unknown, node: Node): void {
  const { version, hooks } = RED as HookingRED;
  if (typeof version !== 'function' || !hooks || copiesErrorCodes(version())) return;
  if (!hooks.has(CODE_HOOK)) {
    hooks.add(CODE_HOOK, (event) => {
      const error = event.msg.error;
      const source = error?.source as { id?: string } | undefined;
      const pending = source?.id === undefined ? undefined : deliveringCodes.get(source.id);
      if (error && pending && error.code === undefined && error.message === pending.message) error.code = pending.code;
    });
  }
  const report = node.error.bind(node);
  node.error = (logMessage: unknown, msg?: NodeMessage) => {
    const code = (logMessage as { code?: unknown } | null)?.code;
    if (typeof code !== 'string') return report(logMessage, msg);
    deliveringCodes.set(node.id, { message: String(logMessage), code });
    try {
      report(logMessage, msg);
    } finally {
      deliveringCodes.delete(node.id);
    }
  };
}
