/**
 * Which device a host names, for the queue registry (src/device/scheduler.ts): one queue per device address, however
 * the host is written. `192.168.1.50` and `::ffff:192.168.1.50` are one address, `Battery.local.` and
 * `battery.local` one name, and a name is the address it resolves to, so that two spellings never pace apart.
 */
import { lookup } from 'node:dns/promises';
import { isIPv4, isIPv6 } from './rules';

/** The eight groups of an IPv6 address (no zone, already checked by isIPv6). */
function ipv6Groups(address: string): number[] {
  let text = address;
  const dotted = /:([^:]*\.[^:]*)$/.exec(text);
  if (dotted) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1]!.split('.').map(Number);
    text = `${text.slice(0, dotted.index)}:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const first = parse(head);
  if (tail === undefined) return first;
  const last = parse(tail);
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
}

/** RFC 5952's text: lower-case hex, the longest run of two or more zero groups (the first of equals) as `::`. */
function ipv6Text(groups: number[]): string {
  let start = -1;
  let length = 1;
  for (let i = 0; i < groups.length;) {
    let end = i;
    while (end < groups.length && groups[end] === 0) end++;
    if (end - i > length) [start, length] = [i, end - i];
    i = end === i ? i + 1 : end;
  }
  const hex = groups.map((group) => group.toString(16));
  return start < 0 ? hex.join(':') : `${hex.slice(0, start).join(':')}::${hex.slice(start + length).join(':')}`;
}

/**
 * An address in one spelling, or undefined for anything else (a host name): IPv4 as it is, an IPv4-mapped IPv6
 * address as its IPv4 address, other IPv6 addresses in RFC 5952's form; brackets and spaces dropped, a zone kept.
 */
export function canonicalAddress(host: string): string | undefined {
  const text = host.trim().replace(/^\[(.*)\]$/, '$1');
  if (isIPv4(text)) return text;
  const [address = '', zone, more] = text.split('%');
  if (more !== undefined || !isIPv6(address)) return undefined;
  const groups = ipv6Groups(address);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return ipv6Text(groups) + (zone === undefined ? '' : `%${zone}`);
}

/** A host in one spelling: an address by canonicalAddress, a name in lower case without the root's trailing dot. */
export function canonicalHost(host: string): string {
  return canonicalAddress(host) ?? host.trim().toLowerCase().replace(/\.$/, '');
}

/**
 * The address a host name resolves to, in canonicalAddress's spelling: of all its addresses the first IPv4 one in
 * sorted order, else the first IPv6 one, so that every spelling of the name (and the address itself) gets the same.
 * Rejects as node:dns does (code ENOTFOUND and the like).
 */
export async function resolveAddress(name: string): Promise<string> {
  const found = await lookup(canonicalHost(name), { all: true });
  const addresses = found
    .map((entry) => canonicalAddress(entry.address))
    .filter((address): address is string => address !== undefined)
    .sort((a, b) => Number(a.includes(':')) - Number(b.includes(':')) || (a < b ? -1 : a > b ? 1 : 0));
  if (addresses.length === 0) throw Object.assign(new Error(`no address for ${name}`), { code: 'ENOTFOUND' });
  return addresses[0]!;
}
