/**
 * Config node: one device (address and credentials). Holds the client with these credentials; every flow node of
 * the device opens its own session on it (closing the node drops its waiting work). All clients of one device share
 * its one request queue (src/scheduler.ts). Pushes the connection state to the users' status and serves the editor's
 * admin routes.
 */
import type { Node, NodeAPI, NodeDef, NodeStatus } from 'node-red';
import type { Request, Response } from 'express';
import { POWER_LIMIT, validatePowerLimit } from '../src/catalogue';
import type { AuthMode } from '../src/auth';
import { DEFAULTS, DeviceClient, type ClientOptions, type ClientSession, type ConnectionState } from '../src/client';
import { discover } from '../src/discovery';
import { ValidationError } from '../src/errors';
import { decimalNumber } from '../src/numbers';
import { NUMBER_RULES, describeInputs, editorCatalogueJson, numberIn } from '../src/inputs';
import { describeError } from './shared';

interface DeviceDef extends NodeDef {
  host: string;
  port: string | number;
  username: string;
  auth: string;
  namespace: string;
  minInterval: string | number;
  timeout: string | number;
  powerLimit: string | number;
}

interface DeviceCredentials {
  password?: string;
}

/** The editor shows this in place of a stored password it does not know. */
const STORED_PASSWORD = '__PWRD__';

/** The device settings, each checked by the rule the editor gets from the catalogue route. */
const deviceInputs = describeInputs({
  port: { setting: 'port', fallback: DEFAULTS.port, absent: isBlank, parse: numberIn(NUMBER_RULES.port) },
  minIntervalMs: {
    setting: 'minInterval',
    label: 'minimum interval',
    fallback: DEFAULTS.minIntervalMs,
    absent: isBlank,
    parse: numberIn(NUMBER_RULES.minInterval),
  },
  timeoutMs: {
    setting: 'timeout',
    label: 'time-out',
    fallback: DEFAULTS.timeoutMs,
    absent: isBlank,
    parse: numberIn(NUMBER_RULES.timeout),
  },
  powerLimit: {
    setting: 'powerLimit',
    label: 'power limit',
    fallback: POWER_LIMIT.default,
    absent: isBlank,
    parse: (value, field) => validatePowerLimit(decimalNumber(value) ?? value, field),
  },
});

function isBlank(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

function optionsFrom(settings: Partial<Record<keyof DeviceDef, unknown>>, password: string | undefined): ClientOptions {
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
    powerLimit: values.powerLimit,
  };
}

/** `${NAME}` as a whole value: Node-RED's form of an environment variable in node properties. */
const ENV_VAR = /^\$\{(\S+)\}$/;

export = function (RED: NodeAPI) {
  const util = RED.util as unknown as { getSetting(node: Node | null, name: string): unknown };
  const textOf = (value: unknown) => (typeof value === 'string' ? value : undefined);

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
    /** Each user's session, closed when the user closes or the configuration does. */
    const users = new Map<Node, ClientSession>();
    let client: DeviceClient | undefined;
    node.configError = undefined;

    try {
      client = new DeviceClient(optionsFrom(def, textOf(withEnv(node.credentials?.password, node))));
      client.on('state', (state: ConnectionState) => {
        const status = statusOf(state);
        for (const user of users.keys()) user.status(status);
      });
      client.on('namespace', (namespace: string) => node.log(RED._('localbattery-device.log.namespace', { namespace })));
      node.client = client;
    } catch (error) {
      node.configError = (error as Error).message;
      node.error(node.configError);
    }

    node.open = (user: Node): ClientSession | undefined => {
      if (!client) {
        user.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-device.status.invalid') });
        return undefined;
      }
      users.get(user)?.close();
      const session = client.session();
      users.set(user, session);
      if (client.state !== 'unknown' && client.state !== 'ok') user.status(statusOf(client.state));
      return session;
    };
    node.leave = (user: Node) => {
      users.get(user)?.close();
      users.delete(user);
    };

    // What still waits is rejected; no timer is left.
    node.on('close', (done: () => void) => {
      for (const session of users.values()) session.close();
      users.clear();
      client?.close();
      client = undefined;
      node.client = undefined;
      done();
    });
  }

  RED.nodes.registerType('localbattery-device', DeviceNode as unknown as Parameters<NodeAPI['nodes']['registerType']>[1], {
    credentials: { password: { type: 'password' } },
  });

  // Admin routes for the editor. The request bodies may carry passwords: never log them.
  const read = RED.auth.needsPermission('localbattery-device.read');
  const write = RED.auth.needsPermission('localbattery-device.write');

  RED.httpAdmin.get('/localbattery/catalogue', read, (_req: Request, res: Response) => {
    res.json(editorCatalogueJson());
  });

  RED.httpAdmin.post('/localbattery/discover', write, async (req: Request, res: Response) => {
    const warnings: string[] = [];
    const body = bodyOf(req);
    const listenMs = Math.min(Math.max(decimalNumber(body.listenMs) || 3000, 500), 15000);
    const target = typeof body.target === 'string' && body.target.trim() ? body.target.trim() : undefined;
    const port = body.port === undefined || body.port === '' ? undefined : (decimalNumber(body.port) ?? NaN);
    try {
      const devices = await discover({ target, port, listenMs, onWarning: (message) => warnings.push(message) });
      res.json({ devices, warnings });
    } catch (error) {
      // discover() rejects only for invalid options, i.e. a bad request.
      res.status(error instanceof ValidationError ? 400 : 500).json({ error: describeError(error) });
    }
  });

  /** The JSON body of an admin request; anything else counts as empty. */
  function bodyOf(req: Request): Record<string, unknown> {
    const body: unknown = req.body;
    return body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  }

  /** Settings from the editor, with the stored password of node `id` where the editor sent the placeholder. */
  function editorOptions(body: Record<string, unknown>, passwordField: string): ClientOptions {
    const deployed = typeof body.id === 'string' ? RED.nodes.getNode(body.id) : null;
    // Only a device configuration's own password: any other node's secret must not go to a host the request names.
    const own = deployed?.type === 'localbattery-device' ? deployed : null;
    let password: unknown = typeof body[passwordField] === 'string' ? body[passwordField] : '';
    if ((password === STORED_PASSWORD || password === '') && own) {
      password = (RED.nodes.getCredentials(own.id) as DeviceCredentials | undefined)?.password ?? '';
    }
    const settings = Object.fromEntries(Object.entries(body).map(([key, value]) => [key, withEnv(value, own)]));
    return optionsFrom(settings, textOf(withEnv(password, own)) ?? '');
  }

  // The editor's clients join the device's queue like any other, so they never overlap a running flow's requests.
  RED.httpAdmin.post('/localbattery/test', write, async (req: Request, res: Response) => {
    let client: DeviceClient | undefined;
    try {
      client = new DeviceClient(editorOptions(bodyOf(req), 'password'));
      res.json(await client.testConnection());
    } catch (error) {
      res.status(400).json({ error: describeError(error) });
    } finally {
      client?.close();
    }
  });

  RED.httpAdmin.post('/localbattery/set-password', write, async (req: Request, res: Response) => {
    let client: DeviceClient | undefined;
    try {
      const body = bodyOf(req);
      client = new DeviceClient(editorOptions(body, 'currentPassword'));
      // Anything but text (an object would become "[object Object]") is left for the password check to refuse.
      await client.changePassword(typeof body.newPassword === 'string' ? body.newPassword : '');
      res.json({ result: true });
    } catch (error) {
      res.status(400).json({ error: describeError(error) });
    } finally {
      client?.close();
    }
  });
};
