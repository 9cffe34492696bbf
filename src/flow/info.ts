/**
 * What the device info node makes of Sys.GetConfig, without Node-RED: the device object plus the clock, the runtime
 * and the MAC address in handier forms (date, utcOffset, localTime, uptime, macAddress), and `serial`: an identifier
 * that is never empty where the device has one anywhere (`sn`, else point 0, else the MAC).
 */
import type { ClientSession, DeviceInfo } from '../device/client';
import { decimalNumber } from '../numbers';

export interface InfoPayload extends DeviceInfo {
  /** `time_stamp` as an ISO 8601 instant (UTC), if the device sent one. */
  date?: string;
  /**
   * Minutes the device's wall clock (`time`) is ahead of UTC (`time_stamp`), rounded to a quarter hour; without
   * both, from `timezone` (minutes as in the maker's example, 480; hours where it is at most 14, e.g. 5.5).
   */
  utcOffset?: number;
  /** `time` in ISO 8601, with the UTC offset where `time_stamp` gives it, else without a zone. */
  localTime?: string;
  /** `run_time` as text, e.g. "3d 4h 5m". */
  uptime?: string;
  /** `mac` as six colon-separated lower-case pairs, e.g. "7c:3e:82:ef:99:7f", whatever separators the device used. */
  macAddress?: string;
  /**
   * The serial number for identifiers (topics, ids): `sn`, else point 0 when `sn` is empty (the maker's example
   * answers `"sn": ""`), else the MAC as twelve upper-case hex digits; absent only when all three are.
   */
  serial?: string;
  /** Where `serial` came from. */
  serialSource?: 'sn' | 'point0' | 'mac';
}

const nonEmpty = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : typeof value === 'number' ? String(value) : undefined;

/** Adds `serial` and `serialSource`; reads point 0 only when `sn` is empty. A failed read falls back to the MAC. */
export async function addSerial(payload: InfoPayload, session: ClientSession): Promise<void> {
  let serial = nonEmpty(payload.sn);
  let source: InfoPayload['serialSource'] = 'sn';
  if (serial === undefined) {
    source = 'point0';
    try {
      serial = nonEmpty((await session.read([0])).values.get(0));
    } catch {
      serial = undefined; // the MAC below still identifies the device
    }
  }
  if (serial === undefined && payload.macAddress !== undefined) {
    source = 'mac';
    serial = payload.macAddress.replace(/:/g, '').toUpperCase();
  }
  if (serial === undefined) return;
  payload.serial = serial;
  payload.serialSource = source;
}

/** `timezone` in minutes east of UTC: the maker sends minutes (480); a value within ±14 can only be hours. */
function timezoneMinutes(timezone: unknown): number | undefined {
  const value = decimalNumber(timezone);
  if (value === undefined || Math.abs(value) > 14 * 60) return undefined;
  return Math.abs(value) <= 14 ? Math.round(value * 60) : Math.round(value);
}

/** A MAC address with or without separators (":", "-", ".") as "aa:bb:cc:dd:ee:ff"; undefined for anything else. */
function macText(mac: unknown): string | undefined {
  if (typeof mac !== 'string') return undefined;
  const digits = mac.trim().replace(/[:.-]/g, '');
  return /^[0-9a-f]{12}$/i.test(digits) ? digits.toLowerCase().match(/../g)!.join(':') : undefined;
}

/** `time` ("2024-05-01 12:34:56") as milliseconds, read as if it were UTC; undefined if it has another shape. */
function wallClockMs(time: unknown): number | undefined {
  const match =
    typeof time === 'string' ? /^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})[ T](\d{1,2}):(\d{2})(?::(\d{2}))?/.exec(time.trim()) : null;
  if (!match) return undefined;
  const [year = NaN, month = NaN, day = NaN, hour = NaN, minute = NaN, second = 0] = match.slice(1).map((part) => Number(part ?? 0));
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  return Number.isFinite(ms) ? ms : undefined;
}

/** An offset in minutes as ISO 8601 text: 120 -> "+02:00", -330 -> "-05:30". */
function offsetText(minutes: number): string {
  const size = Math.abs(minutes);
  return `${minutes < 0 ? '-' : '+'}${String(Math.floor(size / 60)).padStart(2, '0')}:${String(size % 60).padStart(2, '0')}`;
}

function uptimeText(seconds: number): string {
  const s = Math.floor(seconds);
  const [d, h, m, sec] = [Math.floor(s / 86400), Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60), s % 60];
  if (d > 0) return `${d}d ${h}h ${m}m`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${sec}s`;
  return `${sec}s`;
}

/** The device object with date, utcOffset and uptime added where its members allow. */
export function describeInfo(info: DeviceInfo): InfoPayload {
  const payload: InfoPayload = { ...info };
  const stamp = decimalNumber(info.time_stamp);
  const wall = wallClockMs(info.time);
  if (stamp !== undefined && stamp > 0) {
    payload.date = new Date(stamp * 1000).toISOString();
    if (wall !== undefined) payload.utcOffset = Math.round((wall - stamp * 1000) / 900000) * 15;
  }
  const offset = payload.utcOffset ?? timezoneMinutes(info.timezone);
  if (offset !== undefined) payload.utcOffset = offset;
  if (wall !== undefined)
    payload.localTime = new Date(wall).toISOString().slice(0, 19) + (payload.utcOffset === undefined ? '' : offsetText(payload.utcOffset));
  const runTime = decimalNumber(info.run_time);
  if (runTime !== undefined && runTime >= 0) payload.uptime = uptimeText(runTime);
  const macAddress = macText(info.mac);
  if (macAddress) payload.macAddress = macAddress;
  return payload;
}
