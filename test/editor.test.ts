/**
 * End-to-end test of the node editors in a real browser: Debian's chromium (driven by playwright-core) against a real
 * Node-RED 4.1 run as a child process with this package, and the simulator as the device. Everything listens on
 * 127.0.0.1 and the browser may not fetch anything from anywhere else.
 *
 * The steps share one editor page and run in order: palette, read picker, write, control and set-password
 * validation, the device configuration dialog, deploy, help, and finally the page's error log. A step that fails
 * leaves no dialog open for the next; the hooks stop browser, Node-RED and simulator and remove the user directory.
 * Without chromium the test is skipped, except on CI (env CI set), where it fails.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import should from 'should';
import type { Browser, Page } from 'playwright-core';
import { DeviceSimulator } from '../src/simulator';
import {
  MODEL_CLASSES,
  READ_POINTS,
  WRITE_POINTS,
  describeAllowed,
  groupLimits,
  pointByName,
  readPointsWithModelPoints,
  type WritePoint,
} from '../src/points/catalogue';
import { NUMBER_RULES, REGULATOR_DEFAULTS, ZERO_FEED_IN_RULES, allowedText, deviceLimits, settingRulesJson } from '../src/editor/inputs';
import { zeroFeedInProblems } from '../src/editor/editor-rules';
import { text } from './node-support';
import { DEVICES, VERDICTS, describeRow, runtimeVerdict } from './verdicts';
import { launchChromium, requireChromium, startNodeRed, stopChild } from './node-red-process';

const ROOT = path.resolve(__dirname, '..', '..');
const PASSWORD = 'e2e-secret-1';
const DEVICE_TYPE = 'SIM-E2E-7';
const SERIAL = 'E2E0000000004242';
const FIRMWARE = 'V9.9.99_E2E';

const FLOW_TYPES = [
  'localbattery-discover',
  'localbattery-read',
  'localbattery-write',
  'localbattery-control',
  'localbattery-info',
  'localbattery-password',
  'localbattery-zero-feed-in',
];
/** The catalogue key of each flow node's palette label. */
const PALETTE_LABEL_KEYS: Record<string, string> = {
  'localbattery-discover': 'localbattery-discover.label.paletteLabel',
  'localbattery-read': 'localbattery-read.paletteLabel',
  'localbattery-write': 'localbattery-write.paletteLabel',
  'localbattery-control': 'localbattery-control.paletteLabel',
  'localbattery-info': 'localbattery-info.label.paletteLabel',
  'localbattery-password': 'localbattery-password.label.paletteLabel',
  'localbattery-zero-feed-in': 'localbattery-zero-feed-in.paletteLabel',
};

const ID = {
  tab: 'e2etab0000000001',
  device: 'e2edevice0000001',
  bk1600: 'e2edevice0000002',
  discover: 'e2ediscover00001',
  read: 'e2eread000000001',
  write: 'e2ewrite00000001',
  control: 'e2econtrol000001',
  info: 'e2einfo000000001',
  password: 'e2epassword00001',
  'zero-feed-in': 'e2ezerofeedin001',
};
const INITIAL_POINTS = ['batterySoc', 'batteryPower'];
const BK1600 = MODEL_CLASSES['1600'];

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function writePoint(name: string): WritePoint {
  const point = pointByName(name);
  if (!point || point.direction !== 'write') throw new Error(`no write point ${name}`);
  return point;
}

function flows(simulatorPort: number): Record<string, unknown>[] {
  const at = (x: number, y: number) => ({ z: ID.tab, x, y, wires: [] as unknown[] });
  const device = {
    id: ID.device,
    type: 'localbattery-device',
    name: 'Simulator',
    host: '127.0.0.1',
    port: simulatorPort,
    username: 'opend',
    namespace: 'Vendor',
    minInterval: 1000,
    timeout: 5000,
  };
  return [
    { id: ID.tab, type: 'tab', label: 'Editor test' },
    device,
    // A second battery with the 1600 class's limits, for a group's (used by no node as deployed).
    { ...device, id: ID.bk1600, name: 'BK1600', chargeLimit: BK1600.maxChargePower, dischargeLimit: BK1600.maxDischargePower },
    {
      id: ID.discover,
      type: 'localbattery-discover',
      name: '',
      target: '127.0.0.1',
      listenTime: 1,
      port: 8099,
      localPort: 0,
      ...at(200, 80),
      wires: [[], []],
    },
    {
      id: ID.read,
      type: 'localbattery-read',
      name: '',
      device: ID.device,
      points: INITIAL_POINTS,
      interval: 2,
      output: 'object',
      topicPrefix: '',
      decode: false,
      onlyChange: false,
      ...at(200, 160),
      wires: [[]],
    },
    {
      id: ID.write,
      type: 'localbattery-write',
      name: '',
      device: ID.device,
      point: 'feedInPowerLimitSetting',
      value: '800',
      valueType: 'num',
      ...at(200, 240),
      wires: [[]],
    },
    {
      id: ID.control,
      type: 'localbattery-control',
      name: '',
      device: ID.device,
      power: 800,
      chargeSoc: 100,
      dischargeSoc: 10,
      clamp: false,
      switchMode: true,
      modeCheck: 600,
      repeat: 30,
      skipped: 'pass',
      ...at(200, 320),
      wires: [[]],
    },
    { id: ID.info, type: 'localbattery-info', name: '', device: ID.device, ...at(200, 400), wires: [[]] },
    { id: ID.password, type: 'localbattery-password', name: '', device: ID.device, source: 'payload', ...at(200, 480), wires: [[]] },
    // As a new node from the palette gets it (the editor's defaults); its meter time-out acts only once it steered.
    {
      id: ID['zero-feed-in'],
      type: 'localbattery-zero-feed-in',
      name: '',
      device: ID.device,
      meterSource: 'message',
      meterInterval: 1,
      target: 0,
      deadBand: 20,
      maxCharge: '',
      maxDischarge: '',
      chargeSoc: 100,
      dischargeSoc: 10,
      meterTimeout: 10,
      onTimeout: 'standby',
      gridCharge: false,
      onStop: 'self-consumption',
      ...at(200, 560),
      wires: [[]],
    },
  ];
}

describe('editor in a real browser (chromium)', function () {
  this.timeout(60000);

  let simulator: DeviceSimulator | undefined;
  let userDir: string | undefined;
  let red: ChildProcess | undefined;
  let browser: Browser | undefined;
  let page: Page;
  const redLog: string[] = [];
  const pageErrors: string[] = [];
  const consoleErrors: string[] = [];
  const blocked: string[] = [];

  before(async function () {
    requireChromium(this);
    simulator = new DeviceSimulator({
      port: 0,
      udpPort: null,
      password: PASSWORD,
      type: DEVICE_TYPE,
      serialNumber: SERIAL,
      firmware: FIRMWARE,
    });
    await simulator.start();
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'localbattery-editor-'));
    const started = await startNodeRed(userDir, flows(simulator.port), { [ID.device]: { password: PASSWORD } }, redLog);
    red = started.child;

    let context;
    ({ browser, context } = await launchChromium({ width: 1400, height: 900 }, blocked));
    page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(`${error.message}\n${error.stack ?? ''}`));
    page.on('console', (message) => {
      const where = `${message.location().url}:${message.location().lineNumber}`;
      // Errors of any origin; the editor's report of a validator that threw (a console.log); our own warnings.
      if (
        message.type() === 'error' ||
        /^Validation error/.test(message.text()) ||
        (message.type() === 'warning' && /localbattery/i.test(message.text()))
      ) {
        consoleErrors.push(`${message.type()}: ${message.text()} (${where})`);
      }
    });
    await page.goto(started.url);
    await page.locator(`[id="${ID.read}"]`).waitFor({ state: 'visible', timeout: 30000 });
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed') {
      console.log(`--- Node-RED log ---\n${redLog.join('').slice(-4000)}`);
      if (pageErrors.length) console.log(`--- page errors ---\n${pageErrors.join('\n')}`);
      if (consoleErrors.length) console.log(`--- console errors ---\n${consoleErrors.join('\n')}`);
    }
    // A step that failed with a dialog open must not leave it to the next.
    if (page && !page.isClosed()) {
      for (let i = 0; i < 3; i++) {
        const cancel = page.locator('#node-config-dialog-cancel:visible, #node-dialog-cancel:visible').first();
        if ((await cancel.count()) === 0) break;
        await cancel.click().catch(() => undefined);
        await page.waitForTimeout(300);
      }
    }
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await stopChild(red);
    await simulator?.stop().catch(() => undefined);
    if (userDir) fs.rmSync(userDir, { recursive: true, force: true });
  });

  // ---- helpers on the page ----

  /**
   * Waits until the edit tray that holds `button` has slid in; a new tray also has its form filled and focused
   * (the editor focuses the first field once the form is built).
   */
  async function trayReady(button: string, focused = true, timeout?: number): Promise<void> {
    await page.waitForFunction(
      ({ selector, focused }) => {
        const doc = (globalThis as any).document;
        const tray = doc.querySelector(selector)?.closest('.red-ui-tray');
        return !!tray && (globalThis as any).getComputedStyle(tray).right === '0px' && (!focused || tray.contains(doc.activeElement));
      },
      { selector: button, focused },
      { timeout },
    );
  }

  async function openEditor(id: string): Promise<void> {
    await page.locator(`[id="${id}"]`).dblclick();
    try {
      await trayReady('#node-dialog-ok', true, 10000);
    } catch (error) {
      // A double click that lands while the canvas still redraws after the last tray closed opens nothing: once more.
      if ((await page.locator('.red-ui-tray').count()) > 0) throw error;
      await page.locator(`[id="${id}"]`).dblclick();
      await trayReady('#node-dialog-ok');
    }
  }

  async function done(): Promise<void> {
    await page.locator('#node-dialog-ok').click();
    await page.locator('.red-ui-tray').first().waitFor({ state: 'detached' });
  }

  async function openDeviceDialog(): Promise<void> {
    // The config node's edit button: btn-…-edit since Node-RED 4, lookup-… in 3.x.
    await page.locator('#node-input-btn-device-edit, #node-input-lookup-device').first().click();
    await trayReady('#node-config-dialog-ok');
  }

  async function updateDevice(): Promise<void> {
    await page.locator('#node-config-dialog-ok').click();
    await page.locator('#node-config-dialog-ok').waitFor({ state: 'detached' });
    // Back in the node's tray.
    await trayReady('#node-dialog-ok', false);
  }

  type NodeState = { valid: boolean; validationErrors: string[] } & Record<string, any>;
  /** The node's properties (its defaults), validity and validation messages, as the editor holds them. */
  function nodeState(id: string): Promise<NodeState> {
    return page.evaluate((nodeId) => {
      const node = (globalThis as any).RED.nodes.node(nodeId);
      const state: Record<string, unknown> = { valid: node.valid, validationErrors: node.validationErrors || [] };
      for (const key of Object.keys(node._def.defaults)) state[key] = node[key];
      return JSON.parse(JSON.stringify(state));
    }, id);
  }

  /** Opens the device dialog's Advanced section unless it is open. */
  async function showAdvanced(): Promise<void> {
    if (!(await page.locator('#node-config-input-minInterval').isVisible())) {
      await page.locator('.red-ui-tray details > summary', { hasText: text('localbattery-device.label.advanced') }).click();
    }
    await page.locator('#node-config-input-minInterval').waitFor({ state: 'visible' });
  }

  async function errorMarkerShown(id: string): Promise<boolean> {
    return page.locator(`[id="${id}"] .red-ui-flow-node-error`).isVisible();
  }

  /** Types into a field the way a user does (keyup and change events), replacing what was there. */
  async function typeInto(selector: string, value: string): Promise<void> {
    const field = page.locator(selector);
    await field.fill('');
    await field.pressSequentially(value);
    await field.press('Tab');
  }

  // ---- the steps ----

  it('shows the category "home battery" with the seven flow nodes and their palette labels', async () => {
    const category = page.locator('#red-ui-palette-container-home_battery');
    await category.waitFor({ state: 'visible' });
    squash(await page.locator('#red-ui-palette-header-home_battery').innerText()).should.equal('home battery');
    const types = await category
      .locator('.red-ui-palette-node')
      .evaluateAll((nodes) => nodes.map((n: any) => n.getAttribute('data-palette-type')));
    types.sort().should.eql([...FLOW_TYPES].sort());
    for (const type of FLOW_TYPES) {
      const label = squash(await category.locator(`.red-ui-palette-node[data-palette-type="${type}"] .red-ui-palette-label`).innerText());
      label.should.equal(squash(text(PALETTE_LABEL_KEYS[type])), type);
    }
    // The configuration node is no palette entry.
    (await page.locator('.red-ui-palette-node[data-palette-type="localbattery-device"]').count()).should.equal(0);
  });

  it('finds the seven flow nodes, and only them, by the palette search "indevolt"', async () => {
    const search = page.locator('#red-ui-palette-search input');
    // Typed as a user does: the search box filters on key-up. Node-RED hides what the filter leaves out (3.x by
    // display alone, 4.x also marks it with data-filter), so the wait reads each entry's own display.
    await search.pressSequentially('indevolt');
    const shownTypes = () =>
      [...(globalThis as any).document.querySelectorAll('#red-ui-palette-container .red-ui-palette-node')]
        .filter((n: any) => n.style.display !== 'none')
        .map((n: any) => n.getAttribute('data-palette-type'))
        .sort()
        .join(',');
    const expected = [...FLOW_TYPES].sort().join(',');
    await page
      .waitForFunction(`(${shownTypes.toString()})() === ${JSON.stringify(expected)}`, undefined, { timeout: 10000 })
      .catch(async () => {
        // The wait's own message says nothing of what was shown; the list does.
        (await page.evaluate(shownTypes)).should.equal(expected);
      });
    await search.press('Escape');
    await page.waitForFunction(
      () =>
        (globalThis as any).document.querySelectorAll('#red-ui-palette-container .red-ui-palette-node[style*="display: none"]').length ===
        0,
    );
  });

  it("fills the read node's point picker from the catalogue, filters it, and saves a picked point", async () => {
    await openEditor(ID.read);
    await page.locator('#localbattery-read-picker .localbattery-read-group').first().waitFor();

    const categories = [...new Set(READ_POINTS.map((p) => p.category))];
    (await page.locator('#localbattery-read-picker .localbattery-read-head b').allInnerTexts()).should.eql(categories);
    (await page.locator('#localbattery-read-picker .localbattery-read-row code').allTextContents()).should.eql(
      readPointsWithModelPoints().map((p) => p.name),
    );
    (await page.locator('#localbattery-read-count').innerText()).should.equal(
      text('localbattery-read.editor.selected', { count: INITIAL_POINTS.length }),
    );

    // The filter narrows the list to the points whose name, label, address, unit or category mention "soc".
    await page.locator('#localbattery-read-filter').pressSequentially('soc');
    const matching = READ_POINTS.filter((p) =>
      [p.name, p.label, p.address, p.unit ?? '', p.category].join(' ').toLowerCase().includes('soc'),
    );
    matching.length.should.be.above(1);
    matching.length.should.be.below(READ_POINTS.length);
    (await page.locator('#localbattery-read-picker .localbattery-read-row:visible code').allInnerTexts()).should.eql(
      matching.map((p) => p.name),
    );
    const visibleCategories = await page
      .locator('#localbattery-read-picker .localbattery-read-group:visible .localbattery-read-head b')
      .allInnerTexts();
    visibleCategories.should.eql([...new Set(matching.map((p) => p.category))]);

    // Pick a point the simulator has, not yet picked.
    const pick = matching.find((p) => !INITIAL_POINTS.includes(p.name) && simulator!.value(p.address) !== undefined)!;
    should.exist(pick);
    await page.locator(`#localbattery-read-picker input.localbattery-read-point[data-name="${pick.name}"]`).check();
    (await page.locator('#localbattery-read-count').innerText()).should.equal(
      text('localbattery-read.editor.selected', { count: INITIAL_POINTS.length + 1 }),
    );
    await done();

    const order = READ_POINTS.map((p) => p.name);
    const expected = [...INITIAL_POINTS, pick.name].sort((a, b) => order.indexOf(a) - order.indexOf(b));
    const node = await nodeState(ID.read);
    node.points.should.eql(expected);
    node.valid.should.be.true();
  });

  it('marks a write node with an out-of-range constant invalid, shows the allowed range, and accepts one in range', async () => {
    const power = writePoint('controlPower');
    const allowedText = text('localbattery-write.label.allowed', { allowed: describeAllowed(power) });
    // The typed input the editor puts after the hidden #node-input-value.
    const valueInput = page.locator('#node-input-value + .red-ui-typedInput-container input.red-ui-typedInput-input');

    await openEditor(ID.write);
    await page.locator('#node-input-point option[value="controlPower"]').waitFor({ state: 'attached' });
    // Every write point of the catalogue is offered.
    const offered = await page
      .locator('#node-input-point option')
      .evaluateAll((options) => options.map((o: any) => o.value).filter(Boolean));
    offered.should.eql(WRITE_POINTS.map((p) => p.name));
    await page.locator('#node-input-point').selectOption('controlPower');
    (await page.locator('#localbattery-write-allowed').innerText()).should.startWith(allowedText);
    await valueInput.fill('5000');
    await valueInput.press('Tab');
    await page.locator('.red-ui-typedInput-container.input-error').waitFor();
    await done();

    let node = await nodeState(ID.write);
    node.point.should.equal('controlPower');
    node.value.should.equal('5000');
    node.valid.should.be.false();
    node.validationErrors.should.containEql(
      text('localbattery-write.validation.range', { value: '5000', point: 'controlPower', allowed: describeAllowed(power) }),
    );
    await page.locator(`[id="${ID.write}"] .red-ui-flow-node-error`).waitFor({ state: 'visible' });

    await openEditor(ID.write);
    (await page.locator('#node-input-point').inputValue()).should.equal('controlPower');
    (await page.locator('#localbattery-write-allowed').innerText()).should.startWith(allowedText);
    await valueInput.fill('800');
    await valueInput.press('Tab');
    await done();
    node = await nodeState(ID.write);
    node.value.should.equal('800');
    node.valid.should.be.true();
    (await errorMarkerShown(ID.write)).should.be.false();
  });

  it('refuses power 3000 and SOC 2 in the control node and accepts 800 and 50', async () => {
    const power = writePoint('controlPower');
    const soc = writePoint('controlSoc');
    await openEditor(ID.control);
    // The hints carry the catalogue's bounds once it has loaded.
    await page.locator('#localbattery-control-power-hint', { hasText: `${power.min}–${power.max}` }).waitFor();
    (await page.locator('#localbattery-control-power-hint').innerText()).should.equal(
      text('localbattery-control.label.powerHint', { min: power.min, max: power.max }),
    );
    await typeInto('#node-input-power', '3000');
    await typeInto('#node-input-chargeSoc', '2');
    (await page.locator('#node-input-power').getAttribute('class'))!.should.match(/input-error/);
    (await page.locator('#node-input-chargeSoc').getAttribute('class'))!.should.match(/input-error/);
    await done();

    let node = await nodeState(ID.control);
    node.valid.should.be.false();
    node.validationErrors.should.containEql(text('localbattery-control.validation.power', { min: power.min, max: power.max }));
    node.validationErrors.should.containEql(text('localbattery-control.validation.soc', { min: soc.min, max: soc.max }));
    await page.locator(`[id="${ID.control}"] .red-ui-flow-node-error`).waitFor({ state: 'visible' });

    await openEditor(ID.control);
    // 0x320 is 800 to Number(), but not to the runtime's decimal rule.
    await typeInto('#node-input-power', '0x320');
    (await page.locator('#node-input-power').getAttribute('class'))!.should.match(/input-error/);
    await typeInto('#node-input-power', '800');
    await typeInto('#node-input-chargeSoc', '50');
    ((await page.locator('#node-input-power').getAttribute('class')) ?? '').should.not.match(/input-error/);
    await done();
    node = await nodeState(ID.control);
    String(node.power).should.equal('800');
    String(node.chargeSoc).should.equal('50');
    node.valid.should.be.true();
    (await errorMarkerShown(ID.control)).should.be.false();
  });

  it("gives a new zero feed-in node the runtime's defaults, and an older node's dialog each choice at its default", async () => {
    const defaults: Record<string, unknown> = await page.evaluate(() => {
      const definition = (globalThis as any).RED.nodes.getType('localbattery-zero-feed-in').defaults;
      return Object.fromEntries(Object.entries(definition).map(([key, spec]: [string, any]) => [key, spec.value]));
    });
    const { meterTimeoutS, meterIntervalS, chargeModePower, ...sameNames } = REGULATOR_DEFAULTS;
    for (const [key, value] of Object.entries(sameNames)) should(defaults[key]).equal(value, key);
    defaults.meterTimeout!.should.equal(meterTimeoutS);
    defaults.meterInterval!.should.equal(meterIntervalS);
    // Empty: the device's charge limit, as at run time.
    defaults.chargeModePower!.should.equal('');
    (chargeModePower as number).should.be.above(0);
    // The node in this flow predates the meter, mode and leash settings: its dialog shows their defaults, not blanks.
    await openEditor(ID['zero-feed-in']);
    for (const field of ['meterSends', 'meterSign', 'meterUnit', 'mode', 'onTimeout', 'onStop'])
      (await page.locator(`#node-input-${field}`).inputValue()).should.equal(String(defaults[field]), field);
    (await page.locator('#node-input-leash').inputValue()).should.equal(String(REGULATOR_DEFAULTS.leash));
    await page.locator('#node-dialog-cancel').click();
    await page.locator('.red-ui-tray').first().waitFor({ state: 'detached' });
  });

  it('groups the zero feed-in dialog in five sections, folds the rarely needed fields and opens a fold that holds a change', async () => {
    const id = ID['zero-feed-in'];
    const prefix = 'localbattery-zero-feed-in';
    const sections: Record<string, { shown: string[]; folded: string[] }> = {
      batteries: { shown: ['device'], folded: ['device2', 'device3', 'device4'] },
      meter: { shown: ['meterSource', 'meterInterval'], folded: ['meterSends', 'meterSign', 'meterUnit'] },
      limits: { shown: ['target', 'deadBand', 'maxCharge', 'maxDischarge', 'chargeSoc', 'dischargeSoc', 'gridCharge'], folded: [] },
      safety: { shown: ['meterTimeout', 'onTimeout', 'onStop'], folded: ['leash'] },
      modes: { shown: ['mode', 'chargeModePower', 'chargeModeSoc'], folded: [] },
    };
    await openEditor(id);
    const order = await page
      .locator(`.${prefix}-section`)
      .evaluateAll((nodes) => nodes.map((n: any) => n.id.replace('localbattery-zero-feed-in-section-', '')));
    order.should.eql(Object.keys(sections));
    for (const [name, { shown, folded }] of Object.entries(sections)) {
      const section = page.locator(`#${prefix}-section-${name}`);
      squash(await section.locator('h4').innerText()).should.equal(text(`${prefix}.section.${name}`));
      // Every field of the node sits in its section, with the label of the catalogue.
      for (const field of [...shown, ...folded]) (await section.locator(`#node-input-${field}`).count()).should.equal(1, field);
      for (const field of shown) {
        const visible = page.locator(`#node-input-${field}`);
        // A device field is a select the editor builds beside the input.
        (await visible.isVisible()).should.be.true(field);
      }
      for (const field of folded) (await page.locator(`#node-input-${field}`).isVisible()).should.be.false(field);
    }
    // Every field of the node's defaults is in a section, but the name.
    const inSections = await page.locator(`.${prefix}-section [id^="node-input-"]`).evaluateAll((nodes) => nodes.map((n: any) => n.id));
    const defaults = Object.keys((await nodeState(id)) as object).filter((key) => !['valid', 'validationErrors', 'name'].includes(key));
    for (const key of defaults) inSections.should.containEql(`node-input-${key}`);
    squash(await page.locator('label[for="node-input-target"]').innerText()).should.equal(text(`${prefix}.label.target`));
    // A changed setting behind a fold: the fold is open the next time.
    await page.locator(`#${prefix}-more-meter > summary`).click();
    await page.locator('#node-input-meterSign').selectOption('export-positive');
    await done();
    await openEditor(id);
    (await page.locator('#node-input-meterSign').isVisible()).should.be.true();
    (await page.locator('#node-input-leash').isVisible()).should.be.false();
    await page.locator('#node-input-meterSign').selectOption('import-positive');
    await done();
    (await nodeState(id)).meterSign.should.equal('import-positive');
  });

  it('gives zero feed-in an icon of its own', async () => {
    const icon = (type: string) =>
      page.locator(`.red-ui-palette-node[data-palette-type="${type}"] .red-ui-palette-icon`).evaluate((n: any) => n.style.backgroundImage);
    (await icon('localbattery-zero-feed-in')).should.containEql('localbattery-zero-feed-in.svg');
    (await icon('localbattery-control')).should.not.containEql('localbattery-zero-feed-in.svg');
  });

  it('checks the zero feed-in settings with the served rules: refuses 0x50, 3000 W, SOC 2 and a time-out of 0; takes ${VAR} and empty', async () => {
    const id = ID['zero-feed-in'];
    const power = writePoint('controlPower');
    const soc = writePoint('controlSoc');
    const rules = ZERO_FEED_IN_RULES;
    await openEditor(id);
    // The device of the test has the specification's limits, both 2400 W.
    for (const direction of ['charge', 'discharge'])
      await page.locator(`#localbattery-zero-feed-in-${direction}-hint`, { hasText: `${power.min}–${power.max}` }).waitFor();
    // The meter interval is asked only for the device's own meter.
    // The interval counts for both sources (the time-out is checked against it).
    (await page.locator('#node-input-meterInterval').isVisible()).should.be.true();
    await page.locator('#node-input-meterSource').selectOption('device');
    await typeInto('#node-input-target', '0x50');
    await typeInto('#node-input-maxDischarge', '3000');
    await typeInto('#node-input-chargeSoc', '2');
    await typeInto('#node-input-meterTimeout', '0');
    // The charge mode's power within the device's charge limit, its SOC within the control write's.
    await page.locator('#localbattery-zero-feed-in-charge-mode-hint', { hasText: `${power.min}–${power.max}` }).waitFor();
    await typeInto('#node-input-chargeModePower', '3000');
    await typeInto('#node-input-chargeModeSoc', '101');
    await page.locator('#node-input-mode').selectOption('hold');
    for (const field of ['target', 'maxDischarge', 'chargeSoc', 'meterTimeout', 'chargeModePower', 'chargeModeSoc']) {
      (await page.locator(`#node-input-${field}`).getAttribute('class'))!.should.match(/input-error/, field);
    }
    await done();
    let node = await nodeState(id);
    node.valid.should.be.false();
    node.validationErrors.should.containEql(text('localbattery-zero-feed-in.validation.number', { allowed: allowedText(rules.target) }));
    node.validationErrors.should.containEql(text('localbattery-zero-feed-in.validation.power', { min: power.min, max: power.max }));
    node.validationErrors.should.containEql(text('localbattery-zero-feed-in.validation.soc', { min: soc.min, max: soc.max }));
    node.validationErrors.should.containEql(
      text('localbattery-zero-feed-in.validation.number', { allowed: allowedText(rules.meterTimeout) }),
    );

    await openEditor(id);
    await typeInto('#node-input-target', '${ZERO_TARGET}');
    await typeInto('#node-input-maxDischarge', '');
    await typeInto('#node-input-chargeSoc', '95');
    await typeInto('#node-input-meterTimeout', '5');
    await typeInto('#node-input-chargeModePower', '1500');
    await typeInto('#node-input-chargeModeSoc', '80');
    await page.locator('#node-input-meterSource').selectOption('message');
    await done();
    node = await nodeState(id);
    node.valid.should.be.true();
    node.should.containEql({ target: '${ZERO_TARGET}', maxDischarge: '', chargeSoc: '95', meterTimeout: '5', meterSource: 'message' });
    node.should.containEql({ mode: 'hold', chargeModePower: '1500', chargeModeSoc: '80' });
    (await errorMarkerShown(id)).should.be.false();
    // Back to a plain target for the deploy: the runtime has no such variable.
    await openEditor(id);
    await typeInto('#node-input-target', '0');
    await done();
  });

  it("checks a group's powers against the sums of its devices' limits, as the runtime does (groupLimitsOf)", async () => {
    const id = ID['zero-feed-in'];
    const power = writePoint('controlPower');
    const group = groupLimits([
      { limits: deviceLimits({}) },
      { limits: deviceLimits({ chargeLimit: BK1600.maxChargePower, dischargeLimit: BK1600.maxDischargePower }) },
    ]);
    await openEditor(id);
    await page.locator('#localbattery-zero-feed-in-more-batteries > summary').click();
    await page.locator('#node-input-device2').selectOption(ID.bk1600);
    for (const [direction, limit] of [
      ['charge', group.chargeLimit],
      ['discharge', group.dischargeLimit],
    ] as const)
      await page.locator(`#localbattery-zero-feed-in-${direction}-hint`, { hasText: `${power.min}–${limit}` }).waitFor();
    // Within the sums (3600 / 3200 W) but over one device's 2400 W: valid for the group.
    await typeInto('#node-input-maxCharge', String(group.chargeLimit));
    await typeInto('#node-input-maxDischarge', String(group.dischargeLimit));
    for (const field of ['maxCharge', 'maxDischarge'])
      (await page.locator(`#node-input-${field}`).getAttribute('class'))!.should.not.match(/input-error/, field);
    await typeInto('#node-input-maxDischarge', String(group.dischargeLimit + 1));
    (await page.locator('#node-input-maxDischarge').getAttribute('class'))!.should.match(/input-error/);
    // The runtime's verdict on the same settings.
    zeroFeedInProblems({ maxDischarge: String(group.dischargeLimit + 1) }, group).should.have.property('maxDischarge');
    zeroFeedInProblems({ maxDischarge: String(group.dischargeLimit) }, group).should.not.have.property('maxDischarge');
    // Without the second device, the group's powers are over the one device's limit.
    await page.locator('#node-input-device2').selectOption('');
    await typeInto('#node-input-maxDischarge', String(group.dischargeLimit));
    (await page.locator('#node-input-maxDischarge').getAttribute('class'))!.should.match(/input-error/);
    await page.locator('#node-dialog-cancel').click();
    await page.locator('.red-ui-tray').first().waitFor({ state: 'detached' });
    (await nodeState(id)).should.containEql({ device2: '', maxCharge: '', maxDischarge: '' });
  });

  it('marks a set-password node whose new password is longer than 16 bytes invalid', async () => {
    const tooLong = 'ä'.repeat(9); // 9 characters (within the field's maxlength), 18 bytes
    const longest = 'ä'.repeat(8); // 16 bytes
    await openEditor(ID.password);
    await page.locator('#node-input-source').selectOption('field');
    await typeInto('#node-input-password', tooLong);
    (await page.locator('#node-input-password').getAttribute('class'))!.should.match(/\binput-error\b/);
    await done();
    let node = await nodeState(ID.password);
    node.valid.should.be.false();
    node.validationErrors.should.containEql(text('localbattery-password.validation.password'));
    await page.locator(`[id="${ID.password}"] .red-ui-flow-node-error`).waitFor({ state: 'visible' });

    await openEditor(ID.password);
    await typeInto('#node-input-password', longest);
    await done();
    node = await nodeState(ID.password);
    node.source.should.equal('field');
    node.valid.should.be.true();
    (await errorMarkerShown(ID.password)).should.be.false();
  });

  it('tests the connection from the device dialog and explains an invalid port or interval in English', async () => {
    await openEditor(ID.read);
    await openDeviceDialog();

    // Test connection asks the simulator with the stored password (the field holds the editor's placeholder).
    await page.locator('#localbattery-device-test').click();
    const serial = simulator!.value(0);
    serial!.should.equal(SERIAL);
    const connected = text('localbattery-device.editor.testOk', {
      mode: text('localbattery-device.auth.digest'),
      namespace: 'Vendor',
      type: DEVICE_TYPE,
      sn: serial,
      fw: FIRMWARE,
    });
    await page.locator('#localbattery-device-result', { hasText: String(serial) }).waitFor({ timeout: 10000 });
    (await page.locator('#localbattery-device-result').innerText()).should.equal(connected);
    // The limits the simulated device reports (points 114 and 115) are offered, and taken with one click.
    const { maxChargePower, maxDischargePower } = MODEL_CLASSES['2000'];
    const offer = text('localbattery-device.editor.reported', { charge: maxChargePower, discharge: maxDischargePower });
    await page.locator('#localbattery-device-reported', { hasText: offer }).waitFor();
    // The limits sit beside the offer, outside Advanced.
    (await page.locator('#node-config-input-chargeLimit').isVisible()).should.be.true();
    (await page.locator('#node-config-input-dischargeLimit').isVisible()).should.be.true();
    (await page.locator('#node-config-input-chargeLimit').inputValue()).should.equal('');
    await page.locator('#localbattery-device-use-reported').click();
    (await page.locator('#node-config-input-chargeLimit').inputValue()).should.equal(String(maxChargePower));
    (await page.locator('#node-config-input-dischargeLimit').inputValue()).should.equal(String(maxDischargePower));
    (await page.locator('#localbattery-device-reported').isVisible()).should.be.false();

    // HTTP mode hides the password and its tools and says why; HTTP + Digest brings them back.
    await page.locator('#node-config-input-auth').selectOption('none');
    (await page.locator('#node-config-input-password').isVisible()).should.be.false();
    (await page.locator('#localbattery-device-setpw-open').isVisible()).should.be.false();
    squash(await page.locator('#localbattery-device-nodigest').innerText()).should.equal(text('localbattery-device.editor.noDigestTip'));
    await page.locator('#node-config-input-auth').selectOption('digest');
    (await page.locator('#node-config-input-password').isVisible()).should.be.true();
    (await page.locator('#localbattery-device-nodigest').isVisible()).should.be.false();

    /** The tooltip of an invalid field says why, in words from the en-US catalogue. */
    const tooltip = async (selector: string, message: string) => {
      (await page.locator(selector).getAttribute('class'))!.should.match(/\binput-error\b/);
      await page.locator(selector).hover();
      const popover = page.locator('.red-ui-popover:visible', { hasText: message });
      await popover.waitFor({ timeout: 5000 });
      squash(await popover.innerText()).should.equal(message);
      await page.mouse.move(5, 5);
      await popover.waitFor({ state: 'hidden' });
    };
    // The bounds and the decimal-number rule are the runtime's, served by the catalogue route.
    const { deviceDefaults } = settingRulesJson();
    const portMessage = text('localbattery-device.validation.port', { ...NUMBER_RULES.port, default: deviceDefaults.port });
    const intervalMessage = text('localbattery-device.validation.minInterval', {
      ...NUMBER_RULES.minInterval,
      default: deviceDefaults.minInterval,
    });
    portMessage.should.not.match(/localbattery-device\./);

    // 0x50 is 80 to Number(), but not to the runtime.
    await typeInto('#node-config-input-port', '0x50');
    await tooltip('#node-config-input-port', portMessage);
    await typeInto('#node-config-input-port', '70000');
    await tooltip('#node-config-input-port', portMessage);
    await showAdvanced();
    await typeInto('#node-config-input-minInterval', String(NUMBER_RULES.minInterval.max + 1));
    await tooltip('#node-config-input-minInterval', intervalMessage);
    await typeInto('#node-config-input-minInterval', '500');
    await tooltip('#node-config-input-minInterval', intervalMessage);
    await updateDevice();

    let device = await nodeState(ID.device);
    device.valid.should.be.false();
    device.validationErrors.should.eql([portMessage, intervalMessage]);
    // The read node uses it, so it is invalid too.
    (await nodeState(ID.read)).valid.should.be.false();

    // Set it right again.
    await openDeviceDialog();
    await typeInto('#node-config-input-port', String(simulator!.port));
    await showAdvanced();
    await typeInto('#node-config-input-minInterval', '1000');
    await updateDevice();
    await done();
    device = await nodeState(ID.device);
    device.valid.should.be.true();
    String(device.port).should.equal(String(simulator!.port));
    String(device.minInterval).should.equal('1000');
    (await nodeState(ID.read)).valid.should.be.true();
    (await errorMarkerShown(ID.read)).should.be.false();
  });

  it('deploys, and the read node shows the count of points read from the simulator', async () => {
    for (const id of [ID.device, ID.read, ID.write, ID.control, ID.info, ID.password, ID.discover, ID['zero-feed-in']]) {
      (await nodeState(id)).valid.should.be.true(`${id} valid before deploy`);
    }
    /** The read node's status text as the catalogue words it for `count` points, at any time of day. */
    const readStatus = (count: number) =>
      `^${escapeRegExp(text('localbattery-read.status.read', { count, time: '\u0000' })).replace('\u0000', '.+')}$`;
    const statusShows = (pattern: string) =>
      page.waitForFunction(
        ({ id, source }) => {
          const label = (globalThis as any).document.querySelector(`[id="${id}"] .red-ui-flow-node-status-label`);
          return !!label && new RegExp(source).test(label.textContent);
        },
        { id: ID.read, source: pattern },
        { timeout: 15000 },
      );
    // Until the deploy the runtime polls the two points of the flow file...
    await statusShows(readStatus(INITIAL_POINTS.length));
    (await page.evaluate(() => (globalThis as any).RED.nodes.dirty())).should.be.true();
    await page.locator('#red-ui-header-button-deploy').click();
    // ...and after it also the one picked in the editor.
    await statusShows(readStatus(INITIAL_POINTS.length + 1));
    (await page.evaluate(() => (globalThis as any).RED.nodes.dirty())).should.be.false();
    // The runtime has what the editor holds.
    const deployed = await page.evaluate(async () => (await fetch('flows', { headers: { 'Node-RED-API-Version': 'v2' } })).json());
    const byId = new Map<string, any>(deployed.flows.map((n: any) => [n.id, n]));
    for (const id of [ID.read, ID.write, ID.control, ID.device, ID['zero-feed-in']]) {
      const { valid: _valid, validationErrors: _errors, ...properties } = await nodeState(id);
      for (const [key, value] of Object.entries(properties)) should(byId.get(id)[key]).eql(value, `${id}.${key}`);
    }
  });

  it("shows each node's help with Inputs and Outputs in the help sidebar when it is selected", async () => {
    // Node-RED 4 has a tab link, Node-RED 5 a sidebar button.
    await page.locator('a[href="#help"]:visible, button[data-tab-id="help"]:visible').first().click();
    const help = page.locator('.red-ui-sidebar-info:visible .red-ui-help .red-ui-help');
    for (const type of FLOW_TYPES) {
      const id = ID[type.slice('localbattery-'.length) as keyof typeof ID];
      await page.locator(`[id="${id}"]`).click();
      const html = fs.readFileSync(path.join(ROOT, 'nodes', 'locales', 'en-US', `${type}.html`), 'utf8');
      const firstParagraph = squash(/<p>([\s\S]*?)<\/p>/.exec(html)![1].replace(/<[^>]+>/g, ''))
        .slice(0, 40)
        .trim();
      await help.filter({ hasText: firstParagraph }).waitFor({ timeout: 5000 });
      const headings = await help.locator('h3').allInnerTexts();
      headings.map(squash).should.containEql('Inputs');
      headings.map(squash).should.containEql('Outputs');
    }
  });

  it('gives every input of the table of verdicts the same verdict as the runtime', async () => {
    // The editors have the rules once the catalogue has come (the steps before opened each editor).
    await page.waitForFunction(() => !!(globalThis as any).localBatteryCatalogue?.rules, undefined, { timeout: 10000 });
    const verdicts = await page.evaluate(
      ({ rows, devices }) => {
        const RED = (globalThis as any).RED;
        // The device configurations the rows name, added after the deploy (unused, they would hold it up).
        RED.nodes.import(devices);
        return rows.map((row: any) => {
          const definition = RED.nodes.getType(row.type);
          const spec = row.credential ? definition.credentials[row.field] : definition.defaults[row.field];
          const answer = spec.validate.call({ ...row.node }, row.value, {});
          return answer === true ? true : `${answer}`;
        });
      },
      { rows: VERDICTS, devices: Object.values(DEVICES) },
    );
    VERDICTS.forEach((row, i) => {
      should(verdicts[i] === true).equal(row.valid, `${describeRow(row)}: editor says ${String(verdicts[i])}`);
      should(runtimeVerdict(row)).equal(row.valid, `${describeRow(row)}: runtime`);
    });
  });

  it('had no page errors and no console errors', () => {
    pageErrors.should.eql([]);
    consoleErrors.should.eql([]);
    blocked.should.eql([]);
  });
});
