// Rewrites the point tables in README.md from the catalogue.
const fs = require('fs');
const path = require('path');
const { withPointTables } = require('../dist/src/docs');

const file = path.join(__dirname, '..', 'README.md');
fs.writeFileSync(file, withPointTables(fs.readFileSync(file, 'utf8')));
console.log('README.md point tables updated');
