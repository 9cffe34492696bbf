// Puts each editor .html, the locale catalogues and the icons next to the compiled node .js files,
// where Node-RED (and the flow library's checker) look for them.
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..');
const out = path.join(root, 'dist', 'nodes');
fs.mkdirSync(out, { recursive: true });
for (const file of fs.readdirSync(path.join(root, 'nodes'))) {
  if (file.endsWith('.html')) fs.copyFileSync(path.join(root, 'nodes', file), path.join(out, file));
}
fs.cpSync(path.join(root, 'nodes', 'locales'), path.join(out, 'locales'), { recursive: true });
fs.cpSync(path.join(root, 'icons'), path.join(out, 'icons'), { recursive: true });
