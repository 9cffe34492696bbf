/**
 * `npm start` needs no network once `npm install` has run: the demo starts inside a private network namespace
 * (loopback only), serves the dashboard page from the project's own Dashboard 2, and stops cleanly on SIGTERM.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import should from 'should';

describe('demo (npm start) without network', function () {
  this.timeout(90000);

  it('starts in a namespace with loopback only, serves /dashboard/battery, and stops leaving nothing running', function () {
    try {
      execFileSync('unshare', ['-n', 'true'], { stdio: 'ignore' });
    } catch {
      this.skip(); // `unshare -n` is not permitted here: cannot take the network away.
    }
    const script = path.join(__dirname, 'fixtures', 'demo-in-netns.js');
    // Any port: the namespace has its own.
    const child = spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up; exec node "$0" 18999', script], {
      encoding: 'utf8',
      timeout: 80000,
    });
    should(child.error).be.undefined();
    should(child.status).equal(0, `child failed: ${child.stderr}\n${child.stdout}`);
    const result = JSON.parse(child.stdout.trim()) as Record<string, unknown>;
    const output = String(result.output);
    should(result.ready).be.true(output);
    should(result).have.properties({ status: 200, dashboardHtml: true, exitCode: 0, stillServing: false });
    // Nothing was installed: Dashboard 2 came from the project's node_modules.
    should(output).not.match(/Installing|npm (ERR|error)/);
    should(output).match(/Dashboard 2\.0 \(v[\d.]+\) started at \/dashboard/);
  });
});
