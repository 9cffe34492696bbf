// Rewrites the README's model table, the point tables of docs/reference.md and the point lists of the read and write
// help pages from the catalogue.
const fs = require('fs');
const path = require('path');
const { withModelTable, withPointTables, withHelpPointList, HELP_LANGUAGES } = require('../dist/src/points/docs');

const root = path.join(__dirname, '..');
const rewrite = (file, change) => fs.writeFileSync(file, change(fs.readFileSync(file, 'utf8')));

rewrite(path.join(root, 'README.md'), withModelTable);
rewrite(path.join(root, 'docs', 'reference.md'), withPointTables);
for (const language of HELP_LANGUAGES) {
  for (const direction of ['read', 'write']) {
    rewrite(path.join(root, 'nodes', 'locales', language, `localbattery-${direction}.html`), (page) =>
      withHelpPointList(page, direction, language),
    );
  }
}
console.log('README.md model table, docs/reference.md point tables and help point lists updated');
