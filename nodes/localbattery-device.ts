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
import { discoverDevices, parseMethod } from '../src/discovery/discovery';
import { ValidationError } from '../src/errors';
import { decimalNumber } from '../src/numbers';
import { deviceInputs, deviceLimits, editorCatalogueJson } from '../src/editor/inputs';
import { normaliseHost } from '../src/device/scheduler';
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

/** The editor shows this in place of a stored password it does not know. */
const STORED_PASSWORD = '__PWRD__';

/** The fields of an editor request in which `${NAME}` is put in: those whose editor takes it (the rest go as typed). */
const ENV_FIELDS = ['host', 'port', 'namespace', 'minInterval', 'timeout', 'chargeLimit', 'dischargeLimit', 'powerLimit'];

function optionsFrom(settings: Partial<Record<keyof DeviceDef, unknown>>, password: string | undefined): ClientOptions {
  // The same description the editor runs (src/editor/inputs.ts, built for the browser).
  const { values, error } = deviceInputs.deploy(settings);
  if (error) throw error;
  const text = (value: unknown, fallback: string) => (typeof value === 'string' && value !== '' ? value : fallback);
  return {
    host: text(settings.host, '').trim(),
    port: values.port,
    username: text(settings.username, DEFAULTS.username),
    password: password ?? '',
    auth: (settings.auth || DEFAULTS.auth) as AuthMode,
    // Empty: detected.
    namespace: typeof settings.namespace === 'string' ? settings.namespace : DEFAULTS.namespace,
    minIntervalMs: values.minIntervalMs,
    timeoutMs: values.timeoutMs,
    ...deviceLimits(values),
  };
}

/**
 * `error` with every value put in for an environment variable replaced by its `${NAME}` in the message: an editor
 * request must not read environment values back through an error text (previews are cut short, hosts lower-cased).
 */
function scrubbed(error: unknown, substituted: readonly { name: string; value: string }[]): unknown {
  const original = (error as { message?: unknown } | null)?.message;
  if (typeof original !== 'string' || substituted.length === 0) return error;
  let message = original;
  const forms = substituted.flatMap(({ name, value }) =>
    [value, value.toLowerCase(), JSON.stringify(value).slice(1, -1), value.slice(0, 60)]
      .filter((form) => form.length > 0)
      .map((form) => ({ form, name })),
  );
  // Longest first, so that a value inside another is not replaced before the other.
  for (const { form, name } of forms.sort((a, b) => b.form.length - a.form.length)) message = message.split(form).join(`\${${name}}`);
  const { code, status } = error as { code?: string; status?: number };
  return { message, code, status };
}

/** `${NAME}` as a whole value: Node-RED's form of an environment variable in node properties. */
const ENV_VAR = /^\$\{(\S+)\}$/;

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
    const name = typeof value === 'string' ? ENV_VAR.exec(value)?.[1] : undefined;
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

  function DeviceNode(this: Node<DeviceCredentials> & Record<string, unknown>, def: DeviceDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    let client: DeviceClient | undefined;
    node.configError = undefined;
    try {
      client = new DeviceClient(optionsFrom(def, textOf(withEnv(node.credentials?.password, node))));
      client.on('namespace', (namespace: string) => node.log(RED._('localbattery-device.log.namespace', { namespace })));
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

  RED.httpAdmin.get('/localbattery/catalogue', read, (_req: Request, res: Response) => {
    res.json(editorCatalogueJson());
  });

  // The runtime's rule functions built for the browser (src/editor/editor-rules.ts): the editor validates with them.
  const rulesScript = fs.readFileSync(path.join(__dirname, '..', 'src', 'editor', 'editor-rules.browser.js'), 'utf8');
  RED.httpAdmin.get('/localbattery/rules.js', read, (_req: Request, res: Response) => {
    res.type('application/javascript').send(rulesScript);
  });

  RED.httpAdmin.post('/localbattery/discover', write, async (req: Request, res: Response) => {
    const warnings: string[] = [];
    const body = bodyOf(req);
    const listenMs = Math.min(Math.max(decimalNumber(body.listenMs) || 3000, 500), 15000);
    const target = typeof body.target === 'string' && body.target.trim() ? body.target.trim() : undefined;
    const port = body.port === undefined || body.port === '' ? undefined : (decimalNumber(body.port) ?? NaN);
    try {
      const method = parseMethod(body.method);
      const devices = await discoverDevices({ method, target, port, listenMs, onWarning: (message) => warnings.push(message) });
      res.json({ devices, warnings });
    } catch (error) {
      // parseMethod() throws and discoverDevices() rejects only for invalid options, i.e. a bad request.
      res.status(error instanceof ValidationError ? 400 : 500).json({ error: describeError(error) });
    }
  });

  /** The JSON body of an admin request; anything else counts as empty. */
  function bodyOf(req: Request): Record<string, unknown> {
    const body: unknown = req.body;
    return body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  }

  /**
   * A client for settings from the editor, and a scrubber for its error texts. `${NAME}` is put in only in ENV_FIELDS;
   * the stored password of node `id` (for the placeholder or an empty field), and `${NAME}` in the password field, only
   * towards that configuration's own host and port: a request that names another host gets no stored secret.
   */
  function editorClient(
    body: Record<string, unknown>,
    passwordField: string,
  ): { client?: DeviceClient; scrub: (error: unknown) => unknown } {
    const deployed = typeof body.id === 'string' ? RED.nodes.getNode(body.id) : null;
    // Only a device configuration's own password: any other node's secret must not go to a host the request names.
    const own = deployed?.type === 'localbattery-device' ? (deployed as Node & { client?: DeviceClient }) : null;
    const substituted: { name: string; value: string }[] = [];
    const expand = (value: unknown): unknown => {
      const name = typeof value === 'string' ? ENV_VAR.exec(value)?.[1] : undefined;
      if (name === undefined) return value;
      const resolved = util.getSetting(own, name);
      if (resolved === undefined) return value;
      substituted.push({ name, value: typeof resolved === 'string' ? resolved : JSON.stringify(resolved) });
      return resolved;
    };
    const scrub = (error: unknown) => scrubbed(error, substituted);
    try {
      const settings = { ...body };
      for (const field of ENV_FIELDS) settings[field] = expand(body[field]);
      const options = optionsFrom(settings, '');
      const stored = own?.client;
      const sameTarget =
        stored !== undefined && normaliseHost(options.host) === stored.host && (options.port ?? DEFAULTS.port) === stored.port;
      const typed = body[passwordField];
      let password = typeof typed === 'string' ? typed : '';
      if (!sameTarget) {
        // The placeholder stands for a secret this request may not have; `${NAME}` stays as typed.
        if (password === STORED_PASSWORD) password = '';
      } else {
        if (password === STORED_PASSWORD || password === '') {
          password = (RED.nodes.getCredentials(own!.id) as DeviceCredentials | undefined)?.password ?? '';
        }
        password = textOf(expand(password)) ?? '';
      }
      return { client: new DeviceClient({ ...options, password }), scrub };
    } catch (error) {
      throw scrub(error);
    }
  }

  // The editor's clients join the device's queue like any other, so they never overlap a running flow's requests.
  RED.httpAdmin.post('/localbattery/test', write, async (req: Request, res: Response) => {
    let client: DeviceClient | undefined;
    let scrub = (error: unknown) => error;
    try {
      ({ client, scrub } = editorClient(bodyOf(req), 'password'));
      res.json(await client!.testConnection());
    } catch (error) {
      res.status(400).json({ error: describeError(scrub(error)) });
    } finally {
      client?.close();
    }
  });

  RED.httpAdmin.post('/localbattery/set-password', write, async (req: Request, res: Response) => {
    let client: DeviceClient | undefined;
    let scrub = (error: unknown) => error;
    try {
      const body = bodyOf(req);
      ({ client, scrub } = editorClient(body, 'currentPassword'));
      // Anything but text (an object would become "[object Object]") is left for the password check to refuse.
      await client!.changePassword(typeof body.newPassword === 'string' ? body.newPassword : '');
      res.json({ result: true });
    } catch (error) {
      res.status(400).json({ error: describeError(scrub(error)) });
    } finally {
      client?.close();
    }
  });
}
