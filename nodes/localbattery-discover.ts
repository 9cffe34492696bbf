/**
 * Discover node: on input, a UDP scan for devices (spec E5). Output 1 gets one msg with every device found,
 * output 2 one msg per device. Needs no config node.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from 'node-red';
import { DEVICE_PORT, LOCAL_PORT, discover, type DiscoveryOptions } from '../src/discovery';
import { ValidationError } from '../src/errors';
import { decimalNumber } from '../src/numbers';
import { errorStatus, keepErrorCodes } from './shared';

interface DiscoverDef extends NodeDef {
  target?: string;
  listenTime?: string | number;
  port?: string | number;
  localPort?: string | number;
}

/** Listen time in seconds: answers come within a second or two; longer only blocks the flow. */
const LISTEN_MIN_S = 0.5;
const LISTEN_MAX_S = 60;
const LISTEN_DEFAULT_S = 3;

function listenMsOf(value: unknown, field: string): number {
  const seconds = decimalNumber(value);
  if (seconds === undefined || seconds < LISTEN_MIN_S || seconds > LISTEN_MAX_S) {
    throw new ValidationError(field, value, `a number of seconds from ${LISTEN_MIN_S} to ${LISTEN_MAX_S}`);
  }
  return Math.round(seconds * 1000);
}

function portOf(value: unknown, fallback: number, field: string, min: number): number {
  if (value === undefined || value === '') return fallback;
  const port = decimalNumber(value);
  if (port === undefined || !Number.isInteger(port) || port < min || port > 65535) throw new ValidationError(field, value, `an integer from ${min} to 65535`);
  return port;
}

/** '' (or nothing) means broadcast. */
function targetOf(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new ValidationError(field, value, 'an IP address or host name, or empty for broadcast');
  return value.trim() || undefined;
}

export = function (RED: NodeAPI) {
  function DiscoverNode(this: Node, config: DiscoverDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    keepErrorCodes(RED, node);
    let settings: Required<Pick<DiscoveryOptions, 'port' | 'localPort' | 'listenMs'>> & { target?: string };
    let configError: Error | undefined;
    try {
      settings = {
        target: targetOf(config.target ?? '', 'target'),
        listenMs: listenMsOf(config.listenTime ?? LISTEN_DEFAULT_S, 'listen time'),
        port: portOf(config.port, DEVICE_PORT, 'device port', 1),
        localPort: portOf(config.localPort, LOCAL_PORT, 'local port', 0),
      };
    } catch (error) {
      configError = error as Error;
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-discover.status.invalid') });
      node.error(configError.message);
    }

    let scan: Promise<void> | undefined;
    let abort: AbortController | undefined;
    let closed = false;

    node.on('input', (msg: NodeMessageInFlow & { target?: unknown; listenTime?: unknown }, send, done) => {
      if (configError) {
        done(configError);
        return;
      }
      // One scan at a time: a second one would bind the same local port and see the first one's answers.
      if (scan) {
        done(Object.assign(new Error(RED._('localbattery-discover.errors.busy')), { code: 'BUSY' }));
        return;
      }
      let options: DiscoveryOptions;
      try {
        options = {
          ...settings,
          target: msg.target === undefined ? settings.target : targetOf(msg.target, 'msg.target'),
          listenMs: msg.listenTime === undefined ? settings.listenMs : listenMsOf(msg.listenTime, 'msg.listenTime'),
        };
      } catch (error) {
        node.status(errorStatus(error));
        done(error as Error);
        return;
      }
      const controller = new AbortController();
      abort = controller;
      node.status({ fill: 'blue', shape: 'dot', text: RED._('localbattery-discover.status.searching') });
      scan = discover({
        ...options,
        signal: controller.signal,
        onWarning: (message) => {
          if (!closed) node.warn(message);
        },
      })
        .then((devices) => {
          if (closed) return;
          node.status(
            devices.length > 0
              ? { fill: 'green', shape: 'dot', text: RED._('localbattery-discover.status.found', { count: devices.length }) }
              : { fill: 'yellow', shape: 'ring', text: RED._('localbattery-discover.status.none') },
          );
          const each = devices.map((device) => {
            const copy = RED.util.cloneMessage(msg) as NodeMessage;
            copy.payload = { ...device };
            return copy;
          });
          msg.payload = devices;
          send([msg, each]);
          done();
        })
        .catch((error: unknown) => {
          if (closed) return;
          node.status(errorStatus(error));
          done(error as Error);
        })
        .finally(() => {
          scan = undefined;
          abort = undefined;
        });
    });

    node.on('close', (_removed: boolean, done: () => void) => {
      closed = true;
      abort?.abort();
      // The aborted scan resolves once its socket is closed: finish closing only then, leaving no handle.
      void (scan ?? Promise.resolve()).then(() => done());
    });
  }

  RED.nodes.registerType('localbattery-discover', DiscoverNode);
};
