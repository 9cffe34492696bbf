/**
 * Shares one client among every user of the same device settings, so two configurations that describe the
 * same device with the same credentials still send one request at a time. The last release closes it.
 */
import { DeviceClient, DEFAULTS, type ClientOptions } from './client';

interface Entry {
  client: DeviceClient;
  users: number;
}

export interface Lease {
  client: DeviceClient;
  /** Gives the client back; the last lease closes it. Calling it twice does nothing. */
  release: () => void;
}

export class ClientPool {
  private readonly entries = new Map<string, Entry>();

  acquire(options: ClientOptions): Lease {
    const key = poolKey(options);
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { client: new DeviceClient(options), users: 0 };
      this.entries.set(key, entry);
    }
    entry.users++;
    const held = entry;
    let released = false;
    return {
      client: held.client,
      release: () => {
        if (released) return;
        released = true;
        if (--held.users === 0) {
          this.entries.delete(key);
          held.client.close();
        }
      },
    };
  }

  /** How many distinct clients talk to host:port: more than one means uncoordinated requests. */
  clientsFor(host: string, port: number = DEFAULTS.port): number {
    let count = 0;
    for (const { client } of this.entries.values()) if (client.host === host.trim() && client.port === port) count++;
    return count;
  }
}

function poolKey(options: ClientOptions): string {
  return JSON.stringify([
    options.host.trim(),
    options.port ?? DEFAULTS.port,
    options.username || DEFAULTS.username,
    options.password,
    options.auth ?? DEFAULTS.auth,
    options.namespace?.trim() || DEFAULTS.namespace,
    options.minIntervalMs ?? DEFAULTS.minIntervalMs,
    options.timeoutMs ?? DEFAULTS.timeoutMs,
    options.powerLimit,
  ]);
}
