/**
 * Typed errors. Every error carries a stable `code` so flows (Catch node, switch on msg.error.code)
 * can tell a wrong password from an unreachable device without parsing text.
 */
export type ErrorCode =
  | 'INVALID_VALUE'
  | 'UNAUTHORIZED'
  | 'REFUSED'
  | 'TIMEOUT'
  | 'UNREACHABLE'
  | 'HTTP_STATUS'
  | 'BAD_RESPONSE'
  | 'QUEUE_FULL'
  | 'CLOSED';

export class DeviceError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Longest preview of a bad value in a message: a megabyte payload must not become a megabyte log line. */
const PREVIEW_CHARACTERS = 60;

function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  // JSON would show NaN and Infinity as null.
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') {
    if (value.length <= PREVIEW_CHARACTERS) return JSON.stringify(value);
    return `${JSON.stringify(value.slice(0, PREVIEW_CHARACTERS))}… (${value.length} characters)`;
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    // Circular, or a BigInt.
  }
  // What has no JSON form is named by its default text (e.g. [object Object]): a name, not a copy.
  // eslint-disable-next-line @typescript-eslint/no-base-to-string
  text ??= String(value);
  return text.length <= PREVIEW_CHARACTERS ? text : `${text.slice(0, PREVIEW_CHARACTERS)}… (${text.length} characters)`;
}

/** A value that must not reach the device: names the field, the value and what is allowed. */
export class ValidationError extends DeviceError {
  readonly field: string;
  readonly value: unknown;
  readonly allowed: string;
  readonly point?: { name: string; address: number };

  constructor(field: string, value: unknown, allowed: string, point?: { name: string; address: number }) {
    const where = point ? ` (point ${point.name}, address ${point.address})` : '';
    super('INVALID_VALUE', `Invalid ${field}${where}: got ${show(value)}, allowed is ${allowed}`);
    this.field = field;
    this.value = value;
    this.allowed = allowed;
    this.point = point ? { name: point.name, address: point.address } : undefined;
  }
}

/**
 * HTTP 401. The device answers the same way to a wrong password and to any operation while it still has
 * its default password, so `mayBeDefaultPassword` is set until these credentials have worked once. A 401 to a
 * password change means the current password is wrong.
 */
export class UnauthorizedError extends DeviceError {
  readonly mayBeDefaultPassword: boolean;

  constructor(reason: 'wrong-or-default' | 'no-longer-accepted' | 'wrong-current-password') {
    super(
      'UNAUTHORIZED',
      reason === 'wrong-or-default'
        ? 'Unauthorized (401): wrong username or password, or the device still has its default password: set a new one first'
        : reason === 'wrong-current-password'
          ? 'Unauthorized (401): the current password is wrong (on a new device: the default password)'
          : 'Unauthorized (401): the device no longer accepts this username and password',
    );
    this.mayBeDefaultPassword = reason === 'wrong-or-default';
  }
}

/** The device answered `result: false`. */
export class RefusedError extends DeviceError {
  readonly operation: string;
  readonly address?: number;
  readonly values?: number[];

  constructor(operation: string, detail: string, address?: number, values?: number[]) {
    super('REFUSED', `The device refused ${operation}${detail ? ': ' + detail : ''} (result false)`);
    this.operation = operation;
    this.address = address;
    this.values = values;
  }
}

export class TimeoutError extends DeviceError {
  constructor(operation: string, timeoutMs: number) {
    super('TIMEOUT', `No answer to ${operation} within ${timeoutMs} ms`);
  }
}

export class UnreachableError extends DeviceError {
  constructor(target: string, cause: NodeJS.ErrnoException) {
    const reason = cause.code === 'ECONNRESET' ? 'connection reset by the device' : cause.code ?? cause.message;
    super('UNREACHABLE', `Cannot reach the device at ${target}: ${reason}`, { cause });
  }
}

export class HttpStatusError extends DeviceError {
  readonly status: number;

  constructor(operation: string, status: number) {
    const hint = status === 400 ? ' (bad request: the device did not understand it)' : status === 503 ? ' (device busy)' : '';
    super('HTTP_STATUS', `${operation} failed with HTTP ${status}${hint}`);
    this.status = status;
  }
}

export class BadResponseError extends DeviceError {
  constructor(operation: string, detail: string) {
    super('BAD_RESPONSE', `Unexpected answer to ${operation}: ${detail}`);
  }
}

export class QueueFullError extends DeviceError {
  constructor(limit: number) {
    super('QUEUE_FULL', `Too many requests waiting for this device (limit ${limit}); slow the flow down`);
  }
}

export class ClientClosedError extends DeviceError {
  /** `inFlight`: the request had gone out, so the device may have carried it out. */
  constructor(inFlight = false) {
    super(
      'CLOSED',
      inFlight
        ? 'The device connection was closed (redeploy or shutdown) while the request was under way: the device may have carried it out'
        : 'The device connection was closed (redeploy or shutdown) before the request was sent',
    );
  }
}
