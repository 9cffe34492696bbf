/**
 * For the browser tests: a real Node-RED as a child process on a free loopback port, with this package linked into a
 * temporary user directory (other Node-RED modules, such as the dashboard, come from this package's node_modules),
 * and Debian's chromium driven by playwright-core, allowed to fetch from 127.0.0.1 only.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

const ROOT = path.resolve(__dirname, '..', '..');
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string };
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Skips the calling suite without Chromium, except on CI (env CI set), where that is an error. */
export function requireChromium(context: Mocha.Context): void {
  if (fs.existsSync(CHROMIUM)) return;
  const message = `no Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (or set CHROMIUM_PATH)`;
  if (process.env.CI) throw new Error(`${message}: CI must provide it, see .ci/run`);
  console.log(`      skipped: ${message}`);
  context.skip();
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts Node-RED with `flows` and plain-JSON `credentials`; resolves once the flows have started. `modules` are
 * other Node-RED modules of this package's node_modules to link into the user directory, so that any Node-RED under
 * test (also one installed elsewhere, see scripts/compat-node-red-5.sh) loads them.
 */
export async function startNodeRed(
  userDir: string,
  flows: Record<string, unknown>[],
  credentials: Record<string, unknown>,
  log: string[],
  modules: string[] = [],
): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const links: Record<string, string> = { [PKG.name]: ROOT };
  for (const module of modules) links[module] = path.join(ROOT, 'node_modules', ...module.split('/'));
  for (const [name, target] of Object.entries(links)) {
    const link = path.join(userDir, 'node_modules', ...name.split('/'));
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(target, link, 'dir');
  }
  const dependencies = Object.fromEntries(Object.keys(links).map((name) => [name, '*']));
  fs.writeFileSync(path.join(userDir, 'package.json'), JSON.stringify({ name: 'local-battery-browser-test', private: true, dependencies }));
  fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(flows));
  // credentialSecret false: the credentials file is plain JSON.
  fs.writeFileSync(path.join(userDir, 'flows_cred.json'), JSON.stringify(credentials));
  const settings = {
    uiHost: '127.0.0.1',
    uiPort: port,
    // Absolute: a relative flow file is looked for in the working directory first (the repository root here).
    flowFile: path.join(userDir, 'flows.json'),
    credentialSecret: false,
    telemetry: { enabled: false },
    editorTheme: { tours: false, projects: { enabled: false } },
    // Without it the editor fetches the online node catalogue when it loads.
    externalModules: { autoInstall: false, palette: { allowInstall: false } },
    logging: { console: { level: 'info' } },
  };
  fs.writeFileSync(path.join(userDir, 'settings.js'), `module.exports = ${JSON.stringify(settings, null, 2)};\n`);

  const child = spawn(
    process.execPath,
    [
      require.resolve('node-red/red.js'),
      '--userDir',
      userDir,
      '--settings',
      path.join(userDir, 'settings.js'),
      '-D',
      'telemetry.enabled=false',
      '-D',
      'editorTheme.tours=false',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Node-RED did not start within 30 s:\n${log.join('')}`)), 30000);
    const onData = (chunk: Buffer) => {
      log.push(chunk.toString());
      if (/Started flows/.test(chunk.toString())) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => log.push(chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Node-RED exited with ${code}:\n${log.join('')}`));
    });
  });
  return { child, url: `http://127.0.0.1:${port}/` };
}

export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/**
 * Chromium with one context that may fetch from 127.0.0.1 only; anything else is refused and listed in `blocked`.
 * `locale` is the browser's language, from which the editor takes its own.
 */
export async function launchChromium(
  viewport: { width: number; height: number },
  blocked: string[],
  locale = 'en-US',
): Promise<{ browser: Browser; context: BrowserContext }> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ locale, viewport });
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === '127.0.0.1') return route.continue();
    blocked.push(url.href);
    return route.abort();
  });
  return { browser, context };
}

/** Node-RED with a flow, and one Chromium page on it that records its errors. */
export interface BrowserRun {
  userDir: string;
  red: ChildProcess;
  browser: Browser;
  page: Page;
  /** The editor's address, ending in "/". */
  url: string;
  redLog: string[];
  pageErrors: string[];
  blocked: string[];
}

export async function startBrowserRun(
  flows: Record<string, unknown>[],
  credentials: Record<string, unknown>,
  viewport: { width: number; height: number },
  modules: string[] = [],
  locale?: string,
): Promise<BrowserRun> {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'localbattery-browser-'));
  const redLog: string[] = [];
  const pageErrors: string[] = [];
  const blocked: string[] = [];
  const { child, url } = await startNodeRed(userDir, flows, credentials, redLog, modules);
  const { browser, context } = await launchChromium(viewport, blocked, locale);
  const page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  return { userDir, red: child, browser, page, url, redLog, pageErrors, blocked };
}

export async function stopBrowserRun(run: BrowserRun | undefined): Promise<void> {
  if (!run) return;
  await run.browser.close().catch(() => undefined);
  await stopChild(run.red);
  fs.rmSync(run.userDir, { recursive: true, force: true });
}
