/** Glue shared by the node adapters: the config node's interface as flow nodes see it, and small helpers. */
import type { Node, NodeMessage, NodeMessageInFlow, NodeStatus } from 'node-red';
import type { ClientSession, DeviceClient } from '../src/device/client';
import { DeviceError } from '../src/errors';

/** What a flow node gets from its config node. */
export interface DeviceConfigNode extends Node {
  /** This configuration's client (its credentials), until the configuration closes; undefined when invalid. */
  client: DeviceClient | undefined;
  /** Why the configuration has no client. */
  configError: string | undefined;
  /**
   * A session for `user` (its own queue share: closing it drops the user's waiting work), or undefined when the
   * configuration is invalid (the user's status then says so). Opening again replaces the user's session.
   */
  open(user: Node): ClientSession | undefined;
  /**
   * Closes the session of `user`; with `after`, once that work (a hand-back on closing) has settled, and the
   * configuration's own close waits for it.
   */
  leave(user: Node, after?: Promise<unknown>): void;
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

/** The node's session, or an error that says why there is none; for use inside an input handler. */
export function sessionOf(session: ClientSession | undefined, device: DeviceConfigNode | undefined, missingText: string): ClientSession {
  if (!device) throw new Error(missingText);
  if (!session) throw new Error(device.configError ?? 'device configuration is invalid');
  return session;
}

/** What a node sends: one message, or per output a message, a list of messages or null. */
export type Outgoing = NodeMessage | (NodeMessage | NodeMessage[] | null)[];

/**
 * The input life cycle the device nodes share: opens a session on the device; per message takes the session (a
 * missing or invalid config fails with done(err) and leaves the status that already says so), runs `handle`, sends
 * what it returns and calls done(), or shows the error and calls done(err); on close the session's waiting work is
 * dropped and nothing happens afterwards. `take` runs first of all, for what must leave the message before anything
 * can fail (a password).
 */
export function serveDevice<M extends NodeMessageInFlow, T = undefined>(
  node: Node,
  device: DeviceConfigNode | undefined,
  missingText: string,
  handle: (msg: M, session: ClientSession, taken: T) => Promise<Outgoing | undefined>,
  take?: (msg: M) => T,
): { readonly closed: boolean; readonly session: ClientSession | undefined } {
  const life = { closed: false, session: device?.open(node) };
  node.on('input', (msg: NodeMessageInFlow, send: (msg: Outgoing) => void, done: (error?: Error) => void) => {
    const taken = take ? take(msg as M) : (undefined as T);
    let session: ClientSession;
    try {
      session = sessionOf(life.session, device, missingText);
    } catch (error) {
      done(error as Error);
      return;
    }
    // Nothing of send, done or status may escape: an unhandled rejection stops the whole Node-RED.
    const report = (thrown: unknown) => {
      try {
        node.warn(thrown instanceof Error ? thrown.message : String(thrown));
      } catch {
        // Nowhere left to report it.
      }
    };
    const finish = (error?: Error) => {
      try {
        if (error) {
          node.status(errorStatus(error));
          done(error);
        } else done();
      } catch (thrown) {
        report(thrown);
      }
    };
    Promise.resolve()
      .then(() => handle(msg as M, session, taken))
      .then(
        (out) => {
          if (life.closed) return;
          try {
            if (out) send(out);
          } catch (error) {
            finish(error as Error);
            return;
          }
          finish();
        },
        (error: Error) => {
          if (!life.closed) finish(error);
        },
      )
      .catch(report);
  });
  node.on('close', (_removed: boolean, done: () => void) => {
    life.closed = true;
    device?.leave(node);
    done();
  });
  return life;
}

/** Error codes on their way to Catch nodes, by reporting node id (see keepErrorCodes). */
const deliveringCodes = new Map<string, { message: string; code: string }>();
const CODE_HOOK = 'onReceive.localbatteryErrorCode';

interface HookingRED {
  version?: () => string;
  hooks?: {
    has(name: string): boolean;
    add(name: string, hook: (event: { msg: NodeMessage & { error?: Record<string, unknown> } }) => void): void;
  };
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
