/**
 * One truth about each device, kept by its queue (src/device/scheduler.ts) for every client, session and node of the process:
 * what the device last said or accepted at each address, its working mode, the real-time setpoint it last
 * acknowledged (from any node), the namespace that answered, and when (in the order of all commands) the newest command
 * to each address was given, so that the last command wins by the time it was given, not by when it reached the queue.
 */
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

export class DeviceState {
  private readonly known = new Map<number, KnownValue>();
  private knownMode: KnownMode | undefined;
  private acknowledged: Setpoint | undefined;
  private detectedNamespace: string | undefined;
  private stamps = 0;
  /** The stamp of the newest command asked for (queued, not necessarily sent), by address. */
  private readonly newest = new Map<number, number>();

  /** The last value read from or accepted at `address`, if not older than `maxAgeMs`. */
  knownValue(address: number, maxAgeMs = Infinity): KnownValue | undefined {
    const known = this.known.get(address);
    return known && performance.now() - known.at <= maxAgeMs ? known : undefined;
  }

  /**
   * The working mode as last read (7101), written (47005) or shown by an accepted setpoint. A refused write changes
   * nothing here: the device does not say why it refuses (a setpoint's SOC, or another mode).
   */
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

  /** A stamp for a command given now: commands to the device compare by it, later ones higher. */
  stamp(): number {
    return ++this.stamps;
  }

  /** The stamp of the newest command asked for (queued, not necessarily sent) that covers `address`; 0: none. */
  lastCommandTo(address: number): number {
    return this.newest.get(address) ?? 0;
  }

  /** A write of `count` values from `address`, given at `stamp`, is asked for. */
  writeAsked(address: number, count: number, stamp: number): void {
    for (let i = 0; i < count; i++) this.newest.set(address + i, Math.max(stamp, this.lastCommandTo(address + i)));
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
      this.acknowledged = code !== undefined && power !== undefined && soc !== undefined ? { code, power, soc, at: Date.now() } : undefined;
    }
  }

  /** A data request in `namespace` was answered. */
  namespaceAnswered(namespace: string): void {
    this.detectedNamespace = namespace;
  }

  /** Forgets what the device said: another device may answer at this address now. */
  clear(): void {
    this.known.clear();
    this.knownMode = undefined;
    this.acknowledged = undefined;
    this.detectedNamespace = undefined;
  }

  private setMode(mode: number, at: number): void {
    // Out of real-time control the device drops its setpoint; back in it, none is acknowledged yet.
    if (this.knownMode?.mode !== mode && mode !== REAL_TIME.mode) this.acknowledged = undefined;
    this.knownMode = { mode, at };
  }
}
