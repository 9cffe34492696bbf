/** Texts of every node type: en-US and de catalogues with the same keys, every key the node names, and help pages. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import should from 'should';
import { HELP_LANGUAGES, helpPointList } from '../src/points/docs';
import { helpStructure, textKeysOf } from './node-support';

const pkg = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8'));
const TYPES = Object.keys(pkg['node-red'].nodes);

describe('node texts', function () {
  it('covers every node type of package.json', function () {
    should(TYPES).have.length(8);
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

  for (const type of TYPES) {
    it(`${type}: help ends with References naming the specification's operation and linking the README`, function () {
      const { help, germanHelp } = textKeysOf(type);
      for (const [page, heading] of [
        [help, 'References'],
        [germanHelp, 'Referenzen'],
      ]) {
        const references = page.slice(page.indexOf(`<h3>${heading}</h3>`));
        should(page).containEql(`<h3>${heading}</h3>`);
        should(references).match(/section 4, E\d|Abschnitt 4, E\d/);
        should(references).containEql(`href="${pkg.homepage}`.replace('#readme', '#'));
      }
    });
  }

  describe('localbattery-zero-feed-in: the help explains every status and warning in its troubleshooting part', function () {
    const type = 'localbattery-zero-feed-in';
    for (const [language, heading] of [
      ['en-US', 'Troubleshooting'],
      ['de', 'Fehlersuche'],
    ]) {
      it(language, function () {
        const locales = path.resolve(__dirname, '..', 'nodes', 'locales', language);
        const texts = JSON.parse(fs.readFileSync(path.join(locales, `${type}.json`), 'utf8'))[type];
        const help = fs.readFileSync(path.join(locales, `${type}.html`), 'utf8');
        const from = help.indexOf(`<h3>${heading}</h3>`);
        should(from).be.aboveOrEqual(0);
        const part = help.slice(from, help.indexOf('<h3>', from + 1)).replace(/\s+/g, ' ');
        // Each status is named by its longest fixed part (its figures vary); a warning by its opening words.
        const leaves = (tree: unknown): string[] =>
          typeof tree === 'string' ? [tree] : Object.values(tree as Record<string, unknown>).flatMap(leaves);
        const fixed = (text: string) => text.split(/__\w+__/).map((piece) => piece.trim());
        const statuses = leaves(texts.status).map((text) => fixed(text).sort((a, b) => b.length - a.length)[0]);
        const warnings = ['backupFloor', 'commandDropped'].map((key) => fixed(texts.errors[key])[0].slice(0, 30));
        should(statuses.length).be.above(15);
        for (const words of [...statuses, ...warnings]) should(part).containEql(words);
      });
    }
  });

  for (const language of HELP_LANGUAGES) {
    for (const direction of ['read', 'write'] as const) {
      it(`${direction} help (${language}) lists the points exactly as the catalogue generates them (run \`npm run docs\` to update)`, function () {
        const page = fs.readFileSync(path.resolve(__dirname, '..', 'nodes', 'locales', language, `localbattery-${direction}.html`), 'utf8');
        should(page).containEql(helpPointList(direction, language));
      });
    }
  }
});
