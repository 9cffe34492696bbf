/** The README's point tables are generated from the catalogue; this fails when the two differ. */
import fs from 'node:fs';
import path from 'node:path';
import 'should';
import { READ_POINTS, WRITE_POINTS } from '../src/points/catalogue';
import { pointTables, TABLE_END, TABLE_START } from '../src/points/docs';

const readme = fs.readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');

describe('README', () => {
  it('has the point tables exactly as the catalogue generates them (run `npm run docs` to update)', () => {
    const start = readme.indexOf(TABLE_START);
    const end = readme.indexOf(TABLE_END);
    start.should.be.aboveOrEqual(0);
    readme.slice(start, end + TABLE_END.length).should.equal(pointTables());
  });

  it('lists every point of the catalogue by name and address', () => {
    for (const point of [...READ_POINTS, ...WRITE_POINTS]) readme.should.containEql(`| \`${point.name}\` | ${point.address} |`);
  });

  it('gives the install-and-demo command and the test command first', () => {
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)![1];
    firstBlock.should.match(/npm install && npm start/);
    firstBlock.should.match(/npm test/);
  });
});
