// Rewrites the point tables in README.md and the point lists of the read and write help pages from the catalogue.
const fs = require('fs');
const path = require('path');
const { withPointTables, withHelpPointList, HELP_LANGUAGES } = require('../dist/src/points/docs');

const root = path.join(__dirname, '..');
const rewrite = (file, change) => fs.writeFileSync(file, change(fs.readFileSync(file, 'utf8')));

rewrite(path.join(root, 'README.md'), withPointTables);
for (const language of HELP_LANGUAGES) {
  for (const direction of ['read', 'write']) {
    rewrite(path.join(root, 'nodes', 'locales', language, `localbattery-${direction}.html`), (page) =>
      withHelpPointList(page, direction, language),
    );
  }
}
console.log('README.md point tables and help point lists updated');
