/**
 * The point pickers in a German editor, in a real browser: Debian's chromium with the language de-DE (from which
 * Node-RED takes the editor's) against a real Node-RED with this package. The read node's picker shows the German
 * categories and labels of the catalogue's points and its filter finds a point by its German label; the write node's
 * picker shows German categories, labels and enum labels. Without chromium the test is skipped, except on CI.
 */
import should from 'should';
import { READ_POINTS, WRITE_POINTS, readPointsWithModelPoints } from '../src/points/catalogue';
import { GERMAN, allowedInGerman, inGerman } from '../src/points/german';
import { requireChromium, startBrowserRun, stopBrowserRun, type BrowserRun } from './node-red-process';

const ID = { tab: 'detab00000000001', device: 'dedevice00000001', read: 'deread0000000001', write: 'dewrite000000001' };

/** No node reads or writes (no input, no polling): the device configuration is never asked, so no device is needed. */
function flows(): Record<string, unknown>[] {
  const at = (y: number) => ({ z: ID.tab, x: 200, y, wires: [[]] });
  return [
    { id: ID.tab, type: 'tab', label: 'Deutsch' },
    { id: ID.device, type: 'localbattery-device', name: 'Simulator', host: '127.0.0.1', port: 8080, username: 'opend' },
    { id: ID.read, type: 'localbattery-read', name: '', device: ID.device, points: ['batterySoc'], output: 'object', ...at(80) },
    {
      id: ID.write,
      type: 'localbattery-write',
      name: '',
      device: ID.device,
      point: 'workingModeSetting',
      value: '1',
      valueType: 'enum',
      ...at(160),
    },
  ];
}

describe('point pickers in a German editor (chromium, de-DE)', function () {
  this.timeout(60000);
  let run: BrowserRun | undefined;

  before(async function () {
    requireChromium(this);
    run = await startBrowserRun(flows(), {}, { width: 1400, height: 900 }, [], 'de-DE');
    await run.page.goto(run.url);
    await run.page.locator(`[id="${ID.read}"]`).waitFor({ state: 'visible', timeout: 30000 });
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && run) {
      console.log(`--- Node-RED log ---\n${run.redLog.join('').slice(-4000)}`);
      if (run.pageErrors.length) console.log(`--- page errors ---\n${run.pageErrors.join('\n')}`);
    }
    // Closes the dialog a step left open.
    const cancel = run?.page.locator('#node-dialog-cancel:visible');
    if (cancel && (await cancel.count()) > 0) {
      await cancel.click();
      await run!.page.locator('.red-ui-tray').first().waitFor({ state: 'detached' });
    }
  });

  after(() => stopBrowserRun(run));

  /** Opens the edit dialog of node `id`, as a double click does. */
  async function edit(id: string): Promise<void> {
    await run!.page.evaluate((nodeId) => {
      const RED = (globalThis as any).RED;
      RED.editor.edit(RED.nodes.node(nodeId));
    }, id);
  }

  it('runs the editor in German', async () => {
    should(await run!.page.evaluate(() => (globalThis as any).RED.i18n.lang())).equal('de');
  });

  it("shows the read node's picker with German categories and labels, and finds a point by its German label", async () => {
    const page = run!.page;
    await edit(ID.read);
    await page.locator('#localbattery-read-picker .localbattery-read-group').first().waitFor();

    const heads = await page.locator('#localbattery-read-picker .localbattery-read-head b').allInnerTexts();
    should(heads).eql([...new Set(READ_POINTS.map((p) => GERMAN.categories[p.category]))]);
    // The picked point sits open in its group: category and label in German, its name as it is.
    const soc = page.locator('.localbattery-read-group', { has: page.locator('input[data-name="batterySoc"]') });
    should(await soc.locator('.localbattery-read-head b').innerText()).equal('Akku');
    should(await soc.locator('.localbattery-read-row', { has: page.locator('code', { hasText: /^batterySoc$/ }) }).innerText()).match(
      /batterySoc\s+Akku-Ladezustand \(SOC\) gesamt\s+#6002 · %/,
    );

    const visibleNames = () => page.locator('#localbattery-read-picker .localbattery-read-row:visible code').allInnerTexts();
    await page.locator('#localbattery-read-filter').pressSequentially('Netzfrequenz');
    should(await visibleNames()).eql(['gridFrequency']);
    // Every point whose German label (or name, address, unit, German category) has the word, and no other.
    await page.locator('#localbattery-read-filter').fill('');
    await page.locator('#localbattery-read-filter').pressSequentially('ladezustand');
    const matching = readPointsWithModelPoints()
      .map(inGerman)
      .filter((p) => [p.name, p.label, p.category].join(' ').toLowerCase().includes('ladezustand'));
    should(matching.map((p) => p.name)).containEql('batterySoc');
    should(await visibleNames()).eql(matching.map((p) => p.name));
  });

  it("shows the write node's picker with German categories, labels and enum labels", async () => {
    const page = run!.page;
    await edit(ID.write);
    await page.locator('#node-input-point option[value="workingModeSetting"]').waitFor({ state: 'attached' });

    const groups = await page.locator('#node-input-point optgroup').evaluateAll((nodes) => nodes.map((n: any) => n.label));
    should(groups).eql([...new Set(WRITE_POINTS.map((p) => GERMAN.categories[p.category]))]);
    should(await page.locator('#node-input-point option[value="workingModeSetting"]').innerText()).equal(
      'workingModeSetting (47005) · Betriebsmodus einstellen',
    );
    should(await page.locator('#node-input-point option[value="controlPower"]').innerText()).equal(
      'controlPower (47016) · Leistung einstellen · 50–2400 W',
    );
    // The saved choice 1 of the value's drop-down, and what the point accepts, with the German enum labels.
    const choice = page.locator('#node-input-value + .red-ui-typedInput-container .red-ui-typedInput-option-label');
    await page.waitForFunction(
      (selector) => (globalThis as any).document.querySelector(selector)?.textContent.includes('Eigenverbrauch'),
      '#node-input-value + .red-ui-typedInput-container .red-ui-typedInput-option-label',
    );
    should(await choice.innerText()).equal('1 · Eigenverbrauch vorrangig');
    const mode = inGerman(WRITE_POINTS.find((p) => p.name === 'workingModeSetting')!);
    should(await page.locator('#localbattery-write-allowed').innerText()).equal(`Erlaubt: ${allowedInGerman(mode)}`);
  });

  it('had no page errors and fetched nothing from elsewhere', () => {
    should(run!.pageErrors).eql([]);
    should(run!.blocked).eql([]);
  });
});
