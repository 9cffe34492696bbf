/** The package's core entry point: everything the core modules export, and nothing of Node-RED. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import should from 'should';
import * as core from '../src';

const SRC = path.resolve(__dirname, '..', 'src');

describe('core entry point (src/index.ts)', function () {
  // `export *` drops a name that two modules export without a word, so each module is checked in full.
  it('exports everything of each module it re-exports', function () {
    const source = fs.readFileSync(path.resolve(__dirname, '..', '..', 'src', 'index.ts'), 'utf8');
    const modules = [...source.matchAll(/^export \* from '(\.\/[\w/-]+)';$/gm)].map((match) => match[1]);
    should(modules.length).be.above(5);
    for (const module of modules) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const exported = require(path.join(SRC, module)) as Record<string, unknown>;
      for (const [name, value] of Object.entries(exported)) should(core).have.property(name, value);
    }
  });

  it('loads without Node-RED', function () {
    const loaded = execFileSync(
      process.execPath,
      ['-e', `require(${JSON.stringify(SRC)}); console.log(JSON.stringify(Object.keys(require.cache)))`],
      {
        encoding: 'utf8',
      },
    );
    const files = JSON.parse(loaded) as string[];
    should(files.filter((file) => /node-red/.test(path.relative(path.resolve(SRC, '..', '..'), file)))).eql([]);
  });
});
