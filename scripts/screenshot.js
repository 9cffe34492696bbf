#!/usr/bin/env node
// Takes docs/editor.png, docs/read-picker.png and docs/dashboard.png: the demo in a real browser (Debian's chromium,
// driven by playwright-core). Usage: start the demo (`npm start`), then `node scripts/screenshot.js [editor URL]`.
const path = require('path');
const { chromium } = require('playwright-core');

const url = process.argv[2] || 'http://127.0.0.1:1880/';
const docs = path.join(__dirname, '..', 'docs');

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
    await page.goto(url);
    await page.waitForSelector('#red-ui-workspace-chart .red-ui-flow-node', { timeout: 30000 });
    await page.evaluate(() => {
      const RED = window.RED;
      RED.sidebar.show('debug');
      // Show our palette category first.
      document.querySelector('#red-ui-palette-container')?.prepend(document.querySelector('#red-ui-palette-container-home_battery'));
    });
    // Let polling nodes show a status and the debug sidebar fill.
    await page.waitForTimeout(7000);
    await page.screenshot({ path: path.join(docs, 'editor.png') });
    // The read node's point picker.
    await page.locator('.red-ui-flow-node-group').filter({ hasText: 'Battery overview' }).first().dblclick();
    await page.waitForSelector('.red-ui-tray', { timeout: 10000 });
    await page.waitForTimeout(1500);
    await page.screenshot({ path: path.join(docs, 'read-picker.png') });
    // The dashboard page of the Dashboard example, once its chart has a minute of points.
    const dashboard = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    await dashboard.goto(new URL('dashboard/battery', url).href);
    await dashboard.getByText('State of charge').waitFor({ timeout: 30000 });
    await dashboard.waitForTimeout(60000);
    await dashboard.screenshot({ path: path.join(docs, 'dashboard.png') });
    console.log(`wrote ${docs}/editor.png, read-picker.png and dashboard.png`);
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
