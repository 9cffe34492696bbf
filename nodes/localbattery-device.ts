/**
 * Config node: one device (address and credentials). Holds the client with these credentials; every flow node of
 * the device opens its own session on it (closing the node drops its waiting work). All clients of one device share
 * its one request queue (src/device/scheduler.ts). Pushes the connection state to the users' status (the sessions are
 * src/flow/device-users.ts) and serves the editor's admin routes.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Node, NodeAPI, NodeDef, NodeStatus } from 'node-red';
import type { Request, Response } from 'express';
import type { AuthMode } from '../src/device/auth';
import { DEFAULTS, DeviceClient, type ClientOptions, type ClientSession, type ConnectionState } from '../src/device/client';
import { discoverDevices } from '../src/discovery/discovery';
import { editorScanOptions } from '../src/flow/discover';
import { ValidationError } from '../src/errors';
import { configuredLimits, deviceInputs, editorCatalogueJson, envVarName } from '../src/editor/inputs';
import { catalogueInLanguage } from '../src/points/german';
import { answerError, editorRequest, shownReport, type EditorRequest, type SavedDevice } from '../src/editor/editor-request';
import { DeviceUsers } from '../src/flow/device-users';
import { describeError } from './shared';

interface DeviceDef extends NodeDef {
  host: string;
  port: string | number;
  username: string;
  auth: string;
  namespace: string;
  minInterval: string | number;
  timeout: string | number;
  chargeLimit: string | number;
  dischargeLimit: string | number;
  /** The single limit of earlier versions: stands in for an empty charge or discharge limit. */
  powerLimit?: string | number;
}

interface DeviceCredentials {
  password?: string;
}

function optionsFrom(settings: Partial<Record<keyof DeviceDef, unknown>>, password: string | undefined): ClientOptions {
  // The same description the editor runs (src/editor/inputs.ts, built for the browser).
  const { values, error } = deviceInputs.deploy(settings);
  if (error) throw error;
  const text = (value: unknown, fallback: string) => (typeof value === 'string' && value !== '' ? value : fallback);
  return {
    host: values.host ?? '',
    port: values.port,
    username: text(settings.username, DEFAULTS.username),
    password: password ?? '',
    auth: (settings.auth || DEFAULTS.auth) as AuthMode,
    // None: detected.
    namespace: values.namespace,
    minIntervalMs: values.minIntervalMs,
    timeoutMs: values.timeoutMs,
    // Left empty: the client takes the specification's, lowered to what the device reports.
    ...configuredLimits(values),
  };
}

/** Node-RED's `getSetting`, which resolves `${NAME}` for a node (its flow's and global environment). */
const utilOf = (RED: NodeAPI) => RED.util as unknown as { getSetting(node: Node | null, name: string): unknown };
const textOf = (value: unknown) => (typeof value === 'string' ? value : undefined);

export = function (RED: NodeAPI) {
  const util = utilOf(RED);

  /**
   * Puts in an environment variable as Node-RED does in node properties (where it does not: credentials, and what
   * the editor sends); an undefined variable leaves the text, which then fails validation naming the field.
   */
  function withEnv(value: unknown, node: Node | null): unknown {
    const name = envVarName(value);
    if (name === undefined) return value;
    const resolved = util.getSetting(node, name);
    return resolved === undefined ? value : resolved;
  }

  function statusOf(state: ConnectionState): NodeStatus {
    switch (state) {
      case 'ok':
        return { fill: 'green', shape: 'dot', text: RED._('localbattery-device.status.connected') };
      case 'unauthorized':
        return { fill: 'red', shape: 'ring', text: RED._('localbattery-device.status.unauthorized') };
      case 'default-password':
        return { fill: 'red', shape: 'ring', text: RED._('localbattery-device.status.defaultPassword') };
      case 'digest-required':
        return { fill: 'red', shape: 'ring', text: RED._('localbattery-device.status.digestRequired') };
      case 'unreachable':
        return { fill: 'red', shape: 'ring', text: RED._('localbattery-device.status.unreachable') };
      case 'error':
        return { fill: 'yellow', shape: 'ring', text: RED._('localbattery-device.status.error') };
      default:
        return {};
    }
  }

  /** The running device configurations by the device they reach (`address:port`). */
  const configsAt = new Map<string, Set<Node>>();

  function DeviceNode(this: Node<DeviceCredentials> & Record<string, unknown>, def: DeviceDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    let client: DeviceClient | undefined;
    node.configError = undefined;
    /** The device's address, once known: a second configuration that reaches it is told about this one (once). */
    let device: string | undefined;
    const meet = (address: string) => {
      device = address;
      const others = configsAt.get(address) ?? new Set<Node>();
      configsAt.set(address, others);
      const other = [...others][0];
      if (other) node.warn(RED._('localbattery-device.log.sameDevice', { device: address, other: other.name || other.id }));
      others.add(node);
    };
    try {
      client = new DeviceClient(optionsFrom(def, textOf(withEnv(node.credentials?.password, node))));
      client.on('namespace', (namespace: string) => node.log(RED._('localbattery-device.log.namespace', { namespace })));
      if (client.deviceAddress !== undefined) meet(client.deviceAddress);
      else client.once('device', meet);
      node.client = client;
    } catch (error) {
      node.configError = (error as Error).message;
      node.error(node.configError);
    }
    const users = new DeviceUsers<Node>(client, (user, state) => user.status(statusOf(state)));

    node.open = (user: Node): ClientSession | undefined => {
      const session = users.open(user);
      if (!session) user.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-device.status.invalid') });
      return session;
    };
    node.leave = (user: Node, after?: Promise<unknown>) => users.leave(user, after);

    // What still waits is rejected, after the users' farewells; no timer is left. Node-RED calls every close handler
    // of a stop in one go, in an order that depends on the flows: on the next turn every user's farewell is known.
    node.on('close', (done: () => void) => {
      if (device !== undefined) configsAt.get(device)?.delete(node);
      setImmediate(() => {
        void users.close().then(() => {
          node.client = undefined;
          done();
        });
      });
    });
  }

  RED.nodes.registerType('localbattery-device', DeviceNode as unknown as Parameters<NodeAPI['nodes']['registerType']>[1], {
    credentials: { password: { type: 'password' } },
  });

  serveEditor(RED);
};

/** The editor's admin routes. */
function serveEditor(RED: NodeAPI): void {
  const util = utilOf(RED);

  // Admin routes for the editor. The request bodies may carry passwords: never log them.
  const read = RED.auth.needsPermission('localbattery-device.read');
  const write = RED.auth.needsPermission('localbattery-device.write');

  // In the editor's language (?lang=, RED.i18n.lang()): German or English.
  RED.httpAdmin.get('/localbattery/catalogue', read, (req: Request, res: Response) => {
    res.json(catalogueInLanguage(editorCatalogueJson(), req.query.lang));
  });

  // The runtime's rule functions built for the browser (src/editor/editor-rules.ts): the editor validates with them.
  const rulesScript = fs.readFileSync(path.join(__dirname, '..', 'src', 'editor', 'editor-rules.browser.js'), 'utf8');
  RED.httpAdmin.get('/localbattery/rules.js', read, (_req: Request, res: Response) => {
    res.type('application/javascript').send(rulesScript);
  });

  // One scan at a time: a second would bind the same local port and see the first one's answers.
  let editorScanning = false;
  RED.httpAdmin.post('/localbattery/discover', write, async (req: Request, res: Response) => {
    if (editorScanning) {
      res.status(409).json({ error: { message: RED._('localbattery-device.editor.discoverBusy'), code: 'BUSY' } });
      return;
    }
    const warnings: string[] = [];
    try {
      const options = editorScanOptions(bodyOf(req));
      editorScanning = true;
      const devices = await discoverDevices({ ...options, onWarning: (message) => warnings.push(message) });
      res.json({ devices, warnings });
    } catch (error) {
      // editorScanOptions() throws and discoverDevices() rejects only for invalid options, i.e. a bad request.
      res.status(error instanceof ValidationError ? 400 : 500).json({ error: describeError(error) });
    } finally {
      editorScanning = false;
    }
  });

  /** The JSON body of an admin request; anything else counts as empty. */
  function bodyOf(req: Request): Record<string, unknown> {
    const body: unknown = req.body;
    return body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  }

  /** The deployed device configuration `id` as saved (before Node-RED put in `${NAME}`), with its stored password. */
  function savedDevice(id: unknown): SavedDevice | undefined {
    if (typeof id !== 'string') return undefined;
    let settings: Record<string, unknown> | undefined;
    RED.nodes.eachNode((config) => {
      if (config.id === id && config.type === 'localbattery-device') settings = config as unknown as Record<string, unknown>;
    });
    if (!settings) return undefined;
    return { settings, password: (RED.nodes.getCredentials(id) as DeviceCredentials | undefined)?.password };
  }

  /** The settings of an editor request (src/editor/editor-request.ts), with the variables of the deployed configuration it names. */
  function editorRequestOf(body: Record<string, unknown>, passwordField: string): EditorRequest {
    const saved = savedDevice(body.id);
    const own = saved ? RED.nodes.getNode(body.id as string) : null;
    return editorRequest(body, passwordField, saved, (name) => util.getSetting(own, name));
  }

  // The editor's clients join the device's queue like any other, so they never overlap a running flow's requests.
  RED.httpAdmin.post('/localbattery/test', write, async (req: Request, res: Response) => {
    let client: DeviceClient | undefined;
    const request = editorRequestOf(bodyOf(req), 'password');
    try {
      client = new DeviceClient({ ...optionsFrom(request.settings, ''), password: request.password });
      res.json(shownReport(await client.testConnection(), request.substituted));
    } catch (error) {
      res.status(400).json({ error: answerError(error, request.substituted) });
    } finally {
      client?.close();
    }
  });

  RED.httpAdmin.post('/localbattery/set-password', write, async (req: Request, res: Response) => {
    let client: DeviceClient | undefined;
    const body = bodyOf(req);
    const request = editorRequestOf(body, 'currentPassword');
    try {
      client = new DeviceClient({ ...optionsFrom(request.settings, ''), password: request.password });
      // Anything but text (an object would become "[object Object]") is left for the password check to refuse.
      await client.changePassword(typeof body.newPassword === 'string' ? body.newPassword : '');
      res.json({ result: true });
    } catch (error) {
      res.status(400).json({ error: answerError(error, request.substituted) });
    } finally {
      client?.close();
    }
  });
}
