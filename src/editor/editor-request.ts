/**
 * What the editor's admin requests (Test connection, Set password) may take from a deployed device configuration.
 * The editor sends the dialog's fields as typed. `${NAME}` is put in only where the deployed configuration holds the
 * very same text in that field, and only when the request goes to that configuration's own host and port: any other
 * name (Node-RED would fall back to the process environment) stays as typed and fails the field's rule, so no value
 * reaches a host or a name lookup. No answer shows a value that was put in: a failed field is named by its `${NAME}`,
 * and an error whose text could show one gets a fixed text instead (texts are built, never scrubbed afterwards).
 */
import { DeviceError, ValidationError } from '../errors';
import { deviceInputs, envVarName } from './inputs';

/** The editor shows this in place of a stored password it does not know. */
export const STORED_PASSWORD = '__PWRD__';

/** The fields of a request in which `${NAME}` may be put in: those whose setting Node-RED puts variables in. */
const ENV_FIELDS = ['host', 'port', 'namespace', 'minInterval', 'timeout', 'chargeLimit', 'dischargeLimit', 'powerLimit'] as const;

/** Fields whose value an error text of the client can show (an address, an operation's namespace, a time-out). */
const SHOWN_IN_ERRORS = ['host', 'port', 'namespace', 'timeout'];

/** Error codes whose texts are fixed: they show no setting. */
const FIXED_TEXTS = new Set(['UNAUTHORIZED', 'REFUSED', 'CLOSED', 'QUEUE_FULL']);

/** Fixed texts for the other codes, when the error's own text could show a value. */
const CODE_TEXTS: Record<string, string> = {
  UNREACHABLE: 'Cannot reach the device',
  TIMEOUT: 'No answer from the device within the time-out',
  HTTP_STATUS: 'The device refused the request',
  BAD_RESPONSE: 'Unexpected answer from the device',
};

/** A deployed device configuration as saved: its settings before Node-RED put in `${NAME}`, and its password. */
export interface SavedDevice {
  settings: Record<string, unknown>;
  password?: string;
}

export interface EditorRequest {
  /** The request's settings, with the configuration's own `${NAME}` put in. */
  settings: Record<string, unknown>;
  password: string;
  /** The variables put in, by field (`password` for the password). */
  substituted: ReadonlyMap<string, string>;
}

export interface RouteError {
  message: string;
  code?: string;
  status?: number;
}

/** A host or port as typed, for comparing: numbers and text alike, a host in any case and with or without brackets. */
const asText = (value: unknown) => (typeof value === 'string' || typeof value === 'number' ? String(value).trim() : '');
const hostText = (value: unknown) =>
  asText(value)
    .replace(/^\[(.*)\]$/, '$1')
    .toLowerCase();

/**
 * The settings and password for a request `body` whose password is in `passwordField`. `saved` is the deployed
 * configuration the request names by `id` (undefined: none); `lookup` gives a variable's value as Node-RED does for it.
 * The stored password (for the placeholder or an empty field) is used only towards that configuration's own host and
 * port, written as it has them.
 */
export function editorRequest(
  body: Record<string, unknown>,
  passwordField: string,
  saved: SavedDevice | undefined,
  lookup: (name: string) => unknown,
): EditorRequest {
  const own =
    saved !== undefined && hostText(body.host) === hostText(saved.settings.host) && asText(body.port) === asText(saved.settings.port);
  const substituted = new Map<string, string>();
  const put = (field: string, typed: unknown, stored: unknown): unknown => {
    const name = envVarName(typed);
    if (!own || name === undefined || typed !== stored) return typed;
    const value = lookup(name);
    if (value === undefined) return typed;
    substituted.set(field, name);
    return value;
  };
  const settings: Record<string, unknown> = { ...body };
  for (const field of ENV_FIELDS) settings[field] = put(field, body[field], saved?.settings[field]);
  const field: unknown = body[passwordField];
  let typed = typeof field === 'string' ? field : '';
  // The placeholder stands for a secret that only the configuration's own host and port may get.
  if (typed === STORED_PASSWORD || typed === '') typed = own ? (saved.password ?? '') : '';
  const password = put('password', typed, saved?.password);
  return { settings, password: typeof password === 'string' ? password : '', substituted };
}

/** The name of the field's label in errors (e.g. "minimum interval" for minInterval). */
function labelsOf(field: string): string[] {
  if (field === 'password') return ['password', 'current password'];
  const spec = Object.values(deviceInputs.specs as Record<string, { setting?: string; label?: string }>).find((s) => s.setting === field);
  return [spec?.label ?? field];
}

/**
 * What a route answers for `error`: its own text where that cannot show a value put in for `substituted`, else a
 * fixed text that names the variables (a failed field by its `${NAME}` and the allowed range).
 */
export function answerError(error: unknown, substituted: ReadonlyMap<string, string>): RouteError {
  const { message, code, status } = error as { message?: unknown; code?: string; status?: number };
  const own: RouteError = { message: typeof message === 'string' ? message : String(error), code, status };
  if (substituted.size === 0) return own;
  if (error instanceof ValidationError) {
    const field = [...substituted.keys()].find((name) => labelsOf(name).includes(error.field));
    // A field as typed: its text shows what the editor sent.
    if (field === undefined) return own;
    return {
      code,
      message: `Invalid ${error.field}: the value of \${${substituted.get(field)}} is not allowed; allowed is ${error.allowed}`,
    };
  }
  if (error instanceof DeviceError && (FIXED_TEXTS.has(error.code) || !SHOWN_IN_ERRORS.some((field) => substituted.has(field)))) return own;
  const names = [...substituted.values()].map((name) => `\${${name}}`).join(', ');
  return { code, status, message: `${(code && CODE_TEXTS[code]) ?? 'The request failed'} (settings from ${names})` };
}

/** A Test connection report as answered: a namespace put in is named by its `${NAME}`. */
export function shownReport<T extends { namespace: string; detected: boolean }>(report: T, substituted: ReadonlyMap<string, string>): T {
  const name = substituted.get('namespace');
  return name === undefined || report.detected ? report : { ...report, namespace: `\${${name}}` };
}
