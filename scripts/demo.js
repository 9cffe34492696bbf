#!/usr/bin/env node
// `npm start`: the simulator as a stand-in device on loopback, and Node-RED on 127.0.0.1 with this package
// (from the working tree), FlowFuse Dashboard 2 (installed from the registry into .demo/) and the demo flows
// deployed. Ctrl-C stops both.
const fs = require('fs');
const path = require('path');
const net = require('net');
const { spawn, spawnSync } = require('child_process');
const { DeviceSimulator } = require('../dist/src/simulator');

const root = path.join(__dirname, '..');
const userDir = path.join(root, '.demo');
const pkg = require('../package.json');
const DEMO_PASSWORD = 'demo-pass-1';
const DEMO_EXAMPLES = ['Monitoring.json', 'Dashboard.json', 'Zero feed-in.json'];
// Examples whose writing nodes the demo enables: the simulator is no battery to protect. The dashboard's zero feed-in
// runs from the start against the simulator's house (its switch on the page turns it off for the buttons). The others
// stay inert as imported, so that one regulator steers: the Zero feed-in tab's own would fight the dashboard's.
const ARMED_EXAMPLES = ['Dashboard.json'];
const WRITING_TYPES = ['localbattery-control', 'localbattery-write', 'localbattery-zero-feed-in'];
// The demo has no MQTT broker: inputs from one stay disabled (they would only retry a connection).
const NEEDS_BROKER = ['mqtt in', 'mqtt out'];
const DASHBOARD = '@flowfuse/node-red-dashboard';
const DASHBOARD_PATH = '/dashboard/battery';

function freePort(preferred) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => {
      const fallback = net.createServer();
      fallback.listen(0, '127.0.0.1', () => {
        const { port } = fallback.address();
        fallback.close(() => resolve(port));
      });
    });
    server.listen(preferred, '127.0.0.1', () => server.close(() => resolve(preferred)));
  });
}

/** The demo flows: the chosen examples, each pointed at the simulator and armed, one tab each. */
function demoFlows(port) {
  const flows = [];
  const device = {
    id: 'demo-device',
    type: 'localbattery-device',
    name: 'Simulator',
    host: '127.0.0.1',
    port,
    auth: 'digest',
    username: 'opend',
    namespace: '',
    minInterval: 1000,
    timeout: 10000,
  };
  flows.push(device);
  for (const file of DEMO_EXAMPLES) {
    const example = JSON.parse(fs.readFileSync(path.join(root, 'examples', file), 'utf8'));
    const tab = { id: `demo-tab-${file.replace(/\W/g, '-')}`, type: 'tab', label: file.replace('.json', '') };
    flows.push(tab);
    for (const node of example) {
      if (node.type === 'localbattery-device') continue;
      const copy = { ...node, z: tab.id };
      if ('device' in copy) copy.device = device.id;
      if (WRITING_TYPES.includes(copy.type)) {
        if (ARMED_EXAMPLES.includes(file)) delete copy.d;
        else copy.d = true;
      }
      if (NEEDS_BROKER.includes(copy.type)) copy.d = true;
      flows.push(copy);
    }
  }
  return flows;
}

/**
 * The demo's user directory gets this package (linked from the working tree) and the dashboard from the registry,
 * as a user's ~/.node-red would. npm runs only when the dashboard is missing or not the wanted version.
 */
function installDemoModules() {
  const dashboardVersion = pkg.devDependencies[DASHBOARD];
  const manifest = { name: 'local-battery-demo', private: true, dependencies: { [pkg.name]: 'file:..', [DASHBOARD]: dashboardVersion } };
  const manifestFile = path.join(userDir, 'package.json');
  const installed = path.join(userDir, 'node_modules', DASHBOARD, 'package.json');
  const current = fs.existsSync(manifestFile) && fs.readFileSync(manifestFile, 'utf8') === JSON.stringify(manifest, null, 2);
  if (current && fs.existsSync(installed) && fs.existsSync(path.join(userDir, 'node_modules', pkg.name))) return;
  fs.mkdirSync(userDir, { recursive: true });
  fs.writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
  console.log(`Installing ${DASHBOARD}@${dashboardVersion} into ${userDir} (first start only)…`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['install', '--no-audit', '--no-fund', '--no-package-lock', '--omit=dev'], {
    cwd: userDir,
    stdio: 'inherit',
  });
  if (result.status !== 0) throw new Error(`npm install in ${userDir} failed (exit ${result.status})`);
}

async function main() {
  const simPort = await freePort(18080);
  const uiPort = await freePort(1880);
  // Self-consumption at start, until the dashboard's zero feed-in takes over within a second; its meter is the
  // simulator's meter point (11016), which the battery's power changes.
  const simulator = new DeviceSimulator({
    host: '127.0.0.1',
    port: simPort,
    udpPort: null,
    password: DEMO_PASSWORD,
    namespace: 'Indevolt',
    timeScale: 30,
  });
  await simulator.start();

  installDemoModules();
  fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(demoFlows(simPort), null, 2));
  // The demo keeps its credentials unencrypted: it is a throwaway user directory on loopback.
  fs.writeFileSync(path.join(userDir, 'flows_cred.json'), JSON.stringify({ 'demo-device': { password: DEMO_PASSWORD } }));
  fs.writeFileSync(
    path.join(userDir, 'settings.js'),
    `module.exports = ${JSON.stringify(
      {
        uiHost: '127.0.0.1',
        uiPort,
        flowFile: 'flows.json',
        credentialSecret: false,
        telemetry: { enabled: false },
        editorTheme: { tours: false, projects: { enabled: false } },
        logging: { console: { level: 'info' } },
      },
      null,
      2,
    )};\n`,
  );

  const red = spawn(
    process.execPath,
    [require.resolve('node-red/red.js'), '--userDir', userDir, '--settings', path.join(userDir, 'settings.js')],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let announced = false;
  red.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    if (!announced && /Started flows/.test(chunk.toString())) {
      announced = true;
      console.log(`\n  Demo ready. Open the editor:    http://127.0.0.1:${uiPort}/`);
      console.log(`  and the dashboard:             http://127.0.0.1:${uiPort}${DASHBOARD_PATH}`);
      console.log(`  Simulated battery at http://127.0.0.1:${simPort} (user opend). Ctrl-C stops both.\n`);
    }
  });

  let stopping = false;
  const stop = (code) => {
    if (stopping) return;
    stopping = true;
    red.kill('SIGINT');
    simulator.stop().then(
      () => process.exit(code),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop(0));
  process.on('SIGTERM', () => stop(0));
  red.on('exit', (code) => stop(code ?? 0));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
