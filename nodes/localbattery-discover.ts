/**
 * Discover node: on input, a scan for devices over UDP (spec E5), mDNS (field notes) or both, merged by address.
 * Output 1 gets one msg with every device found, output 2 one msg per device. Needs no config node.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from 'node-red';
import {
  DEFAULT_LISTEN_MS,
  DEFAULT_METHOD,
  DEVICE_PORT,
  DISCOVERY_METHODS,
  LOCAL_PORT,
  discoverDevices,
  type DiscoveryMethod,
  type DiscoveryOptions,
} from '../src/discovery/discovery';
import { NUMBER_RULES, describeInputs, discoveryTarget, numberIn, oneOf, type InputValues } from '../src/editor/inputs';
import { errorStatus, keepErrorCodes } from './shared';

interface DiscoverDef extends NodeDef {
  target?: string;
  listenTime?: string | number;
  port?: string | number;
  localPort?: string | number;
  method?: string;
}

const isBlank = (value: unknown) => value === undefined || value === '';

/** Settings, and what a message may override; msg.target "" asks for a broadcast. */
const discoverInputs = describeInputs({
  target: { setting: 'target', msg: 'target', fallback: '', absent: (value) => value === undefined, parse: discoveryTarget },
  listenTime: {
    setting: 'listenTime',
    label: 'listen time',
    msg: 'listenTime',
    fallback: DEFAULT_LISTEN_MS / 1000,
    absent: (value) => value === undefined,
    parse: numberIn(NUMBER_RULES.listenTime),
  },
  port: { setting: 'port', label: 'device port', fallback: DEVICE_PORT, absent: isBlank, parse: numberIn(NUMBER_RULES.port) },
  localPort: { setting: 'localPort', label: 'local port', fallback: LOCAL_PORT, absent: isBlank, parse: numberIn(NUMBER_RULES.localPort) },
  // Nodes saved before mDNS existed have no method: they get the default, both.
  method: { setting: 'method', msg: 'method', fallback: DEFAULT_METHOD, absent: isBlank, parse: oneOf(DISCOVERY_METHODS) },
});

function optionsOf(values: InputValues<typeof discoverInputs.specs>): DiscoveryOptions & { method: DiscoveryMethod } {
  return {
    method: values.method ?? DEFAULT_METHOD,
    target: values.target || undefined,
    listenMs: Math.round((values.listenTime ?? DEFAULT_LISTEN_MS / 1000) * 1000),
    port: values.port,
    localPort: values.localPort,
  };
}

export = function (RED: NodeAPI) {
  function DiscoverNode(this: Node, config: DiscoverDef) {
    RED.nodes.createNode(this, config);
    const node = this;
    keepErrorCodes(RED, node);
    const deployed = discoverInputs.deploy(config);
    const configError = deployed.error;
    if (configError) {
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-discover.status.invalid') });
      node.error(configError.message);
    }

    let scan: Promise<void> | undefined;
    let abort: AbortController | undefined;
    let closed = false;

    node.on('input', (msg: NodeMessageInFlow & { target?: unknown; listenTime?: unknown; method?: unknown }, send, done) => {
      if (configError) {
        done(configError);
        return;
      }
      // One scan at a time: a second one would bind the same local ports and see the first one's answers.
      if (scan) {
        done(Object.assign(new Error(RED._('localbattery-discover.errors.busy')), { code: 'BUSY' }));
        return;
      }
      let options: ReturnType<typeof optionsOf>;
      try {
        options = optionsOf(discoverInputs.forMessage(msg, deployed));
      } catch (error) {
        node.status(errorStatus(error));
        done(error as Error);
        return;
      }
      const controller = new AbortController();
      abort = controller;
      node.status({ fill: 'blue', shape: 'dot', text: RED._('localbattery-discover.status.searching') });
      scan = discoverDevices({
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
