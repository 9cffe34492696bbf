/** The simulated device's UDP discovery responder: answers `AT+IGDEVICEIP` with its serial number, firmware and address. */
import dgram from 'node:dgram';
import net from 'node:net';
import os from 'node:os';

export interface DiscoveryIdentity {
  serialNumber: string;
  firmware: string;
  advertisedIp: string;
}

export class DiscoveryResponder {
  private socket: dgram.Socket | undefined;
  port: number | undefined;

  /** `answering()`: false while the device is offline (it still counts the query, `onQuery`). */
  constructor(
    private readonly identity: DiscoveryIdentity,
    private readonly answering: () => boolean,
    private readonly onQuery: () => void,
  ) {}

  listen(host: string, port: number): Promise<void> {
    const socket = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
    this.socket = socket;
    socket.on('message', (message, remote) => this.onMessage(message, remote));
    return new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, host, () => {
        socket.off('error', reject);
        socket.on('error', () => undefined);
        this.port = socket.address().port;
        resolve();
      });
    });
  }

  close(): Promise<void> {
    const socket = this.socket;
    this.socket = undefined;
    return socket ? new Promise<void>((resolve) => socket.close(() => resolve())) : Promise.resolve();
  }

  private onMessage(message: Buffer, remote: dgram.RemoteInfo): void {
    if (message.toString('utf8').trim() !== 'AT+IGDEVICEIP') return;
    this.onQuery();
    // An offline device does not answer discovery either.
    if (!this.answering() || !this.socket) return;
    const { serialNumber, firmware, advertisedIp } = this.identity;
    const answer = JSON.stringify({ sn: serialNumber, fw: firmware, ip: advertisedIp, opendata_ver: 'V1.0.1' });
    this.socket.send(answer, remote.port, remote.address, () => undefined);
  }
}

/** The address discovery answers with: the host itself, or for a wildcard host the first external IPv4 address. */
export function advertisableAddress(host: string): string {
  if (host !== '0.0.0.0' && host !== '::') return host;
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) return address.address;
    }
  }
  return '127.0.0.1';
}
