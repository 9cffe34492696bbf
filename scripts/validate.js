#!/usr/bin/env node
// The flow library's own check, `node-red-dev validate`, on the package as `npm pack` ships it, without internet.
//
// node-red-dev fetches two documents over HTTPS: the flow library catalogue (catalogue.nodered.org, for P08 "similar
// package names" and N01 "node types unique in the library") and node-red's registry document (P06, P07). It has no
// option to leave them out, so this script runs its CLI with itself preloaded: the catalogue look-up is answered with
// an empty catalogue and P08 and N01 are reported as not run; node-red's dist-tags and engines come from `npm view`
// (the registry's own client). Every other request fails. All other checks run as they are, and every one must pass;
// all eight node types must parse (an object literal in registerType) and every flow node type needs an example.
//
// Usage: node scripts/validate.js   (exit code 0 when green)
'use strict';
const path = require('node:path');

const OFFLINE_CHECKS = ['P08', 'N01'];
const CATALOGUE = 'https://catalogue.nodered.org/catalogue.json';
const NODE_RED_REGISTRY = 'https://registry.npmjs.org/node-red';

if (require.main !== module) {
  // Preloaded into the node-red-dev process: its HTTPS look-ups, answered as described above.
  const { execFileSync } = require('node:child_process');
  const devDir = path.dirname(require.resolve('node-red-dev/package.json'));
  const axios = require(require.resolve('axios', { paths: [path.join(devDir, 'src', 'libs')] }));
  let nodeRed;
  // axios answers with promises.
  axios.get = (url) => {
    if (url === CATALOGUE) return Promise.resolve({ data: { modules: [] } });
    if (url === NODE_RED_REGISTRY) {
      if (!nodeRed) {
        const view = JSON.parse(execFileSync('npm', ['view', 'node-red@latest', 'dist-tags', 'engines', '--json'], { encoding: 'utf8' }));
        nodeRed = { 'dist-tags': view['dist-tags'], versions: { [view['dist-tags'].latest]: { engines: view.engines } } };
      }
      return Promise.resolve({ data: nodeRed });
    }
    return Promise.reject(new Error(`validate.js: no network access for ${url}`));
  };
  return;
}

const fs = require('node:fs');
const os = require('node:os');
const { execFileSync, spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const pkg = require(path.join(root, 'package.json'));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'validate-'));
let failed = [];
try {
  // npm pack runs `prepare` (the build) and packs what package.json's `files` lists.
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', work], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  execFileSync('tar', ['-xzf', path.join(work, packed[0].filename), '-C', work]);
  const dir = path.join(work, 'package');
  const scorecardFile = path.join(work, 'scorecard.json');
  const cli = require.resolve('node-red-dev/bin/run');
  const run = spawnSync(process.execPath, ['--require', __filename, cli, 'validate', '--path', dir, '--output', scorecardFile], {
    cwd: work,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = `${run.stdout}${run.stderr}`;
  // Its lines for the two checks answered with an empty catalogue would claim a result they did not get.
  const offlineLines = { 'No similar named packages found': 'P08', 'Nodes all have unique names': 'N01' };
  process.stdout.write(
    output.replace(
      /^✅ (No similar named packages found|Nodes all have unique names)$/gm,
      (_, line) => `-- ${offlineLines[line]} not run (offline): ${line}?`,
    ),
  );
  if (!fs.existsSync(scorecardFile)) throw new Error(`node-red-dev validate wrote no scorecard (exit code ${run.status})`);
  const scorecard = JSON.parse(fs.readFileSync(scorecardFile, 'utf8'));

  for (const id of OFFLINE_CHECKS) delete scorecard[id];
  const checks = Object.entries(scorecard).filter(([id]) => id !== 'package');
  failed = checks.filter(([, result]) => result.test !== true).map(([id]) => id);
  // N02 lists the flow node types it found in the HTML files and in the examples: a type it cannot parse is missing.
  const flowTypes = Object.keys(pkg['node-red'].nodes).filter((type) => type !== 'localbattery-device');
  const withExamples = scorecard.N02?.nodes ?? [];
  const unparsed = flowTypes.filter((type) => !withExamples.includes(type));
  if (unparsed.length > 0) failed.push(`N02 (not parsed or without an example: ${unparsed.join(', ')})`);
  if (/Unable to parse/.test(output)) failed.push('node definitions (Unable to parse)');

  console.log(
    `\nvalidate: ${checks.length} checks run, ${OFFLINE_CHECKS.join(' and ')} not run (they need the flow library catalogue online)`,
  );
  console.log(failed.length === 0 ? 'validate: all green' : `validate: FAILED ${failed.join('; ')}`);
} catch (error) {
  failed.push(error.message);
  console.error(`validate: ${error.message}`);
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
process.exit(failed.length === 0 ? 0 : 1);
