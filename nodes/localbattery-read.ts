/**
 * Read points: reads catalogue points (and extra addresses) from one device on input or on its own polling
 * interval, and sends them as one object (by name or address) or as one message per point.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage } from 'node-red';
import { describeValue, readPointByAddress, resolveReadAddresses, type DecodedValue } from '../src/catalogue';
import type { ReadResult } from '../src/client';
import { ValidationError } from '../src/errors';
import { decimalNumber } from '../src/numbers';
import { clientOf, deviceOf, errorStatus, timeOfDay } from './shared';

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
}

/** The device's minimum request interval is 1 s; above a day setInterval gains nothing (and overflows at ~24 days). */
const MIN_POLL_SECONDS = 1;
const MAX_POLL_SECONDS = 86400;
/** Like the inject node's "once" delay: the first poll waits until the rest of the flow has started. */
const FIRST_POLL_DELAY_MS = 100;

function pollIntervalMs(value: unknown): number {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) return 0;
  const seconds = decimalNumber(value);
  if (seconds === 0) return 0;
  if (seconds === undefined || seconds < MIN_POLL_SECONDS || seconds > MAX_POLL_SECONDS) {
    throw new ValidationError('interval', value, `empty or 0 (no polling), or ${MIN_POLL_SECONDS} to ${MAX_POLL_SECONDS} seconds`);
  }
  return Math.round(seconds * 1000);
}

/** msg.points: an array of names or addresses, or the same as a comma-separated string. */
function overrideAddresses(value: unknown): number[] {
  const list = typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter((s) => s !== '') : value;
  if (!Array.isArray(list)) {
    throw new ValidationError('msg.points', value, 'an array of read point names or addresses, or a comma-separated string of them');
  }
  return resolveReadAddresses(list, 'msg.points');
}

interface Reading {
  key: string;
  address: number;
  value: number | string;
}

export = function (RED: NodeAPI) {
  function ReadNode(this: Node, def: ReadDef) {
    RED.nodes.createNode(this, def);
    const node = this;
    const mode: OutputMode = def.output === 'address' || def.output === 'split' ? def.output : 'object';
    const topicPrefix = typeof def.topicPrefix === 'string' ? def.topicPrefix : '';
    const decode = def.decode === true;
    const onlyChange = def.onlyChange === true;

    const device = deviceOf(RED, node, def.device, RED._('localbattery-read.errors.noDevice'));
    let configError: Error | undefined;
    let configured: number[] = [];
    let intervalMs = 0;
    try {
      configured = resolveReadAddresses(Array.isArray(def.points) ? def.points : [], 'points');
      intervalMs = pollIntervalMs(def.interval);
    } catch (error) {
      configError = error as Error;
      node.error(configError.message);
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-read.status.invalid') });
    }

    let closed = false;
    /** A poll is waiting on the device: the next tick is skipped rather than queued. */
    let polling = false;
    let firstPoll: NodeJS.Timeout | undefined;
    let ticker: NodeJS.Timeout | undefined;
    /** Missing points already warned about in this deploy. */
    const warned = new Set<string>();
    /** Last value sent per key, for "only on change". */
    const lastSent = new Map<string, number | string>();

    const keyOf = (address: number): string =>
      mode === 'address' ? String(address) : readPointByAddress(address)?.name ?? String(address);

    const output = (reading: Reading): number | string | DecodedValue => {
      if (!decode) return reading.value;
      const described = describeValue(reading.address, reading.value);
      return described.label === undefined ? reading.value : described;
    };

    /** Turns a read result into the messages to send (none when "only on change" finds nothing new). */
    function format(result: ReadResult, addresses: number[], msg: NodeMessage): NodeMessage[] {
      const missing = result.missing.map(keyOf);
      const fresh = missing.filter((key) => !warned.has(key));
      if (fresh.length > 0) {
        for (const key of fresh) warned.add(key);
        node.warn(RED._('localbattery-read.warn.missing', { points: fresh.join(', ') }));
      }
      const readings: Reading[] = addresses
        .filter((address) => result.values.has(address))
        .map((address) => ({ key: keyOf(address), address, value: result.values.get(address)! }));
      const changed = readings.filter((r) => !lastSent.has(r.key) || lastSent.get(r.key) !== r.value);
      node.status({
        fill: readings.length > 0 ? 'green' : 'yellow',
        shape: onlyChange && changed.length === 0 ? 'ring' : 'dot',
        text: RED._(readings.length === 1 ? 'localbattery-read.status.readOne' : 'localbattery-read.status.read', {
          count: readings.length,
          time: timeOfDay(),
        }),
      });

      if (mode === 'split') {
        const sending = onlyChange ? changed : readings;
        // Copies before the first one is changed: the first point reuses the incoming msg.
        const messages = sending.map((reading, i) => ({ reading, out: i === 0 ? msg : RED.util.cloneMessage(msg) }));
        for (const { reading, out } of messages) {
          const unit = readPointByAddress(reading.address)?.unit;
          out.topic = topicPrefix + reading.key;
          out.payload = output(reading);
          out.address = reading.address;
          if (unit) out.unit = unit;
          else delete out.unit;
          out.missing = missing;
          lastSent.set(reading.key, reading.value);
        }
        return messages.map(({ out }) => out);
      }

      if (onlyChange && changed.length === 0) return [];
      const payload: Record<string, unknown> = {};
      const units: Record<string, string> = {};
      const metadata: Record<string, { address: number; label?: string; unit?: string; category?: string }> = {};
      for (const reading of readings) {
        const point = readPointByAddress(reading.address);
        payload[reading.key] = output(reading);
        if (point?.unit) units[reading.key] = point.unit;
        metadata[reading.key] = point
          ? { address: reading.address, label: point.label, ...(point.unit ? { unit: point.unit } : {}), category: point.category }
          : { address: reading.address };
        lastSent.set(reading.key, reading.value);
      }
      msg.payload = payload;
      msg.units = units;
      msg.metadata = metadata;
      msg.missing = missing;
      return [msg];
    }

    const read = async (addresses: number[]): Promise<ReadResult> => clientOf(device!).read(addresses);
    // Split: every message on the one output. Otherwise there is one message, and [msg] sends it on the one output.
    const sendable = (messages: NodeMessage[]) => (mode === 'split' ? [messages] : messages);

    node.on('input', (msg, send, done) => {
      let addresses: number[];
      try {
        if (!device) throw new Error(RED._('localbattery-read.errors.noDevice'));
        if (configError) throw configError;
        const override = (msg as NodeMessage).points;
        addresses = override === undefined || override === null ? configured : overrideAddresses(override);
      } catch (error) {
        node.status(errorStatus(error));
        done(error as Error);
        return;
      }
      read(addresses)
        .then((result) => {
          if (closed) return;
          const messages = format(result, addresses, msg);
          if (messages.length > 0) send(sendable(messages));
          done();
        })
        .catch((error: Error) => {
          if (closed) return;
          node.status(errorStatus(error));
          done(error);
        });
    });

    function poll(): void {
      if (closed || polling) return;
      polling = true;
      const msg: NodeMessage = { _msgid: RED.util.generateId() };
      read(configured)
        .then((result) => {
          if (closed) return;
          const messages = format(result, configured, msg);
          if (messages.length > 0) node.send(sendable(messages));
        })
        .catch((error: Error) => {
          if (closed) return;
          node.status(errorStatus(error));
          // With a msg, a Catch node sees the failure even though no message came in.
          node.error(error, msg);
        })
        .finally(() => {
          polling = false;
        });
    }

    // A node that cannot read keeps its "invalid configuration" status instead of the connection's.
    if (!configError) device?.register(node);
    if (device?.client && !configError && intervalMs > 0) {
      firstPoll = setTimeout(poll, FIRST_POLL_DELAY_MS);
      ticker = setInterval(poll, intervalMs);
    }

    node.on('close', (_removed: boolean, done: () => void) => {
      closed = true;
      clearTimeout(firstPoll);
      clearInterval(ticker);
      device?.deregister(node);
      done();
    });
  }

  RED.nodes.registerType('localbattery-read', ReadNode);
};
