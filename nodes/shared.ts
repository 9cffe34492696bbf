/** Glue shared by the node adapters: the config node's interface as flow nodes see it, and small helpers. */
import type { Node, NodeStatus } from 'node-red';
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
