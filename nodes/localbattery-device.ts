/**
 * Config node: one device (address and credentials). Holds the shared client that every flow node of
 * this device uses, pushes the connection state to their status, and serves the editor's admin routes.
 */
import type { Node, NodeAPI, NodeDef, NodeStatus } from 'node-red';
import type { Request, Response } from 'express';
import { POWER_LIMIT, validatePowerLimit } from '../src/catalogue';
import { ClientPool, type Lease } from '../src/client-pool';
import type { AuthMode } from '../src/auth';
import { DEFAULTS, type ClientOptions, type ConnectionState } from '../src/client';
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

const pool = new ClientPool();

/** The device settings, each checked by the rule the editor gets from the catalogue route. */
const deviceInputs = describeInputs({
  port: { setting: 'port', fallback: DEFAULTS.port, absent: isBlank, parse: numberIn(NUMBER_RULES.port) },
  minIntervalMs: { setting: 'minInterval', label: 'minimum interval', fallback: DEFAULTS.minIntervalMs, absent: isBlank, parse: numberIn(NUMBER_RULES.minInterval) },
  timeoutMs: { setting: 'timeout', label: 'time-out', fallback: DEFAULTS.timeoutMs, absent: isBlank, parse: numberIn(NUMBER_RULES.timeout) },
  powerLimit: { setting: 'powerLimit', label: 'power limit', fallback: POWER_LIMIT.default, absent: isBlank, parse: (value, field) => validatePowerLimit(decimalNumber(value) ?? value, field) },
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
    const users = new Set<Node>();
    let options: ClientOptions | undefined;
    let lease: Lease | undefined;
    node.configError = undefined;
    node.client = undefined;

    const onState = (state: ConnectionState) => {
      const status = statusOf(state);
      for (const user of users) user.status(status);
    };
    const onNamespace = (namespace: string) => node.log(RED._('localbattery-device.log.namespace', { namespace }));
    const acquire = () => {
      if (lease || !options) return;
      lease = pool.acquire(options);
      lease.client.on('state', onState);
      lease.client.on('namespace', onNamespace);
      node.client = lease.client;
    };
    // Closes the client when no node uses it any more: what still waits is rejected, no timer is left.
    const release = () => {
      lease?.client.off('state', onState);
      lease?.client.off('namespace', onNamespace);
      lease?.release();
      lease = undefined;
      node.client = undefined;
    };

    try {
      options = optionsFrom(def, textOf(withEnv(node.credentials?.password, node)));
      acquire();
      if (pool.clientsFor(options.host, options.port) > 1) node.warn(RED._('localbattery-device.warn.sharedDevice', { host: options.host }));
    } catch (error) {
      options = undefined;
      node.configError = (error as Error).message;
      node.error(node.configError);
    }

    node.register = (user: Node) => {
      users.add(user);
      acquire();
      if (node.configError) user.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-device.status.invalid') });
      else if (lease && lease.client.state !== 'unknown' && lease.client.state !== 'ok') user.status(statusOf(lease.client.state));
    };
    node.deregister = (user: Node) => {
      users.delete(user);
      if (users.size === 0) release();
    };

    node.on('close', (done: () => void) => {
      users.clear();
      release();
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
    const port = body.port === undefined || body.port === '' ? undefined : decimalNumber(body.port) ?? NaN;
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

  RED.httpAdmin.post('/localbattery/test', write, async (req: Request, res: Response) => {
    let lease: Lease | undefined;
    try {
      lease = pool.acquire(editorOptions(bodyOf(req), 'password'));
      res.json(await lease.client.testConnection());
    } catch (error) {
      res.status(400).json({ error: describeError(error) });
    } finally {
      lease?.release();
    }
  });

  RED.httpAdmin.post('/localbattery/set-password', write, async (req: Request, res: Response) => {
    let lease: Lease | undefined;
    try {
      const body = bodyOf(req);
      lease = pool.acquire(editorOptions(body, 'currentPassword'));
      // Anything but text (an object would become "[object Object]") is left for the password check to refuse.
      await lease.client.changePassword(typeof body.newPassword === 'string' ? body.newPassword : '');
      res.json({ result: true });
    } catch (error) {
      res.status(400).json({ error: describeError(error) });
    } finally {
      lease?.release();
    }
  });
};
