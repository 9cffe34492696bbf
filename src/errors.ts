/**
 * Typed errors. Every error carries a stable `code` so flows (Catch node, switch on msg.error.code)
 * can tell a wrong password from an unreachable device without parsing text.
 */
export type ErrorCode =
  'INVALID_VALUE' | 'UNAUTHORIZED' | 'REFUSED' | 'TIMEOUT' | 'UNREACHABLE' | 'HTTP_STATUS' | 'BAD_RESPONSE' | 'QUEUE_FULL' | 'CLOSED';

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

const UNAUTHORIZED_REASONS = {
  'wrong-or-default': 'wrong username or password, or the device still has its default password: set a new one first',
  'wrong-current-password': 'the current password is wrong (on a new device: the default password)',
  'no-longer-accepted': 'the device no longer accepts this username and password',
  'digest-required': 'the device wants HTTP + Digest: set Authentication to HTTP + Digest and enter its password',
} as const;

/**
 * HTTP 401. The device answers the same way to a wrong password and to any operation while it still has
 * its default password, so `mayBeDefaultPassword` is set until these credentials have worked once. A 401 to a
 * password change means the current password is wrong.
 */
export class UnauthorizedError extends DeviceError {
  readonly reason: keyof typeof UNAUTHORIZED_REASONS;
  readonly mayBeDefaultPassword: boolean;

  constructor(reason: keyof typeof UNAUTHORIZED_REASONS) {
    super('UNAUTHORIZED', `Unauthorized (401): ${UNAUTHORIZED_REASONS[reason]}`);
    this.reason = reason;
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

/** The likely cause of a failed connection, by its error code. */
const UNREACHABLE_CAUSES: Record<string, string> = {
  ECONNRESET: 'connection reset by the device',
  ECONNREFUSED: 'connection refused (is the local API enabled in the app, and is the port right?)',
  EHOSTUNREACH: 'no route to the host (is the device on and on this network?)',
  ENOTFOUND: 'unknown host name',
};

export class UnreachableError extends DeviceError {
  constructor(target: string, cause: NodeJS.ErrnoException) {
    const reason = (cause.code && UNREACHABLE_CAUSES[cause.code]) ?? cause.code ?? cause.message;
    super('UNREACHABLE', `Cannot reach the device at ${target}: ${reason}`, { cause });
  }
}

/**
 * What a status most likely means. `namespace`: the operation's namespace was configured ('configured namespace'),
 * or every namespace detection tries was refused ('no namespace').
 */
function statusHint(status: number, namespace?: 'configured namespace' | 'no namespace'): string {
  if (namespace === 'no namespace') return ' (the device knows neither name: is this its local API? check host and port)';
  if (namespace === 'configured namespace' && (status === 404 || status === 400)) {
    return ' (the device may name its operations differently: leave Namespace empty to detect it)';
  }
  if (status === 404) return " (not found: is this the device's local API? check host and port)";
  if (status === 400) return ' (bad request: the device did not understand it)';
  if (status === 503) return ' (device busy)';
  return '';
}

export class HttpStatusError extends DeviceError {
  readonly status: number;

  constructor(operation: string, status: number, namespace?: 'configured namespace' | 'no namespace') {
    super('HTTP_STATUS', `${operation} failed with HTTP ${status}${statusHint(status, namespace)}`);
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
