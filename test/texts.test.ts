/** Texts of every node type: en-US and de catalogues with the same keys, every key the node names, and help pages. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import should from 'should';
import { helpStructure, textKeysOf } from './node-support';

const pkg = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8'));
const TYPES = Object.keys(pkg['node-red'].nodes);

describe('node texts', function () {
  it('covers every node type of package.json', function () {
    should(TYPES).have.length(7);
  });

  for (const type of TYPES) {
    it(`${type}: the same texts in en-US and de, every text it names, and help pages of the same structure`, function () {
      const { english, german, used, help, germanHelp } = textKeysOf(type);
      should(german.sort()).eql(english.sort());
      should(used).not.be.empty();
      for (const key of used) should(english).containEql(key);
      should(help).containEql(`data-help-name="${type}"`);
      should(helpStructure(germanHelp)).eql(helpStructure(help));
    });
  }
});
