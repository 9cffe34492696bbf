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

/**
 * The editor's rules (src/editor/editor-rules.ts, compiled by tsc to CommonJS) and every module they require, wrapped into
 * one script for the browser that sets window.localBatteryRules: the editor runs the runtime's own code. Only modules
 * of the package may be required; anything else (a Node.js module) fails the build.
 */
function bundleForBrowser(entry, outFile) {
  const dir = path.join(root, 'dist', 'src');
  // "./points/catalogue" for dist/src/points/catalogue.js: every module of the bundle is one of the package's own.
  const moduleId = (file) => './' + path.relative(dir, file).replace(/\\/g, '/').replace(/\.js$/, '');
  const modules = new Map();
  const visit = (file) => {
    const id = moduleId(file);
    if (modules.has(id)) return id;
    const source = fs
      .readFileSync(file, 'utf8')
      .replace(/^\/\/# sourceMappingURL=.*$/m, '')
      .replace(/require\("([^"]+)"\)/g, (_match, name) => {
        if (!name.startsWith('.'))
          throw new Error(`${path.relative(root, file)} requires ${name}: the editor's rules must run in a browser`);
        return `require(${JSON.stringify(visitLater(path.resolve(path.dirname(file), name + '.js')))})`;
      });
    modules.set(id, source);
    return id;
  };
  const pending = [];
  const visitLater = (file) => {
    pending.push(file);
    return moduleId(file);
  };
  const main = visit(entry);
  while (pending.length) visit(pending.pop());
  const definitions = [...modules].map(([id, source]) => `${JSON.stringify(id)}: function (require, module, exports) {\n${source}\n}`);
  const script = `// Built by scripts/copy-assets.js from ${path.relative(root, entry)}: the runtime's own rules, for the editor.
(function () {
  var definitions = {
${definitions.join(',\n')}
  };
  var loaded = {};
  function require(id) {
    if (!loaded[id]) {
      var module = { exports: {} };
      loaded[id] = module;
      definitions[id](require, module, module.exports);
    }
    return loaded[id].exports;
  }
  window.localBatteryRules = require(${JSON.stringify(main)});
})();
`;
  fs.writeFileSync(outFile, script);
}

bundleForBrowser(
  path.join(root, 'dist', 'src', 'editor', 'editor-rules.js'),
  path.join(root, 'dist', 'src', 'editor', 'editor-rules.browser.js'),
);
