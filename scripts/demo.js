#!/usr/bin/env node
// `npm start`: the simulator as a stand-in device on loopback, and Node-RED on 127.0.0.1 with this package
// (from the working tree) and the demo flows deployed. Ctrl-C stops both.
const fs = require('fs');
const path = require('path');
const net = require('net');
const { spawn } = require('child_process');
const { DeviceSimulator } = require('../dist/src/simulator');

const root = path.join(__dirname, '..');
const userDir = path.join(root, '.demo');
const pkg = require('../package.json');
const DEMO_PASSWORD = 'demo-pass-1';
const DEMO_EXAMPLES = ['Monitoring.json', 'Zero feed-in.json'];

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

/** The demo flows: the chosen examples, each pointed at the simulator, one tab each. */
function demoFlows(port) {
  const flows = [];
  const device = { id: 'demo-device', type: 'localbattery-device', name: 'Simulator', host: '127.0.0.1', port, auth: 'digest', username: 'opend', namespace: '', minInterval: 1000, timeout: 10000 };
  flows.push(device);
  for (const file of DEMO_EXAMPLES) {
    const example = JSON.parse(fs.readFileSync(path.join(root, 'examples', file), 'utf8'));
    const tab = { id: `demo-tab-${file.replace(/\W/g, '-')}`, type: 'tab', label: file.replace('.json', '') };
    flows.push(tab);
    for (const node of example) {
      if (node.type === 'localbattery-device') continue;
      const copy = { ...node, z: tab.id };
      if ('device' in copy) copy.device = device.id;
      flows.push(copy);
    }
  }
  return flows;
}

async function main() {
  const simPort = await freePort(18080);
  const uiPort = await freePort(1880);
  // Idle at start (mode 5), so the zero feed-in flow has something to do: it switches to real-time control.
  const simulator = new DeviceSimulator({ host: '127.0.0.1', port: simPort, udpPort: null, password: DEMO_PASSWORD, namespace: 'Indevolt', timeScale: 30, workingMode: 5 });
  await simulator.start();

  fs.mkdirSync(path.join(userDir, 'node_modules', ...pkg.name.split('/').slice(0, -1)), { recursive: true });
  const link = path.join(userDir, 'node_modules', pkg.name);
  fs.rmSync(link, { recursive: true, force: true });
  fs.symlinkSync(root, link, 'dir');
  fs.writeFileSync(path.join(userDir, 'package.json'), JSON.stringify({ name: 'local-battery-demo', private: true, dependencies: { [pkg.name]: 'file:..' } }, null, 2));
  fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(demoFlows(simPort), null, 2));
  // The demo keeps its credentials unencrypted: it is a throwaway user directory on loopback.
  fs.writeFileSync(path.join(userDir, 'flows_cred.json'), JSON.stringify({ 'demo-device': { password: DEMO_PASSWORD } }));
  fs.writeFileSync(
    path.join(userDir, 'settings.js'),
    `module.exports = ${JSON.stringify({
      uiHost: '127.0.0.1',
      uiPort,
      flowFile: 'flows.json',
      credentialSecret: false,
      telemetry: { enabled: false },
      editorTheme: { tours: false, projects: { enabled: false } },
      logging: { console: { level: 'info' } },
    }, null, 2)};\n`,
  );

  const red = spawn(process.execPath, [require.resolve('node-red/red.js'), '--userDir', userDir, '--settings', path.join(userDir, 'settings.js')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let announced = false;
  red.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    if (!announced && /Started flows/.test(chunk.toString())) {
      announced = true;
      console.log(`\n  Demo ready. Open the editor: http://127.0.0.1:${uiPort}/`);
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
