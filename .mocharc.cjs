// Test files are independent (each its own simulator on a free port) and mostly wait on the device's 1 s request
// spacing, not on the CPU: eight workers on two cores. The longest files go first, so that none starts last and
// runs on alone; the browser test (editor.test.js) among them, its waits are on events.
// TESTS=node-red (the compatibility runs of scripts/compat-node-red.sh on the same Node) keeps the files that load
// Node-RED or our nodes: the rest is the core, which does not change with the Node-RED under test.
const fs = require('node:fs');
const path = require('node:path');
const process = require('node:process');

const DIR = path.join('dist', 'test');
// The slowest files, slowest first (mocha --reporter spec shows each test's time).
const SLOW = [
  'node-zero-feed-in',
  'node-zero-feed-in-exits',
  'editor',
  'examples-home-assistant',
  'node-read',
  'modes',
  'client',
  'device-state',
  'node-control',
  'node-device',
  'control',
  'examples-dashboard',
  'examples-zero-feed-in',
  'examples',
  'dashboard',
];
const NODE_RED = /require\("(\.\/(support|node-support|node-red-process|examples-support)|\.\.\/nodes\/[^"]+|node-red[^"]*)"\)/;

const rank = (file) => {
  const at = SLOW.indexOf(path.basename(file, '.test.js'));
  return at === -1 ? SLOW.length : at;
};
const files = fs.existsSync(DIR)
  ? fs
      .readdirSync(DIR)
      .filter((file) => file.endsWith('.test.js'))
      .map((file) => path.join(DIR, file))
      .filter((file) => process.env.TESTS !== 'node-red' || NODE_RED.test(fs.readFileSync(file, 'utf8')))
      .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
  : [];

module.exports = {
  spec: files,
  parallel: true,
  jobs: 8,
  timeout: 30000,
  // Fails a file that leaves a timer, socket, server or child process running.
  require: ['dist/test/leaks.js'],
};
