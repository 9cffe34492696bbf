/**
 * Discovery. UDP (spec E5 and field notes): send the text `AT+IGDEVICEIP` from local port 10000 to
 * 255.255.255.255:8099 (and to each interface's own broadcast address), then collect answers for a while.
 *
 * Answers are accepted from any source port: the notes say devices answer from 8099, but nothing is gained
 * by dropping a well-formed answer from elsewhere. A scan with a target (one address, not a broadcast) accepts
 * answers from that address only. JSON answers give their plain members (see plainMembers); anything else falls
 * back to the sender's address (field notes). Anybody on the network can answer, so a scan takes at most
 * MAX_ANSWERS answers of at most MAX_ANSWER_BYTES each. The scan never rejects because of the network: socket and
 * send errors become warnings and the scan resolves with what it found.
 *
 * mDNS (field notes): newer firmware announces an `_http._tcp.local.` service whose instance name begins with
 * `IGEN_FW`. discoverDevices() runs either or both and merges the answers by address.
 */
import * as dgram from 'node:dgram';
import { EventEmitter } from 'node:events';
import * as net from 'node:net';
import * as os from 'node:os';
import { lookup } from 'node:dns/promises';
import { Bonjour, type Service } from 'bonjour-service';
import { ValidationError } from '../errors';
import { MAX_TEXT_LENGTH, plainMembers } from '../numbers';
import { isIPv4 } from '../device/rules';

export interface DiscoveredDevice {
  /** The device's address: the `ip` member of its answer, else the sender's address. */
  ip: string;
  sn?: string;
  fw?: string;
  /** Every other member of the JSON answer, plus `address` (the sender's address) and, for non-JSON, `raw`. */
  [key: string]: unknown;
}

export interface DiscoveryOptions {
  /** Send only to this address (e.g. one device's IP). Default: broadcast (see broadcastTargets). */
  target?: string;
  /** Device port, default 8099. */
  port?: number;
  /** Local port, default 10000; if it is taken a free port is used instead, with a warning. */
  localPort?: number;
  /** How long to collect answers, default 3000 ms. */
  listenMs?: number;
  /** Aborting ends the scan early; it then resolves with what was found so far. */
  signal?: AbortSignal;
  onWarning?: (message: string) => void;
}

export const DISCOVERY_MESSAGE = 'AT+IGDEVICEIP';
export const DEVICE_PORT = 8099;
export const LOCAL_PORT = 10000;
export const DEFAULT_LISTEN_MS = 3000;
export const LIMITED_BROADCAST = '255.255.255.255';

/** The field notes' answer is about 120 bytes; a datagram far larger is no device's answer. */
export const MAX_ANSWER_BYTES = 2048;
/** The most answers a scan takes (each device answers once per address the query went to). */
export const MAX_ANSWERS = 256;
/** The most warnings one scan gives: a flood of bad packets must not become a flood of log lines. */
export const MAX_WARNINGS = 10;

/** Members that the DiscoveredDevice type promises to be strings. */
const STRING_MEMBERS = ['sn', 'fw'] as const;

/** A member name as devices write them; anything else (e.g. `__proto__`) is dropped. */
const MEMBER_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,31}$/;
const isMemberName = (key: string) => MEMBER_NAME.test(key);

/** `text` without its trailing NULs (a loop: /\0+$/ backtracked quadratically over long runs of NULs). */
export function withoutTrailingNuls(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0) end--;
  return text.slice(0, end);
}

/** Turns one answer into a device: plain JSON object members are kept; anything else keeps the text as `raw`. */
export function parseAnswer(text: string, senderAddress: string): DiscoveredDevice {
  // Embedded firmware may pad datagrams with NULs or end them with CR/LF; JSON.parse rejects NULs.
  const cleaned = withoutTrailingNuls(text).trim();
  let parsed: unknown;
  try {
    parsed = JSON.parse(cleaned);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { ip: senderAddress, address: senderAddress, raw: text };
  }
  const device: DiscoveredDevice = { ...plainMembers(parsed, isMemberName), ip: senderAddress, address: senderAddress };
  const ip = (parsed as Record<string, unknown>).ip;
  if (typeof ip === 'string' && ip.trim() !== '') device.ip = ip.trim();
  for (const key of STRING_MEMBERS) {
    // Keep the promise of the type: a numeric serial becomes its decimal text; other shapes are dropped.
    const value = device[key];
    if (value === undefined || typeof value === 'string') continue;
    if (typeof value === 'number' && Number.isFinite(value)) device[key] = String(value);
    else delete device[key];
  }
  return device;
}

function serialOf(device: DiscoveredDevice): string | undefined {
  return typeof device.sn === 'string' && device.sn !== '' ? device.sn : undefined;
}

/**
 * Merges duplicate answers (a device answers once per query, and a query goes out on several addresses):
 * by serial number, later answers filling in and overriding members; answers without a serial by ip.
 * An answer without a serial whose ip matches a device with one is folded into that device, filling in
 * only missing members, so the JSON answer is preferred over an unparsed one. First-seen order is kept.
 */
export function mergeDevices(list: DiscoveredDevice[]): DiscoveredDevice[] {
  const result: DiscoveredDevice[] = [];
  const bySerial = new Map<string, DiscoveredDevice>();
  const byIp = new Map<string, DiscoveredDevice>();
  for (const device of list) {
    const sn = serialOf(device);
    const index = sn !== undefined ? bySerial : byIp;
    const key = sn ?? device.ip;
    const existing = index.get(key);
    if (existing) Object.assign(existing, device);
    else {
      const copy = { ...device };
      index.set(key, copy);
      result.push(copy);
    }
  }
  if (byIp.size === 0 || bySerial.size === 0) return result;
  const withSerialByIp = new Map<string, DiscoveredDevice>();
  for (const device of bySerial.values()) if (!withSerialByIp.has(device.ip)) withSerialByIp.set(device.ip, device);
  return result.filter((device) => {
    if (serialOf(device) !== undefined) return true;
    const target = withSerialByIp.get(device.ip);
    if (!target) return true;
    for (const [key, value] of Object.entries(device)) if (!(key in target)) target[key] = value;
    return false;
  });
}

function ipv4ToInt(address: string): number | undefined {
  const parts = address.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.reduce((sum, p) => sum * 256 + Number(p), 0);
}

function intToIpv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
}

/**
 * Where a default scan sends the query: the limited broadcast address, plus each non-internal IPv4
 * interface's directed broadcast (address | ~netmask), which helps on hosts with several interfaces.
 */
export function broadcastTargets(interfaces: ReturnType<typeof os.networkInterfaces> = os.networkInterfaces()): string[] {
  const targets = new Set<string>([LIMITED_BROADCAST]);
  for (const entries of Object.values(interfaces)) {
    for (const entry of entries ?? []) {
      // Node 18.0 reported family as the number 4.
      const family: unknown = entry.family;
      if (entry.internal || (family !== 'IPv4' && family !== 4)) continue;
      const address = ipv4ToInt(entry.address);
      const netmask = ipv4ToInt(entry.netmask);
      // A /32 (or /31) has no broadcast address of its own.
      if (address === undefined || netmask === undefined || netmask >>> 0 >= 0xfffffffe) continue;
      targets.add(intToIpv4((address | ~netmask) >>> 0));
    }
  }
  return [...targets];
}

function checkPort(value: unknown, field: string, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > 65535) {
    throw new ValidationError(field, value, `an integer from ${min} to 65535`);
  }
  return value;
}

function errorCode(error: unknown): string {
  const e = error as NodeJS.ErrnoException | undefined;
  return e?.code ?? e?.message ?? String(error);
}

/** Throws a ValidationError for an invalid option; gives the values with their defaults. */
function checkOptions(options: DiscoveryOptions): { port: number; localPort: number; listenMs: number } {
  const port = checkPort(options.port ?? DEVICE_PORT, 'discovery port', 1);
  const localPort = checkPort(options.localPort ?? LOCAL_PORT, 'discovery local port', 0);
  const listenMs = checkListenMs(options.listenMs ?? DEFAULT_LISTEN_MS);
  if (options.target !== undefined && (typeof options.target !== 'string' || options.target.trim() === '')) {
    throw new ValidationError('discovery target', options.target, 'an IP address or host name');
  }
  return { port, localPort, listenMs };
}

/**
 * Sends the discovery query and collects answers. Resolves with the merged devices after `listenMs`, on
 * abort, or early when every send failed. Rejects only for invalid options (ValidationError).
 */
export function discover(options: DiscoveryOptions = {}): Promise<DiscoveredDevice[]> {
  let port: number;
  let localPort: number;
  let listenMs: number;
  try {
    ({ port, localPort, listenMs } = checkOptions(options));
  } catch (error) {
    return Promise.reject(error);
  }

  const warn = limitedWarn(options.onWarning);
  const target = options.target?.trim();
  const broadcasts = broadcastTargets();
  const signal = options.signal;
  if (target === undefined || broadcasts.includes(target) || isIPv4(target))
    return scan(target, broadcasts, port, localPort, listenMs, warn, signal);
  // A host name: asked at its address, which is then the only one whose answers count.
  return lookup(target, { family: 4 }).then(
    (found) => scan(found.address, broadcasts, port, localPort, listenMs, warn, signal),
    (error: unknown) => {
      warn(`Discovery: sending to ${target}:${port} failed: ${errorCode(error)}`);
      return [];
    },
  );
}

/** One UDP scan, sent to `target` (else every broadcast address); see discover(). */
function scan(
  target: string | undefined,
  broadcasts: string[],
  port: number,
  localPort: number,
  listenMs: number,
  warn: (message: string) => void,
  signal: AbortSignal | undefined,
): Promise<DiscoveredDevice[]> {
  const targets = target !== undefined ? [target] : broadcasts;
  // An explicit target may itself be a broadcast address; the socket must allow that or the send fails.
  const broadcasting = targets.some((t) => broadcasts.includes(t));
  // Only the target answers a query sent to it alone; anything else on the port is not an answer to this scan.
  const onlyFrom = broadcasting ? undefined : target;
  const message = Buffer.from(DISCOVERY_MESSAGE, 'ascii');

  return new Promise<DiscoveredDevice[]>((resolve) => {
    const found: DiscoveredDevice[] = [];
    let ignored = 0;
    let socket: dgram.Socket | undefined;
    let timer: NodeJS.Timeout | undefined;
    let finished = false;

    const finish = () => {
      if (finished) return;
      finished = true;
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', finish);
      const done = () => resolve(mergeDevices(found));
      if (!socket) return done();
      // Resolve once the socket is really closed, so the caller sees no handle left behind.
      try {
        socket.close(done);
      } catch {
        done(); // Already closed (e.g. after a socket error).
      }
    };

    if (signal?.aborted) {
      finish();
      return;
    }
    signal?.addEventListener('abort', finish, { once: true });

    const onMessage = (data: Buffer, rinfo: dgram.RemoteInfo) => {
      if (onlyFrom !== undefined && rinfo.address !== onlyFrom) return;
      if (data.length > MAX_ANSWER_BYTES || found.length >= MAX_ANSWERS) {
        // Named once per scan: whoever floods the port must not flood the log too.
        if (ignored++ === 0)
          warn(`Discovery: ignoring answers of more than ${MAX_ANSWER_BYTES} bytes and any after the first ${MAX_ANSWERS}`);
        return;
      }
      const text = data.toString('utf8');
      // Our own query echoed back (e.g. target and local port on the same host) is not an answer.
      if (text.trim() === DISCOVERY_MESSAGE) return;
      found.push(parseAnswer(text, rinfo.address));
    };

    const sendAll = (bound: dgram.Socket) => {
      if (broadcasting) {
        try {
          bound.setBroadcast(true);
        } catch (error) {
          warn(`Discovery: cannot enable broadcast on the socket: ${errorCode(error)}`);
        }
      }
      let pending = targets.length;
      let failures = 0;
      for (const address of targets) {
        bound.send(message, port, address, (error) => {
          pending--;
          if (error) {
            failures++;
            warn(`Discovery: sending to ${address}:${port} failed: ${errorCode(error)}`);
          }
          // Nothing went out, so no answer can come: no point waiting out the listen time.
          if (pending === 0 && failures === targets.length) finish();
        });
      }
    };

    const open = (bindPort: number, fallbackAllowed: boolean) => {
      const candidate = dgram.createSocket({ type: 'udp4' });
      socket = candidate;
      let bound = false;
      candidate.on('message', onMessage);
      candidate.on('error', (error) => {
        if (finished) return;
        const code = errorCode(error);
        if (!bound && fallbackAllowed && bindPort !== 0 && (code === 'EADDRINUSE' || code === 'EACCES')) {
          try {
            candidate.close();
          } catch {
            // A socket whose bind failed may already be closed.
          }
          warn(`Discovery: local UDP port ${bindPort} is not available (${code}); using a free port instead`);
          open(0, false);
          return;
        }
        warn(`Discovery: socket error${bound ? '' : ` binding local port ${bindPort}`}: ${code}`);
        finish();
      });
      candidate.bind(bindPort, () => {
        bound = true;
        if (finished) {
          // Aborted while binding: finish() already ran; close what it could not see as bound.
          try {
            candidate.close();
          } catch {
            // Already closed.
          }
          return;
        }
        sendAll(candidate);
      });
    };

    // Started before binding so the scan ends whatever happens to the socket.
    timer = setTimeout(finish, listenMs);
    open(localPort, true);
  });
}

export type DiscoveryMethod = 'udp' | 'mdns' | 'both';
export const DISCOVERY_METHODS: readonly DiscoveryMethod[] = ['both', 'udp', 'mdns'];
export const DEFAULT_METHOD: DiscoveryMethod = 'both';
/** The instance-name prefix of the device's mDNS service (Home Assistant's zeroconf matcher, case-insensitive). */
export const MDNS_NAME_PREFIX = 'IGEN_FW';
export const MDNS_SERVICE_TYPE = 'http';

/** What one mDNS announcement told. */
export interface MdnsAnswer {
  /** The service instance name, e.g. `IGEN_FW_…`. */
  name: string;
  /** The host name of the SRV record. */
  host: string;
  /** The HTTP port of the SRV record. */
  port: number;
  addresses: string[];
  txt: Record<string, unknown>;
}

/** One device from discoverDevices(): the UDP answer's members, what mDNS told, and which sources saw it. */
export interface FoundDevice extends DiscoveredDevice {
  sources: Array<'udp' | 'mdns'>;
  /** The HTTP port (mDNS only: the UDP answer does not name one). */
  port?: number;
  /** The mDNS instance name. */
  name?: string;
  mdns?: MdnsAnswer;
}

export interface MdnsOptions {
  /** How long to collect answers, default 3000 ms. */
  listenMs?: number;
  signal?: AbortSignal;
  onWarning?: (message: string) => void;
}

function checkListenMs(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new ValidationError('discovery listen time', value, 'a number of milliseconds, 0 or more');
  }
  return value;
}

/** The most addresses kept of one mDNS answer (a device has one or two). */
const MAX_MDNS_ADDRESSES = 8;

function mdnsAnswerOf(service: Service): MdnsAnswer {
  const txt: unknown = service.txt;
  return {
    name: service.name,
    host: service.host,
    port: service.port,
    addresses: (service.addresses ?? []).slice(0, MAX_MDNS_ADDRESSES),
    txt: txt !== null && typeof txt === 'object' ? plainMembers(txt, isMemberName) : {},
  };
}

/** The device's IPv4 address: from the A records, else the address the answer came from. */
function mdnsAddress(answer: MdnsAnswer, referer: string | undefined): string | undefined {
  return answer.addresses.find((a) => net.isIPv4(a)) ?? referer ?? answer.addresses[0];
}

function textMember(txt: Record<string, unknown>, key: string): string | undefined {
  const value = txt[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Browses `_http._tcp.local.` over mDNS and keeps the services named `IGEN_FW…`, one per address. Resolves after
 * `listenMs` or on abort; network errors become warnings. Serial and firmware come from the TXT record's `sn`
 * and `fw` where the device puts them there.
 */
export function discoverMdns(options: MdnsOptions = {}): Promise<FoundDevice[]> {
  let listenMs: number;
  try {
    listenMs = checkListenMs(options.listenMs ?? DEFAULT_LISTEN_MS);
  } catch (error) {
    return Promise.reject(error);
  }
  const warn = limitedWarn(options.onWarning);
  const signal = options.signal;
  return new Promise<FoundDevice[]>((resolve) => {
    const found = new Map<string, FoundDevice>();
    if (signal?.aborted) return resolve([]);
    let bonjour: Bonjour | undefined;
    let browser: { stop(): void } | undefined;
    let timer: NodeJS.Timeout | undefined;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', finish);
      const done = () => resolve([...found.values()]);
      try {
        browser?.stop();
        // Resolve once the socket is closed, so the caller sees no handle left behind.
        if (bonjour) bonjour.destroy(done);
        else done();
      } catch (error) {
        warn(`Discovery: mDNS: ${errorCode(error)}`);
        done();
      }
    };
    // Nothing the library throws may escape: the scan then ends with a warning and its socket closed.
    try {
      bonjour = new Bonjour({}, (error: unknown) => warn(`Discovery: mDNS answer failed: ${errorCode(error)}`));
      const events = mdnsEvents(bonjour);
      if (!events) {
        warn('Discovery: mDNS is not available with this version of bonjour-service (its socket cannot be watched)');
        return finish();
      }
      events.on('warning', (error: unknown) => warn(`Discovery: mDNS: ${errorCode(error)}`));
      events.on('error', (error: unknown) => {
        warn(`Discovery: mDNS socket error: ${errorCode(error)}`);
        finish();
      });
      browser = bonjour.find({ type: MDNS_SERVICE_TYPE, protocol: 'tcp' }, (service: Service) => {
        if (found.size >= MAX_ANSWERS) return;
        const device = deviceOfService(service);
        if (device && !found.has(device.ip)) found.set(device.ip, device);
      });
      timer = setTimeout(finish, listenMs);
      signal?.addEventListener('abort', finish, { once: true });
    } catch (error) {
      warn(`Discovery: mDNS failed: ${errorCode(error)}`);
      finish();
    }
  });
}

/** A device from one announced service, or undefined for a service of something else (or without an address). */
function deviceOfService(service: Service): FoundDevice | undefined {
  const name: unknown = service.name;
  if (typeof name !== 'string' || name.length > MAX_TEXT_LENGTH || !name.toUpperCase().startsWith(MDNS_NAME_PREFIX)) return undefined;
  const answer = mdnsAnswerOf(service);
  const ip = mdnsAddress(answer, service.referer?.address);
  if (ip === undefined) return undefined;
  const device: FoundDevice = { ip, port: answer.port, name: answer.name, sources: ['mdns'], mdns: answer };
  const sn = textMember(answer.txt, 'sn');
  const fw = textMember(answer.txt, 'fw');
  if (sn !== undefined) device.sn = sn;
  if (fw !== undefined) device.fw = fw;
  return device;
}

/**
 * The events of a Bonjour's multicast socket, or undefined when they cannot be reached. bonjour-service keeps the
 * socket private (`server.mdns`, no public accessor) and leaves its 'error' events unhandled, which would throw in
 * Node-RED's process: without them no scan may start.
 */
export function mdnsEvents(bonjour: Bonjour): NodeJS.EventEmitter | undefined {
  const mdns: unknown = (bonjour as unknown as { server?: { mdns?: unknown } } | undefined)?.server?.mdns;
  return mdns instanceof EventEmitter ? mdns : undefined;
}

/** `onWarning` for one scan: at most MAX_WARNINGS calls (mDNS warns per packet), and nothing it throws escapes. */
function limitedWarn(onWarning: ((message: string) => void) | undefined): (message: string) => void {
  let given = 0;
  return (message) => {
    if (given >= MAX_WARNINGS) return;
    given++;
    try {
      onWarning?.(given === MAX_WARNINGS ? `${message} (further warnings of this scan are left out)` : message);
    } catch {
      // A faulty warning handler must not break the scan.
    }
  };
}

/**
 * Merges UDP and mDNS answers by address: one entry per device. The UDP answer's members stay on top (as
 * discover() gives them); mDNS adds the port, the instance name and its own record under `mdns`, and fills in
 * a serial or firmware the UDP answer lacks. First-seen order, UDP answers first.
 */
export function mergeSources(udp: DiscoveredDevice[], mdns: FoundDevice[]): FoundDevice[] {
  const result: FoundDevice[] = udp.map((device) => ({ ...device, sources: ['udp'] }));
  const byIp = new Map<string, FoundDevice>();
  for (const device of result) if (!byIp.has(device.ip)) byIp.set(device.ip, device);
  for (const device of mdns) {
    const existing = byIp.get(device.ip);
    if (!existing) {
      const copy: FoundDevice = { ...device, sources: ['mdns'] };
      byIp.set(device.ip, copy);
      result.push(copy);
      continue;
    }
    existing.sources.push('mdns');
    if (device.port !== undefined) existing.port = device.port;
    if (device.name !== undefined) existing.name = device.name;
    if (device.mdns) existing.mdns = device.mdns;
    if (existing.sn === undefined || existing.sn === '') if (device.sn !== undefined) existing.sn = device.sn;
    if (existing.fw === undefined || existing.fw === '') if (device.fw !== undefined) existing.fw = device.fw;
  }
  return result;
}

export function parseMethod(value: unknown): DiscoveryMethod {
  if (value === undefined || value === '') return DEFAULT_METHOD;
  if (typeof value === 'string' && (DISCOVERY_METHODS as readonly string[]).includes(value)) return value as DiscoveryMethod;
  throw new ValidationError('discovery method', value, 'udp, mdns or both');
}

/**
 * UDP, mDNS or both at once (default both), merged by address. mDNS searches the whole LAN by multicast, so a
 * scan with a `target` (one address) asks over UDP only.
 */
export async function discoverDevices(options: DiscoveryOptions & { method?: DiscoveryMethod } = {}): Promise<FoundDevice[]> {
  const method = parseMethod(options.method);
  checkOptions(options);
  const useUdp = method !== 'mdns' || options.target !== undefined;
  const useMdns = method !== 'udp' && options.target === undefined;
  if (options.target !== undefined && method === 'mdns') {
    limitedWarn(options.onWarning)('Discovery: mDNS searches the whole network; with a target the scan asks over UDP only');
  }
  // Both start before either is awaited, so their listen times run together; neither rejects once options passed.
  const [udp, mdns] = await Promise.all([
    useUdp ? discover(options) : Promise.resolve([]),
    useMdns ? discoverMdns({ listenMs: options.listenMs, signal: options.signal, onWarning: options.onWarning }) : Promise.resolve([]),
  ]);
  return mergeSources(udp, mdns);
}
