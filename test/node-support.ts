/**
 * Test support for the node adapters: real en-US texts, status and msg recorders.
 * The test helper's RED._ returns the key itself, so a status such as "3 found" would read
 * "localbattery-discover.status.found"; `inEnglish` gives a node module the real texts, as the runtime does,
 * and fails loudly on a key that the catalogue lacks.
 */
import * as dgram from 'node:dgram';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vm from 'node:vm';
import type { NodeAPI } from 'node-red';
import { editorCatalogueJson } from '../src/editor/inputs';

const { name: packageName } = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8'));
const LOCALES = path.resolve(__dirname, '..', 'nodes', 'locales');

export function catalogue(language: string): Record<string, unknown> {
  const dir = path.join(LOCALES, language);
  const merged: Record<string, unknown> = {};
  for (const file of fs.readdirSync(dir).filter((name) => name.endsWith('.json'))) {
    Object.assign(merged, JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')));
  }
  return merged;
}

let english: Record<string, unknown> | undefined;

export function text(key: string, args: Record<string, unknown> = {}): string {
  english ??= catalogue('en-US');
  const value = key
    .split('.')
    .reduce<unknown>((node, part) => (node && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined), english);
  if (typeof value !== 'string') throw new Error(`no en-US text for ${key}`);
  return value.replace(/__(\w+)__/g, (_match, name: string) => String(args[name]));
}

/** Wraps a node module so that its RED._ gives the en-US texts; `extra` replaces other members of RED. */
export function inEnglish<T>(module: (RED: NodeAPI) => T, extra: Record<string, unknown> = {}): (RED: NodeAPI) => T {
  return (RED: NodeAPI) => module(Object.assign(Object.create(RED) as NodeAPI, { _: text }, extra));
}

/** Every key path that leads to a text, e.g. "localbattery-info.status.ok". */
export function keyPaths(tree: unknown, prefix = ''): string[] {
  if (typeof tree === 'string') return [prefix];
  if (!tree || typeof tree !== 'object') return [];
  return Object.entries(tree).flatMap(([key, value]) => keyPaths(value, prefix ? `${prefix}.${key}` : key));
}

interface Listening {
  on(event: string, listener: (...args: any[]) => void): unknown;
}

export interface Status {
  fill?: string;
  shape?: string;
  text?: string;
}

/** Every status `node` has shown so far, in order (the helper spies on Node.prototype.status). */
export function statusesOf(node: any): Status[] {
  return node.status
    .getCalls()
    .filter((call: { thisValue: unknown }) => call.thisValue === node)
    .map((call: { args: [Status] }) => call.args[0]);
}

export function lastStatus(node: any): Status | undefined {
  return statusesOf(node).at(-1);
}

/** The next msg that `node` (a helper or catch node) receives, or a rejection after `ms`. */
export function nextInput<T = any>(node: Listening, ms = 8000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no msg within ${ms} ms`)), ms);
    node.on('input', (msg: T) => {
      clearTimeout(timer);
      resolve(msg);
    });
  });
}

/** Resolves once `check` holds, polling every 10 ms; rejects after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The texts of node `type`: the same keys in en-US and de, every key that its runtime (.js) and editor (.html)
 * files name exists in en-US, and its en-US and de help pages.
 */
export function textKeysOf(type: string): { english: string[]; german: string[]; used: string[]; help: string; germanHelp: string } {
  const english = keyPaths(catalogue('en-US')[type]).map((key) => `${type}.${key}`);
  const german = keyPaths(catalogue('de')[type]).map((key) => `${type}.${key}`);
  const dir = path.resolve(__dirname, '..', 'nodes');
  const source = ['js', 'html'].map((ext) => fs.readFileSync(path.join(dir, `${type}.${ext}`), 'utf8')).join('\n');
  // Keys are written out in full, except where a prefix is completed at run time (ends with a dot).
  const used = [...new Set(source.match(new RegExp(`${type}\\.[A-Za-z]+(\\.[A-Za-z]+)+`, 'g')) ?? [])].filter(
    (key) => !/\.(svg|js|html|map)\b/.test(key),
  );
  const [help, germanHelp] = ['en-US', 'de'].map((language) => fs.readFileSync(path.join(LOCALES, language, `${type}.html`), 'utf8'));
  return { english, german, used, help, germanHelp };
}

/**
 * What a translated help page must keep of the original: the node type, the properties (<dt>) in order, the number of
 * headings and the property types. A property that is not a msg property name (a label such as "Username" or
 * "any msg", which is translated) counts by its place only.
 */
export function helpStructure(html: string): { type?: string; properties: string[]; headings: number; types: string[] } {
  const all = (pattern: RegExp) => [...html.matchAll(pattern)].map((match) => match[1].trim());
  return {
    type: /data-help-name="([^"]*)"/.exec(html)?.[1],
    properties: all(/<dt[^>]*>([^<]*)/g).map((name) => (/^[a-z][\w.]*$/.test(name) ? name : '(label)')),
    headings: all(/<h3>([^<]*)/g).length,
    types: all(/class="property-type">([^<]*)/g),
  };
}

/** A node type's editor definition, run in a stand-in editor whose catalogue request waits for `finishLoad`. */
export interface EditorUnderTest {
  definition: any;
  /** Answers the catalogue request. */
  finishLoad: () => void;
  /** URLs the editor script asked for. */
  requests: string[];
  /** How often a node was validated again. */
  revalidated: number;
}

/**
 * Runs a node type's editor script as the editor does: the package's shared catalogue script (which the .html loads
 * from the package's resources) first, then the node's own script, with `window` as the global. `RED` members
 * beyond what every script uses come in `extraRED`.
 */
export function loadEditorScript(nodeType: string, extraRED: Record<string, unknown> = {}): EditorUnderTest {
  const root = path.resolve(__dirname, '..', '..');
  const source = fs.readFileSync(path.join(root, 'nodes', `${nodeType}.html`), 'utf8');
  const shared = `resources/${packageName}/editor-catalogue.js`;
  if (!source.includes(`<script src="${shared}"></script>`)) throw new Error(`${nodeType}.html does not load ${shared}`);
  const editor = { requests: [] as string[], revalidated: 0 } as EditorUnderTest;
  const loaded = new Promise<unknown>((resolve) => {
    editor.finishLoad = () => resolve(editorCatalogueJson());
  });
  const $ = Object.assign(() => ({ length: 0 }), {
    getJSON: (url: string) => {
      editor.requests.push(url);
      return loaded;
    },
    // The rules script, as jQuery runs one: in the page's global scope.
    ajax: (options: { url: string; dataType?: string }) => {
      editor.requests.push(options.url);
      if (options.url !== 'localbattery/rules.js' || options.dataType !== 'script') throw new Error(`unexpected request ${options.url}`);
      vm.runInContext(fs.readFileSync(path.join(root, 'dist', 'src', 'editor', 'editor-rules.browser.js'), 'utf8'), context);
      return Promise.resolve();
    },
  });
  const RED = {
    editor: { validateNode: () => editor.revalidated++ },
    i18n: { lang: () => 'en-US' },
    view: { redraw: () => undefined },
    ...extraRED,
    nodes: {
      // As the editor does: the definition gets an `_` that knows this package's texts.
      registerType: (_type: string, definition: any) => {
        definition._ = text;
        editor.definition = definition;
      },
      getType: (type: string) => (type === nodeType ? editor.definition : undefined),
      eachNode: (visit: (node: unknown) => void) => visit({ type: nodeType }),
      eachConfig: () => undefined,
      // `extraRED.nodes` adds members such as `node` (look-up of a config node).
      ...(extraRED.nodes as Record<string, unknown> | undefined),
    },
  };
  const context = vm.createContext({ RED, $, TextEncoder });
  context.window = context;
  vm.runInContext(fs.readFileSync(path.join(root, 'resources', 'editor-catalogue.js'), 'utf8'), context);
  vm.runInContext(/<script type="text\/javascript">([\s\S]*?)<\/script>/.exec(source)![1], context);
  return editor;
}

/** Records every status, send and error call `node` makes from now on (the helper's spies end with unload). */
export function watchAfterClose(node: any): string[] {
  const calls: string[] = [];
  for (const method of ['status', 'send', 'error', 'warn']) {
    const original = node[method];
    node[method] = function (...args: unknown[]) {
      calls.push(`${method} ${JSON.stringify(args[0])}`);
      return original.apply(this, args);
    };
  }
  return calls;
}

/** Mocha hooks for the enclosing block: a UDP send to any address off loopback throws, so no test ever broadcasts. */
export function onlyLoopbackUdp(): void {
  // Put back as it was, and applied with its socket.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const originalSend = dgram.Socket.prototype.send;
  before(function () {
    (dgram.Socket.prototype as unknown as { send: (...args: unknown[]) => void }).send = function (this: dgram.Socket, ...args: unknown[]) {
      const address = args.find((arg, index) => index > 0 && typeof arg === 'string');
      if (typeof address !== 'string' || !address.startsWith('127.')) throw new Error(`test tried to send UDP to ${String(address)}`);
      return (originalSend as (...a: unknown[]) => void).apply(this, args);
    };
  });
  after(function () {
    dgram.Socket.prototype.send = originalSend;
  });
}

/** The messages of every error the node logged (done(err) logs too). */
export function errorsOf(node: any): string[] {
  // On Node-RED before 4.1 the node wraps its own error method (keepErrorCodes): the helper's spy is the prototype's.
  const spy = typeof node.error.getCalls === 'function' ? node.error : Object.getPrototypeOf(node).error;
  return spy
    .getCalls()
    .filter((call: { thisValue: unknown }) => call.thisValue === node)
    .map((call: { args: unknown[] }) => String(call.args[0]));
}

/** The messages of every warning the node logged. */
export function warningsOf(node: any): string[] {
  return (node.warn as { getCalls(): { thisValue: unknown; args: unknown[] }[] })
    .getCalls()
    .filter((call) => call.thisValue === node)
    .map((call) => String(call.args[0]));
}
