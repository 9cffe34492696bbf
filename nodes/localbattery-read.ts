/**
 * Read points: reads catalogue points (and extra addresses) from one device on input or on its own polling
 * interval, and sends them as one object (by name or address) or as one message per point.
 */
import type { Node, NodeAPI, NodeDef, NodeMessage } from 'node-red';
import { describeValue, readPointByAddress, type DecodedValue } from '../src/catalogue';
import { homeAssistantSensor, type HomeAssistantSensor } from '../src/home-assistant';
import type { ReadResult } from '../src/client';
import { DeviceError } from '../src/errors';
import { NUMBER_RULES, describeInputs, numberIn, parseDeadBand, pointList, type DeadBand } from '../src/inputs';
import { deviceOf, errorStatus, sessionOf, timeOfDay, keepErrorCodes } from './shared';

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

/** Like the inject node's "once" delay: the first poll waits until the rest of the flow has started. */
const FIRST_POLL_DELAY_MS = 100;

/**
 * The first moment at or after `time` that is a whole multiple of `stepMs` on the clock. Every node ticks at such
 * moments, so nodes with the same interval (or one a multiple of the other) poll in the same instant and their reads
 * merge into one request instead of trailing each other by a few milliseconds.
 */
function alignedTime(time: number, stepMs: number): number {
  return Math.ceil(time / stepMs) * stepMs;
}

/**
 * While polls fail, the next one waits twice as long as the last, up to `maxMs` (never less than the interval).
 * A property of the module so that a test can shorten it; nothing in the editor sets it.
 */
const pollBackoff = { maxMs: 60000 };

/** The read node's inputs; the dead band is checked apart, as its point keys depend on the output mode. */
const readInputs = describeInputs({
  points: { setting: 'points', msg: 'points', fallback: [], parse: pointList },
  interval: { setting: 'interval', fallback: '', parse: numberIn(NUMBER_RULES.pollInterval) },
  heartbeat: { setting: 'heartbeat', fallback: '', parse: numberIn(NUMBER_RULES.heartbeat) },
});

interface Reading {
  key: string;
  address: number;
  value: number | string;
}

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
    let configError: Error | undefined = deployed.error;
    const configured: number[] = deployed.values.points ?? [];
    const intervalMs = Math.round((deployed.values.interval ?? 0) * 1000);
    const heartbeatMs = Math.round((deployed.values.heartbeat ?? 0) * 1000);
    let deadBand: DeadBand = { all: 0, byPoint: new Map() };
    try {
      if (configError) throw configError;
      if (onlyChange) deadBand = parseDeadBand(def.deadband, keyOf);
    } catch (error) {
      configError = error as Error;
      node.error(configError.message);
      node.status({ fill: 'red', shape: 'ring', text: RED._('localbattery-read.status.invalid') });
    }

    let closed = false;
    let nextPoll: NodeJS.Timeout | undefined;
    /** Polls of this node not yet answered, and whether one of them still waits for its request. */
    let pollsOpen = 0;
    let pollWaiting = false;
    /** Polls failed in a row; while above 0 polling backs off. */
    let failedPolls = 0;
    /** The failure being reported: the first poll failure of an outage, or one with another code. */
    let outage: { code: string; since: number } | undefined;
    /** When the last message went out, for the heartbeat. */
    let lastSentAt = 0;
    /** Missing points already warned about in this deploy. */
    const warned = new Set<string>();
    /** Last value sent per key, for "only on change". */
    const lastSent = new Map<string, number | string>();

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
      const changed = readings.filter((r) => hasChanged(r));
      // With nothing changed for the heartbeat's time, the current values go out all the same.
      const beat = heartbeatMs > 0 && Date.now() - lastSentAt >= heartbeatMs;
      node.status({
        fill: readings.length > 0 ? 'green' : 'yellow',
        shape: onlyChange && changed.length === 0 ? 'ring' : 'dot',
        text: RED._(readings.length === 1 ? 'localbattery-read.status.readOne' : 'localbattery-read.status.read', {
          count: readings.length,
          time: timeOfDay(),
        }),
      });

      if (mode === 'split') {
        const sending = onlyChange && !beat ? changed : readings;
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
          lastSent.set(reading.key, reading.value);
        }
        if (messages.length > 0) lastSentAt = Date.now();
        return messages.map(({ out }) => out);
      }

      if (onlyChange && changed.length === 0 && !beat) return [];
      lastSentAt = Date.now();
      const payload: Record<string, unknown> = {};
      const units: Record<string, string> = {};
      const metadata: Record<
        string,
        { address: number; label?: string; unit?: string; category?: string; homeAssistant?: HomeAssistantSensor }
      > = {};
      for (const reading of readings) {
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
        lastSent.set(reading.key, reading.value);
      }
      msg.payload = payload;
      msg.units = units;
      msg.metadata = metadata;
      msg.missing = missing;
      return [msg];
    }

    /** A value differs from the one sent last by more than its dead band (any difference for text). */
    function hasChanged(reading: Reading): boolean {
      if (!lastSent.has(reading.key)) return true;
      const before = lastSent.get(reading.key);
      if (typeof reading.value !== 'number' || typeof before !== 'number') return before !== reading.value;
      return Math.abs(reading.value - before) > (deadBand.byPoint.get(reading.key) ?? deadBand.all);
    }

    const missingDevice = RED._('localbattery-read.errors.noDevice');
    // A node that cannot read keeps its "invalid configuration" status instead of the connection's.
    const session = configError ? undefined : device?.open(node);

    const read = async (addresses: number[], onStart?: () => void): Promise<ReadResult> => {
      const result = await sessionOf(session, device, missingDevice).read(addresses, { onStart });
      if (!closed) answered();
      return result;
    };

    /** The device answers: after an outage, says so once and polls at the interval again. */
    function answered(): void {
      if (outage) {
        node.log(RED._('localbattery-read.log.back', { seconds: Math.round((Date.now() - outage.since) / 1000), code: outage.code }));
      }
      outage = undefined;
      failedPolls = 0;
    }

    /** A failed poll: reported (status, Catch) only when an outage starts or its cause changes. */
    function pollFailed(error: Error, msg: NodeMessage): void {
      failedPolls++;
      const code = error instanceof DeviceError ? error.code : 'ERROR';
      if (outage?.code === code) return;
      outage = { code, since: outage?.since ?? Date.now() };
      node.status(errorStatus(error));
      // With a msg, a Catch node sees the failure even though no message came in.
      node.error(error, msg);
    }

    /** The interval, doubled for every failed poll in a row up to pollBackoff.maxMs. */
    function pollDelayMs(): number {
      if (failedPolls === 0) return intervalMs;
      return Math.max(intervalMs, Math.min(pollBackoff.maxMs, intervalMs * 2 ** failedPolls));
    }

    // Split: every message on the one output. Otherwise there is one message, and [msg] sends it on the one output.
    const sendable = (messages: NodeMessage[]) => (mode === 'split' ? [messages] : messages);

    node.on('input', (msg, send, done) => {
      let addresses: number[];
      try {
        if (!device) throw new Error(missingDevice);
        if (configError) throw configError;
        addresses = readInputs.forMessage(msg, deployed).points ?? configured;
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

    /**
     * A poll tick. The tick after it is due one interval later whether or not this poll has been answered: a poll
     * that finds the previous one still being answered waits in the queue behind it, so the device never idles
     * between them; only a tick that finds one of this node's polls still waiting for its request is skipped (the
     * waiting one will bring the fresh values). While polls fail, the next waits for the last one and backs off.
     */
    function tick(): void {
      nextPoll = undefined;
      if (closed) return;
      if (!pollWaiting) poll();
      if (failedPolls > 0) return;
      scheduleTick(intervalMs);
    }

    function poll(): void {
      const msg: NodeMessage = { _msgid: RED.util.generateId() };
      pollsOpen++;
      pollWaiting = true;
      let waiting = true;
      const started = () => {
        waiting = false;
        pollWaiting = false;
      };
      read(configured, started)
        .then((result) => {
          if (closed) return;
          const messages = format(result, configured, msg);
          if (messages.length > 0) node.send(sendable(messages));
        })
        .catch((error: Error) => {
          if (!closed) pollFailed(error, msg);
        })
        .finally(() => {
          pollsOpen--;
          // Failed before its request (queue full): it no longer waits.
          if (waiting) pollWaiting = false;
          if (closed || pollsOpen > 0) return;
          if (failedPolls > 0) {
            // Backing off: the next poll waits for the last one, and longer with each failure.
            clearTimeout(nextPoll);
            scheduleTick(pollDelayMs());
          } else if (nextPoll === undefined) {
            // Back after an outage: the ticks resume.
            scheduleTick(intervalMs);
          }
        });
    }

    /** The next tick at least a little and at most `delayMs` from now, on the clock's grid of the interval. */
    function scheduleTick(delayMs: number): void {
      const now = Date.now();
      nextPoll = setTimeout(tick, alignedTime(now + Math.max(1, delayMs - intervalMs + 1), intervalMs) - now);
    }

    // The nodes of one deploy start within a few ms of each other: their first polls meet on a 100 ms boundary.
    if (session && intervalMs > 0)
      nextPoll = setTimeout(tick, alignedTime(Date.now() + FIRST_POLL_DELAY_MS, FIRST_POLL_DELAY_MS) - Date.now());

    node.on('close', (_removed: boolean, done: () => void) => {
      closed = true;
      clearTimeout(nextPoll);
      device?.leave(node);
      done();
    });
  }

  RED.nodes.registerType('localbattery-read', ReadNode);
}

// pollBackoff rides along for the outage test, which cannot wait minutes for the real back-off.
export = Object.assign(register, { pollBackoff });
