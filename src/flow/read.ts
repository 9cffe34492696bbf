/**
 * What the read node decides, without Node-RED: its settings (points, polling, only on change, dead band,
 * heartbeat) and the fields of the messages a read sends, as one object (by name or address) or one per point.
 */
import { describeValue, modelReadKeys, modelReadPointByName, readPointByAddress, type DecodedValue } from '../points/catalogue';
import { homeAssistantSensor, type HomeAssistantSensor } from '../points/home-assistant';
import { NUMBER_RULES, describeInputs, numberIn, parseDeadBand, pointList, pointReferences } from '../editor/inputs';
import { NO_DEAD_BAND, POLL_BACKOFF_MAX_MS, type PollOutcome, type PollerSettings, type Reading } from '../device/poller';

export type OutputMode = 'object' | 'address' | 'split';

/** The read node's settings as the editor stores them. */
export interface ReadDefinition {
  /** Catalogue names; extra addresses as numbers. */
  points?: unknown;
  /** Polling interval in seconds; empty or 0 = no polling. */
  interval?: unknown;
  output?: unknown;
  topicPrefix?: unknown;
  decode?: unknown;
  onlyChange?: unknown;
  /** Only on change: how far a numeric value must move to count as changed, e.g. "20" or "20, batterySoc=1". */
  deadband?: unknown;
  /** Only on change: seconds after which the current values are sent even without a change; empty or 0: never. */
  heartbeat?: unknown;
}

/** The most a failing poll waits; an object so that a test can shorten it (nothing in the editor sets it). */
export const pollBackoff = { maxMs: POLL_BACKOFF_MAX_MS };

/** The read node's inputs; the dead band is checked apart, as its point keys depend on the output mode. */
const readInputs = describeInputs({
  points: { setting: 'points', msg: 'points', fallback: [], parse: pointList },
  interval: { setting: 'interval', fallback: '', parse: numberIn(NUMBER_RULES.pollInterval) },
  heartbeat: { setting: 'heartbeat', fallback: '', parse: numberIn(NUMBER_RULES.heartbeat) },
});

type Metadata = { address: number; label?: string; unit?: string; category?: string; homeAssistant?: HomeAssistantSensor };

/** The fields of one message; an undefined field is one to remove from the message. */
export type MessageFields = Record<string, unknown>;

export class ReadSettings {
  readonly mode: OutputMode;
  readonly onlyChange: boolean;
  /** Why polling cannot run (a message's msg.points can still stand in for missing or invalid points). */
  readonly configError: Error | undefined;
  /** Why every message fails too: a setting other than the points is wrong. */
  readonly messageError: Error | undefined;
  readonly poller: PollerSettings;
  private readonly topicPrefix: string;
  private readonly decode: boolean;
  private readonly deployed: ReturnType<typeof readInputs.deploy>;
  private readonly deadBandError: Error | undefined;

  constructor(def: ReadDefinition) {
    this.mode = def.output === 'address' || def.output === 'split' ? def.output : 'object';
    this.keyOf = this.keysFor(def.points);
    this.topicPrefix = typeof def.topicPrefix === 'string' ? def.topicPrefix : '';
    this.decode = def.decode === true;
    this.onlyChange = def.onlyChange === true;
    // Heartbeat and dead band count only with "only on change": elsewhere they are hidden in the editor.
    this.deployed = readInputs.deploy(this.onlyChange ? def : { ...def, heartbeat: undefined });
    let deadBand = NO_DEAD_BAND;
    try {
      if (this.onlyChange) deadBand = parseDeadBand(def.deadband, this.keyOf);
    } catch (error) {
      this.deadBandError = error as Error;
    }
    this.configError = this.deployed.error ?? this.deadBandError;
    const pointsOnly = [...this.deployed.errors.keys()].every((input) => input === 'points');
    this.messageError = this.deadBandError ?? (pointsOnly ? undefined : this.configError);
    const { values } = this.deployed;
    this.poller = {
      addresses: values.points ?? [],
      intervalMs: Math.round((values.interval ?? 0) * 1000),
      keyOf: this.keyOf,
      onlyChange: this.onlyChange,
      deadBand,
      heartbeatMs: Math.round((values.heartbeat ?? 0) * 1000),
      perPoint: this.mode === 'split',
      backoffMaxMs: pollBackoff.maxMs,
    };
  }

  /** The key a value of the configured points goes out under (see keysFor). */
  readonly keyOf: (address: number) => string;

  /**
   * The keys of a read of `points`: the address, or the point name where the catalogue knows it; the name of a model
   * read point (gridPower) that `points` name for each of its addresses.
   */
  private keysFor(points: unknown): (address: number) => string {
    const references = pointReferences(points);
    const modelKeys = this.mode === 'address' || !Array.isArray(references) ? new Map<number, string>() : modelReadKeys(references);
    return (address) =>
      this.mode === 'address' ? String(address) : (modelKeys.get(address) ?? readPointByAddress(address)?.name ?? String(address));
  }

  /** The addresses a message asks for: its msg.points, else the configured ones. */
  addressesFor(msg: object): number[] {
    if (this.deadBandError) throw this.deadBandError;
    return readInputs.forMessage(msg, this.deployed).points ?? this.poller.addresses;
  }

  /** The keys of a message's read: by its msg.points where it has them, else the configured points'. */
  keyOfFor(msg: object): (address: number) => string {
    const points = (msg as { points?: unknown }).points;
    return points === undefined || points === null ? this.keyOf : this.keysFor(points);
  }

  /** The fields of each message a read sends: one per point (split), or one for all; none when nothing is sent. */
  messages(outcome: PollOutcome): MessageFields[] {
    const { sending, missing } = outcome;
    if (!sending) return [];
    if (this.mode === 'split') {
      // Each message its own list: a flow that changes one must not change the others.
      return sending.map((reading) => ({
        topic: this.topicPrefix + reading.key,
        payload: this.output(reading),
        address: reading.address,
        unit: (modelReadPointByName(reading.key) ?? readPointByAddress(reading.address))?.unit || undefined,
        missing: [...missing],
      }));
    }
    const payload: Record<string, unknown> = {};
    const units: Record<string, string> = {};
    const metadata: Record<string, Metadata> = {};
    for (const reading of sending) {
      const point = modelReadPointByName(reading.key) ?? readPointByAddress(reading.address);
      payload[reading.key] = this.output(reading);
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
    return [{ payload, units, metadata, missing }];
  }

  private output(reading: Reading): number | string | DecodedValue {
    if (!this.decode) return reading.value;
    const described = describeValue(reading.address, reading.value);
    return described.label === undefined ? reading.value : described;
  }
}
