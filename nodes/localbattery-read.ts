/**
 * Read points: reads catalogue points (and extra addresses) from one device on input or on its own polling
 * interval, and sends them as one object (by name or address) or as one message per point.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage, NodeMessageInFlow } from 'node-red';
import { describeValue, readPointByAddress, type DecodedValue } from '../src/points/catalogue';
import { homeAssistantSensor, type HomeAssistantSensor } from '../src/points/home-assistant';
import { NUMBER_RULES, describeInputs, numberIn, parseDeadBand, pointList } from '../src/editor/inputs';
import { NO_DEAD_BAND, POLL_BACKOFF_MAX_MS, Poller, type PollOutcome, type Reading } from '../src/device/poller';
import { deviceOf, errorStatus, sessionOf, timeOfDay, keepErrorCodes, serveDevice, type Outgoing } from './shared';

type OutputMode = 'object' | 'address' | 'split';

interface ReadDef extends NodeDef {
  device: string;
  /** Catalogue names; extra addresses as numbers. */
  points: unknown;
  /** Polling interval in seconds; empty or 0 = no polling. */
  interval: string | number;
  output: OutputMode;
  topicPrefix: string;
  decode: boolean;
  onlyChange: boolean;
  /** Only on change: how far a numeric value must move to count as changed, e.g. "20" or "20, batterySoc=1". */
  deadband?: string;
  /** Only on change: seconds after which the current values are sent even without a change; empty or 0: never. */
  heartbeat?: string | number;
}

/** The most a failing poll waits; a property of the module so that a test can shorten it (nothing in the editor sets it). */
const pollBackoff = { maxMs: POLL_BACKOFF_MAX_MS };

/** The read node's inputs; the dead band is checked apart, as its point keys depend on the output mode. */
const readInputs = describeInputs({
  points: { setting: 'points', msg: 'points', fallback: [], parse: pointList },
  interval: { setting: 'interval', fallback: '', parse: numberIn(NUMBER_RULES.pollInterval) },
  heartbeat: { setting: 'heartbeat', fallback: '', parse: numberIn(NUMBER_RULES.heartbeat) },
});

function register(RED: NodeAPI) {
  function ReadNode(this: Node, def: ReadDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    keepErrorCodes(RED, node);
    const mode: OutputMode = def.output === 'address' || def.output === 'split' ? def.output : 'object';
    const topicPrefix = typeof def.topicPrefix === 'string' ? def.topicPrefix : '';
    const decode = def.decode === true;
    const onlyChange = def.onlyChange === true;
    const keyOf = (address: number): string =>
      mode === 'address' ? String(address) : (readPointByAddress(address)?.name ?? String(address));

    const device = deviceOf(RED, node, def.device, RED._('localbattery-read.errors.noDevice'));
    // Heartbeat and dead band count only with "only on change": elsewhere they are hidden in the editor.
    const deployed = readInputs.deploy(onlyChange ? def : { ...def, heartbeat: undefined });
    const configured: number[] = deployed.values.points ?? [];
    const intervalMs = Math.round((deployed.values.interval ?? 0) * 1000);
    const heartbeatMs = Math.round((deployed.values.heartbeat ?? 0) * 1000);
    let deadBand = NO_DEAD_BAND;
    let deadBandError: Error | undefined;
    try {
      if (onlyChange) deadBand = parseDeadBand(def.deadband, keyOf);
    } catch (error) {
      deadBandError = error as Error;
    }
    // Polling needs every setting; a message's msg.points stands in for missing or invalid points (readInputs).
    const configError = deployed.error ?? deadBandError;

    const output = (reading: Reading): number | string | DecodedValue => {
      if (!decode) return reading.value;
      const described = describeValue(reading.address, reading.value);
      return described.label === undefined ? reading.value : described;
    };

    /** Shows a read on the status and turns what it sends into messages (none when "only on change" finds nothing new). */
    function format(outcome: PollOutcome, msg: NodeMessage): NodeMessage[] {
      const { readings, sending, missing, newlyMissing } = outcome;
      if (newlyMissing.length > 0) node.warn(RED._('localbattery-read.warn.missing', { points: newlyMissing.join(', ') }));
      node.status({
        fill: readings.length > 0 ? 'green' : 'yellow',
        shape: onlyChange && outcome.changed === 0 ? 'ring' : 'dot',
        text: RED._(readings.length === 1 ? 'localbattery-read.status.readOne' : 'localbattery-read.status.read', {
          count: readings.length,
          time: timeOfDay(),
        }),
      });
      if (!sending) return [];

      if (mode === 'split') {
        // Copies before the first one is changed: the first point reuses the incoming msg.
        const messages = sending.map((reading, i) => ({ reading, out: i === 0 ? msg : RED.util.cloneMessage(msg) }));
        for (const { reading, out } of messages) {
          const unit = readPointByAddress(reading.address)?.unit;
          out.topic = topicPrefix + reading.key;
          out.payload = output(reading);
          out.address = reading.address;
          if (unit) out.unit = unit;
          else delete out.unit;
          // Each message its own list: a flow that changes one must not change the others.
          out.missing = [...missing];
        }
        return messages.map(({ out }) => out);
      }

      const payload: Record<string, unknown> = {};
      const units: Record<string, string> = {};
      const metadata: Record<
        string,
        { address: number; label?: string; unit?: string; category?: string; homeAssistant?: HomeAssistantSensor }
      > = {};
      for (const reading of sending) {
        const point = readPointByAddress(reading.address);
        payload[reading.key] = output(reading);
        if (point?.unit) units[reading.key] = point.unit;
        const homeAssistant = point && homeAssistantSensor(point);
        metadata[reading.key] = point
          ? {
              address: reading.address,
              label: point.label,
              ...(point.unit ? { unit: point.unit } : {}),
              category: point.category,
              ...(homeAssistant ? { homeAssistant } : {}),
            }
          : { address: reading.address };
      }
      msg.payload = payload;
      msg.units = units;
      msg.metadata = metadata;
      msg.missing = missing;
      return [msg];
    }

    // Split: every message on the one output. Otherwise there is one message, and [msg] sends it on the one output.
    const sendable = (messages: NodeMessage[]): Outgoing | undefined =>
      messages.length === 0 ? undefined : mode === 'split' ? [messages] : messages;

    const missingDevice = RED._('localbattery-read.errors.noDevice');
    const poller = new Poller(
      async (addresses, onStart) => sessionOf(life.session, device, missingDevice).read(addresses, { onStart }),
      {
        addresses: configured,
        intervalMs,
        keyOf,
        onlyChange,
        deadBand,
        heartbeatMs,
        perPoint: mode === 'split',
        backoffMaxMs: pollBackoff.maxMs,
      },
      {
        polled(outcome) {
          const msg: NodeMessage = { _msgid: RED.util.generateId() };
          try {
            const out = sendable(format(outcome, msg));
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
      },
    );
    node.on('close', () => poller.stop());

    async function handle(msg: NodeMessageInFlow): Promise<Outgoing | undefined> {
      if (deadBandError) throw deadBandError;
      const addresses = readInputs.forMessage(msg, deployed).points ?? configured;
      const outcome = await poller.read(addresses);
      return life.closed ? undefined : sendable(format(outcome, msg));
    }

    const life = serveDevice(node, device, missingDevice, handle);
    if (configError) {
      node.error(configError.message);
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-read.status.invalid') });
      // Unless msg.points can stand in, every message fails: the status keeps saying why, not the connection's.
      if (deadBandError || [...deployed.errors.keys()].some((input) => input !== 'points')) device?.leave(node);
    } else if (life.session) poller.start();
  }

  RED.nodes.registerType('localbattery-read', ReadNode);
}

// pollBackoff rides along for the outage test, which cannot wait minutes for the real back-off.
export = Object.assign(register, { pollBackoff });
