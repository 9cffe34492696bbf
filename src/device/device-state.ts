/**
 * One truth about each device, kept by its queue (src/device/scheduler.ts) for every client, session and node of the process:
 * what the device last said or accepted at each address, its working mode, the real-time setpoint it last
 * acknowledged (from any node), the namespace and authentication that answered, and the order in which writes were
 * asked for (so that a retry can tell whether a newer command came since).
 */
import { EventEmitter } from 'node:events';
import { REAL_TIME, WORKING_MODE_READ_ADDRESS } from '../points/catalogue';

/** What the device last said (a read) or accepted (a write) at an address, and when (performance.now()). */
export interface KnownValue {
  value: unknown;
  at: number;
}

/** The working mode and when it was learnt (performance.now()). */
export interface KnownMode {
  mode: number;
  at: number;
}

/** The real-time setpoint the device last acknowledged; `at` is a Date.now() timestamp. */
export interface Setpoint {
  code: number;
  power: number;
  soc: number;
  at: number;
}

const SETPOINT_ADDRESSES = [REAL_TIME.stateAddress, REAL_TIME.powerAddress, REAL_TIME.socAddress] as const;

/**
 * Events: 'mode' (mode: number | undefined: undefined when doubted), 'setpoint' (setpoint: Setpoint | undefined),
 * 'namespace' (namespace: string), 'write' (address: number, values: number[]) for every accepted write.
 */
export class DeviceState extends EventEmitter {
  private readonly known = new Map<number, KnownValue>();
  private knownMode: KnownMode | undefined;
  private acknowledged: Setpoint | undefined;
  private detectedNamespace: string | undefined;
  private workingAuth: string | undefined;
  private writes = 0;
  /** The number of the last write asked for, by address. */
  private readonly lastWrite = new Map<number, number>();

  /** The last value read from or accepted at `address`, if not older than `maxAgeMs`. */
  knownValue(address: number, maxAgeMs = Infinity): KnownValue | undefined {
    const known = this.known.get(address);
    return known && performance.now() - known.at <= maxAgeMs ? known : undefined;
  }

  /** The working mode as last read (7101), written (47005) or shown by an accepted setpoint, unless doubted since. */
  mode(maxAgeMs = Infinity): number | undefined {
    const known = this.knownMode;
    return known && performance.now() - known.at <= maxAgeMs ? known.mode : undefined;
  }

  /** When the working mode was last learnt (performance.now()), undefined while it is not known. */
  get modeAt(): number | undefined {
    return this.knownMode?.at;
  }

  /** The real-time setpoint the device last acknowledged, from whichever node sent it. */
  get setpoint(): Setpoint | undefined {
    return this.acknowledged;
  }

  /** The data namespace that answered (detected once per device and process). */
  get namespace(): string | undefined {
    return this.detectedNamespace;
  }

  /** The authentication mode of the last request the device accepted. */
  get auth(): string | undefined {
    return this.workingAuth;
  }

  /** Writes asked for so far: a number to compare with `lastWriteTo`. */
  get writeCount(): number {
    return this.writes;
  }

  /** The number of the newest write asked for (queued, not necessarily sent) that covers `address`; 0: none. */
  lastWriteTo(address: number): number {
    return this.lastWrite.get(address) ?? 0;
  }

  /** A write of `count` values from `address` is asked for: its number. */
  writeAsked(address: number, count: number): number {
    this.writes++;
    for (let i = 0; i < count; i++) this.lastWrite.set(address + i, this.writes);
    return this.writes;
  }

  /** The device answered a read. */
  read(values: Iterable<[number, unknown]>): void {
    const now = performance.now();
    for (const [address, value] of values) {
      this.known.set(address, { value, at: now });
      if (address !== WORKING_MODE_READ_ADDRESS) continue;
      const mode = Number(value);
      if (Number.isFinite(mode)) this.setMode(mode, now);
    }
  }

  /** The device accepted a write. */
  wrote(address: number, values: number[]): void {
    const now = performance.now();
    values.forEach((value, i) => this.known.set(address + i, { value, at: now }));
    const covers = (a: number) => a >= address && a < address + values.length;
    if (covers(REAL_TIME.modeAddress)) this.setMode(values[REAL_TIME.modeAddress - address]!, now);
    if (SETPOINT_ADDRESSES.some(covers)) {
      // The device refuses a setpoint in any other mode: it proves real-time control.
      this.setMode(REAL_TIME.mode, now);
      const previous = this.acknowledged;
      const [code, power, soc] = SETPOINT_ADDRESSES.map((a) =>
        covers(a)
          ? values[a - address]
          : previous?.[a === REAL_TIME.stateAddress ? 'code' : a === REAL_TIME.powerAddress ? 'power' : 'soc'],
      );
      this.setSetpoint(code !== undefined && power !== undefined && soc !== undefined ? { code, power, soc, at: Date.now() } : undefined);
    }
    this.tell('write', address, values);
  }

  /** The device refused a write: one to the real-time points means it is not in real-time control. */
  refused(address: number, count: number): void {
    if (!SETPOINT_ADDRESSES.some((a) => a >= address && a < address + count)) return;
    this.knownMode = undefined;
    this.tell('mode', undefined);
    this.setSetpoint(undefined);
  }

  /** A data request in `namespace` was answered. */
  namespaceAnswered(namespace: string): void {
    if (this.detectedNamespace === namespace) return;
    this.detectedNamespace = namespace;
    this.tell('namespace', namespace);
  }

  /** A request with this authentication mode was accepted. */
  authAccepted(auth: string): void {
    this.workingAuth = auth;
  }

  /** Forgets what the device said: another device may answer at this address now. */
  clear(): void {
    this.known.clear();
    this.knownMode = undefined;
    this.acknowledged = undefined;
    this.detectedNamespace = undefined;
    this.workingAuth = undefined;
  }

  /** A listener's throw must not fail the request that brought the news, nor stop the queue. */
  private tell(event: string, ...args: unknown[]): void {
    for (const listener of this.rawListeners(event)) {
      try {
        (listener as (...values: unknown[]) => void)(...args);
      } catch (error) {
        process.emitWarning(error as Error);
      }
    }
  }

  private setMode(mode: number, at: number): void {
    const changed = this.knownMode?.mode !== mode;
    this.knownMode = { mode, at };
    // Out of real-time control the device drops its setpoint; back in it, none is acknowledged yet.
    if (changed && this.acknowledged && mode !== REAL_TIME.mode) this.setSetpoint(undefined);
    if (changed) this.tell('mode', mode);
  }

  private setSetpoint(setpoint: Setpoint | undefined): void {
    if (setpoint === undefined && this.acknowledged === undefined) return;
    this.acknowledged = setpoint;
    this.tell('setpoint', setpoint);
  }
}
