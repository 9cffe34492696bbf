/**
 * The simulator's mDNS responder: announces an `_http._tcp` service named `IGEN_FW…`, as newer firmware does
 * (field notes), so that discovery over mDNS finds the simulator. Multicast reaches the LAN: run it only where
 * that is wanted (tests run it inside an isolated network namespace).
 */
import { Bonjour } from 'bonjour-service';
import { MDNS_NAME_PREFIX, MDNS_SERVICE_TYPE, mdnsEvents } from '../discovery/discovery';

export interface MdnsResponderOptions {
  /** The HTTP port announced in the SRV record. */
  port: number;
  serialNumber: string;
  firmware?: string;
  /** Instance name, default `IGEN_FW_<serial>`. */
  name?: string;
  onWarning?: (message: string) => void;
}

export interface MdnsResponder {
  readonly name: string;
  stop(): Promise<void>;
}

export function startMdnsResponder(options: MdnsResponderOptions): MdnsResponder {
  const warn = (error: unknown) => options.onWarning?.(`mDNS responder: ${String((error as Error)?.message ?? error)}`);
  const bonjour = new Bonjour({}, warn);
  // Socket errors would otherwise be thrown as unhandled 'error' events.
  const mdns = mdnsEvents(bonjour);
  if (!mdns) {
    bonjour.destroy();
    throw new Error('mDNS responder: this version of bonjour-service hides its socket');
  }
  mdns.on('warning', warn);
  mdns.on('error', warn);
  const name = options.name ?? `${MDNS_NAME_PREFIX}_${options.serialNumber}`;
  const txt: Record<string, string> = { sn: options.serialNumber };
  if (options.firmware) txt.fw = options.firmware;
  // No probing: a simulator announces at once (probing would delay the answers by about a second).
  bonjour.publish({ name, type: MDNS_SERVICE_TYPE, protocol: 'tcp', port: options.port, txt, probe: false, disableIPv6: true });
  let stopped: Promise<void> | undefined;
  return {
    name,
    stop() {
      stopped ??= new Promise<void>((resolve) => bonjour.unpublishAll(() => bonjour.destroy(() => resolve())));
      return stopped;
    },
  };
}
