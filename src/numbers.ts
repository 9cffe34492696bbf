/**
 * Numbers as users and devices write them: decimal digits with an optional sign, point and exponent. Number()
 * also reads "0x32", "0b110010" and "0o62" as 50, and true as 1; nobody who types those means 50 W.
 */
export const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** A finite number, or a string that holds a decimal one; otherwise undefined. */
export function decimalNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  if (!DECIMAL.test(trimmed)) return undefined;
  const number = Number(trimmed);
  return Number.isFinite(number) ? number : undefined;
}
