/**
 * What the discover node does, without Node-RED: its settings and a message's overrides, and one scan at a time,
 * aborted on close (which ends only once the scan's sockets are closed).
 */
import {
  DEFAULT_LISTEN_MS,
  DEFAULT_METHOD,
  DEVICE_PORT,
  DISCOVERY_METHODS,
  LOCAL_PORT,
  discoverDevices,
  parseMethod,
  type DiscoveryMethod,
  type DiscoveryOptions,
} from '../discovery/discovery';
import { NUMBER_RULES, describeInputs, discoveryTarget, numberIn, oneOf, type InputValues } from '../editor/inputs';
import { decimalNumber } from '../numbers';

/** The discover node's settings as the editor stores them. */
export interface DiscoverDefinition {
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

export type ScanOptions = ReturnType<typeof optionsOf>;
type Found = Awaited<ReturnType<typeof discoverDevices>>;

export class Discoverer {
  readonly configError: Error | undefined;
  private readonly deployed: ReturnType<typeof discoverInputs.deploy>;
  private scan: Promise<Found | undefined> | undefined;
  private abort: AbortController | undefined;
  private closed = false;

  constructor(def: DiscoverDefinition) {
    this.deployed = discoverInputs.deploy(def);
    this.configError = this.deployed.error;
  }

  /** One scan at a time: a second one would bind the same local ports and see the first one's answers. */
  get busy(): boolean {
    return this.scan !== undefined;
  }

  /** The options of a scan for `msg` (its target, listen time and method over the settings); throws for a bad one. */
  optionsFor(msg: object): ScanOptions {
    return optionsOf(discoverInputs.forMessage(msg, this.deployed));
  }

  /** The devices found, or undefined once closed; warnings go to `onWarning` until then. */
  run(options: ScanOptions, onWarning: (message: string) => void): Promise<Found | undefined> {
    const controller = new AbortController();
    this.abort = controller;
    const scan = discoverDevices({
      ...options,
      signal: controller.signal,
      onWarning: (message) => {
        if (!this.closed) onWarning(message);
      },
    })
      .then((devices) => (this.closed ? undefined : devices))
      .finally(() => {
        this.scan = undefined;
        this.abort = undefined;
      });
    this.scan = scan;
    return scan;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Aborts a running scan; resolves once its socket is closed, leaving no handle. Never rejects. */
  close(): Promise<void> {
    this.closed = true;
    this.abort?.abort();
    return (this.scan ?? Promise.resolve()).then(
      () => undefined,
      () => undefined,
    );
  }
}

/** The editor's Discover button: how long it listens by default, and at most (it waits for the answer). */
export const EDITOR_LISTEN_MS = { default: 3000, min: 500, max: 15000 } as const;
const editorPort = numberIn(NUMBER_RULES.port);

/**
 * The scan the editor's Discover button asks for (POST /localbattery/discover): target and port by the node's own
 * rules, the listen time in ms held between EDITOR_LISTEN_MS's bounds. Throws a ValidationError for a bad one.
 */
export function editorScanOptions(body: Record<string, unknown>): ScanOptions {
  const target = body.target === undefined ? '' : discoveryTarget(body.target, 'target');
  const port = body.port === undefined || body.port === '' ? DEVICE_PORT : editorPort(body.port, 'port');
  const listenMs = Math.min(Math.max(decimalNumber(body.listenMs) || EDITOR_LISTEN_MS.default, EDITOR_LISTEN_MS.min), EDITOR_LISTEN_MS.max);
  return { method: parseMethod(body.method), target: target || undefined, port, listenMs, localPort: LOCAL_PORT };
}
