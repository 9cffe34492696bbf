/**
 * Discover node: on input, a scan for devices over UDP (spec E5), mDNS (field notes) or both, merged by address.
 * Output 1 gets one msg with every device found, output 2 one msg per device. Needs no config node. The settings
 * and the scan are src/flow/discover.ts.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from 'node-red';
import { Discoverer, type DiscoverDefinition, type ScanOptions } from '../src/flow/discover';
import { errorStatus, keepErrorCodes } from './shared';

export = function (RED: NodeAPI) {
  function DiscoverNode(this: Node, config: NodeDef & DiscoverDefinition) {
    RED.nodes.createNode(this, config);
    const node = this;
    keepErrorCodes(RED, node);
    const discoverer = new Discoverer(config);
    if (discoverer.configError) {
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-discover.status.invalid') });
      node.error(discoverer.configError.message);
    }

    node.on('input', (msg: NodeMessageInFlow, send, done) => {
      if (discoverer.configError) return done(discoverer.configError);
      if (discoverer.busy) return done(Object.assign(new Error(RED._('localbattery-discover.errors.busy')), { code: 'BUSY' }));
      let options: ScanOptions;
      try {
        options = discoverer.optionsFor(msg);
      } catch (error) {
        node.status(errorStatus(error));
        return done(error as Error);
      }
      node.status({ fill: 'blue', shape: 'dot', text: RED._('localbattery-discover.status.searching') });
      discoverer
        .run(options, (message) => node.warn(message))
        .then((devices) => {
          if (!devices) return;
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
          if (discoverer.isClosed) return;
          node.status(errorStatus(error));
          done(error as Error);
        });
    });

    // The aborted scan resolves once its socket is closed: finish closing only then, leaving no handle.
    node.on('close', (_removed: boolean, done: () => void) => void discoverer.close().then(() => done()));
  }

  RED.nodes.registerType('localbattery-discover', DiscoverNode);
};
