/**
 * Numbers as users and devices write them: decimal digits with an optional sign, point and exponent. Number()
 * also reads "0x32", "0b110010" and "0o62" as 50, and true as 1; nobody who types those means 50 W.
 * No quantifier is nested or followed by one that takes the same digits, so a test takes linear time (the earlier
 * `\d+\.?\d*` backtracked quadratically: 20 kB of digits and a letter blocked the event loop for a second).
 */
export const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;

/** The longest text read as a number: more digits than a double holds, and a longer text is no number anyone means. */
export const MAX_DECIMAL_LENGTH = 64;

/** A finite number, or a string that holds a decimal one (at most MAX_DECIMAL_LENGTH characters); otherwise undefined. */
export function decimalNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  if (trimmed.length > MAX_DECIMAL_LENGTH || !DECIMAL.test(trimmed)) return undefined;
  const number = Number(trimmed);
  return Number.isFinite(number) ? number : undefined;
}

/*
 * What an answer from the network may put into a message. A device, or anything that answers on its address, may send
 * any JSON: keys that reach an object's prototype when a flow assigns or deep-copies the object, a megabyte of text,
 * or thousands of members. Only members fit for msg.payload come through.
 */

/** Keys that reach an object's prototype when a flow assigns or copies the object member by member. */
const FOREIGN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** The longest text a device sends in one value (serial numbers and versions are a few dozen characters). */
export const MAX_TEXT_LENGTH = 256;

/** The most members an answer's object keeps (the device's have about a dozen). */
export const MAX_MEMBERS = 64;

/** A text no longer than MAX_TEXT_LENGTH, or a number, boolean or null: a value fit for msg.payload. */
function isPlainValue(value: unknown): boolean {
  if (typeof value === 'string') return value.length <= MAX_TEXT_LENGTH;
  return value === null || typeof value === 'number' || typeof value === 'boolean';
}

/**
 * The plain members of `source` whose keys `known` accepts (default: every key but the foreign ones), at most
 * MAX_MEMBERS; objects, arrays and over-long texts are dropped.
 */
export function plainMembers(source: object, known: (key: string) => boolean = () => true): Record<string, unknown> {
  const members: Record<string, unknown> = {};
  let count = 0;
  for (const key in source) {
    if (count >= MAX_MEMBERS) break;
    if (!Object.prototype.hasOwnProperty.call(source, key) || FOREIGN_KEYS.has(key) || !known(key)) continue;
    const value = (source as Record<string, unknown>)[key];
    if (!isPlainValue(value)) continue;
    members[key] = value;
    count++;
  }
  return members;
}
