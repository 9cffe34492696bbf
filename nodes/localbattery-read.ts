/**
 * Read points: reads catalogue points (and extra addresses) from one device on input or on its own polling
 * interval, and sends them as one object (by name or address) or as one message per point. The settings and
 * what a read sends are src/flow/read.ts; this node glues them to messages, status and the shared client.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from 'node-red';
import { Poller, type PollOutcome, type PollerEvents } from '../src/device/poller';
import { ReadSettings, pollBackoff, type ReadDefinition } from '../src/flow/read';
import { deviceOf, errorStatus, sessionOf, timeOfDay, keepErrorCodes, serveDevice, type Outgoing } from './shared';

type ReadDef = NodeDef & ReadDefinition & { device: string };

/** Shows a read on the node's status and turns what it sends into messages (none when "only on change" finds nothing new). */
function formatter(RED: NodeAPI, node: Node, settings: ReadSettings) {
  return function format(outcome: PollOutcome, msg: NodeMessage): Outgoing | undefined {
    const { readings, newlyMissing } = outcome;
    if (newlyMissing.length > 0) node.warn(RED._('localbattery-read.warn.missing', { points: newlyMissing.join(', ') }));
    const count = readings.length;
    node.status({
      fill: count > 0 ? 'green' : 'yellow',
      shape: settings.onlyChange && outcome.changed === 0 ? 'ring' : 'dot',
      text: RED._(count === 1 ? 'localbattery-read.status.readOne' : 'localbattery-read.status.read', { count, time: timeOfDay() }),
    });
    // Copies before the first one is changed: the first message reuses the incoming msg.
    const fields = settings.messages(outcome);
    const messages = fields.map((_, i) => (i === 0 ? msg : RED.util.cloneMessage(msg)));
    fields.forEach((set, i) => {
      const out = messages[i] as Record<string, unknown>;
      for (const [key, value] of Object.entries(set)) {
        if (value === undefined) delete out[key];
        else out[key] = value;
      }
    });
    // Split: every message on the one output. Otherwise there is one message, and [msg] sends it on the one output.
    return messages.length === 0 ? undefined : settings.mode === 'split' ? [messages] : messages;
  };
}

/** What the node does with what its poller reports: sends a read, shows and reports a failure, logs a return. */
function pollEvents(RED: NodeAPI, node: Node, format: ReturnType<typeof formatter>): PollerEvents {
  return {
    polled(outcome) {
      const msg: NodeMessage = { _msgid: RED.util.generateId() };
      try {
        const out = format(outcome, msg);
        if (out) node.send(out);
      } catch (error) {
        node.error(error, msg);
      }
    },
    failed(error) {
      node.status(errorStatus(error));
      // With a msg, a Catch node sees the failure even though no message came in.
      node.error(error, { _msgid: RED.util.generateId() });
    },
    back(ms, code) {
      node.log(RED._('localbattery-read.log.back', { seconds: Math.round(ms / 1000), code }));
    },
    warn(error) {
      node.warn(error.message);
    },
  };
}

function register(RED: NodeAPI) {
  function ReadNode(this: Node, def: ReadDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    keepErrorCodes(RED, node);
    const missingDevice = RED._('localbattery-read.errors.noDevice');
    const device = deviceOf(RED, node, def.device, missingDevice);
    const settings = new ReadSettings(def);
    const format = formatter(RED, node, settings);
    const poller = new Poller(
      async (addresses, onStart) => sessionOf(life.session, device, missingDevice).read(addresses, { onStart }),
      settings.poller,
      pollEvents(RED, node, format),
    );
    node.on('close', () => poller.stop());

    const life = serveDevice(node, device, missingDevice, async (msg: NodeMessageInFlow): Promise<Outgoing | undefined> => {
      const outcome = await poller.read(settings.addressesFor(msg), settings.keyOfFor(msg));
      return life.closed ? undefined : format(outcome, msg);
    });
    if (settings.configError) {
      node.error(settings.configError.message);
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-read.status.invalid') });
      // Unless msg.points can stand in, every message fails: the status keeps saying why, not the connection's.
      if (settings.messageError) device?.leave(node);
    } else if (life.session) poller.start();
  }

  RED.nodes.registerType('localbattery-read', ReadNode);
}

// pollBackoff rides along for the outage test, which cannot wait minutes for the real back-off.
export = Object.assign(register, { pollBackoff });
