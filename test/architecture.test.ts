/**
 * The plan of the tree, checked on the sources: layer folders under src/, few files at its top, no import circles,
 * the simulator out of the nodes' and the client's reach, no function over 150 lines and no class of the control layer
 * over about 300.
 */
import fs from 'node:fs';
import path from 'node:path';
import should from 'should';
import ts from 'typescript';

const ROOT = path.join(__dirname, '..', '..');
const MAX_FUNCTION_LINES = 150;
/** The regulator's rooms (issue 36): no class of src/control/ over about 300 lines. */
const MAX_CONTROL_CLASS_LINES = 310;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [file] : [];
  });
}

const FILES = [...sourceFiles('src'), ...sourceFiles('nodes')];
const text = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/** Every relative import of a file (type-only and re-exports too), resolved to a file of the tree. */
function importsOf(file: string): string[] {
  return ts
    .preProcessFile(text(file), true, true)
    .importedFiles.map((imported) => imported.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => {
      const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), name));
      const found = [`${base}.ts`, `${base}/index.ts`].find((candidate) => FILES.includes(candidate));
      if (!found) throw new Error(`${file}: cannot resolve ${name}`);
      return found;
    });
}

const GRAPH = new Map(FILES.map((file) => [file, importsOf(file)]));

function closure(file: string): Set<string> {
  const seen = new Set<string>();
  const todo = [file];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    for (const imported of GRAPH.get(next) ?? []) {
      if (seen.has(imported)) continue;
      seen.add(imported);
      todo.push(imported);
    }
  }
  return seen;
}

/** Strongly connected components with more than one file (or a file importing itself): the import circles. */
function circles(): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    for (const imported of GRAPH.get(file)!) {
      if (!index.has(imported)) {
        visit(imported);
        low.set(file, Math.min(low.get(file)!, low.get(imported)!));
      } else if (stack.includes(imported)) low.set(file, Math.min(low.get(file)!, index.get(imported)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component = stack.splice(stack.indexOf(file));
    if (component.length > 1 || GRAPH.get(file)!.includes(file)) found.push(component.sort());
  };
  for (const file of FILES) if (!index.has(file)) visit(file);
  return found;
}

/** Functions, methods, accessors, constructors and arrow functions with a body, and their length in lines. */
/** The length of each node of `file` that `counts` (functions with a body, classes), by name and line. */
function lengths(file: string, counts: (node: ts.Node) => node is ts.Node & { name?: ts.Node }): { name: string; lines: number }[] {
  const source = ts.createSourceFile(file, text(file), ts.ScriptTarget.ES2022, true);
  const line = (position: number) => source.getLineAndCharacterOfPosition(position).line;
  const found: { name: string; lines: number }[] = [];
  const visit = (node: ts.Node) => {
    if (counts(node)) {
      const name = node.name && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)';
      found.push({ name: `${file}:${line(node.getStart()) + 1} ${name}`, lines: line(node.getEnd()) - line(node.getStart()) + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const functionLengths = (file: string) =>
  lengths(file, (node): node is ts.FunctionLikeDeclaration => ts.isFunctionLike(node) && 'body' in node && node.body !== undefined);
const classLengths = (file: string) => lengths(file, ts.isClassDeclaration);

/** The layers in the order of docs/design.md: each imports only from itself and the ones before it. */
const LAYERS = ['errors', 'numbers', 'points', 'device', 'control', 'discovery', 'editor', 'flow', 'simulator', 'cli', 'index'];
const layerOf = (file: string) => LAYERS.indexOf(file.split('/')[1].replace(/\.ts$/, ''));

describe('architecture', () => {
  it('names its layers: at least four folders under src/ and at most eight files at its top', () => {
    const entries = fs.readdirSync(path.join(ROOT, 'src'), { withFileTypes: true });
    entries.filter((entry) => entry.isDirectory()).length.should.be.aboveOrEqual(4);
    entries.filter((entry) => entry.isFile()).length.should.be.belowOrEqual(8);
  });

  it('has no import circle in src/ or nodes/', () => {
    const found = circles();
    should(found).eql([], `import circles: ${found.map((circle) => circle.join(' ↔ ')).join('; ')}`);
  });

  it('imports only from the layers before its own, in the order of docs/design.md', () => {
    const src = FILES.filter((file) => file.startsWith('src/'));
    should(src.filter((file) => layerOf(file) === -1)).eql([], 'a file outside the known layers');
    const upward = src.flatMap((file) =>
      GRAPH.get(file)!
        .filter((imported) => layerOf(imported) > layerOf(file))
        .map((imported) => `${file} → ${imported}`),
    );
    upward.should.eql([]);
  });

  it('finds an import circle where there is one (the check itself)', () => {
    GRAPH.set('src/points/read-point.ts', ['src/points/catalogue.ts']);
    try {
      circles().should.containEql(['src/points/catalogue.ts', 'src/points/home-assistant.ts', 'src/points/read-point.ts']);
    } finally {
      GRAPH.set('src/points/read-point.ts', importsOf('src/points/read-point.ts'));
    }
  });

  it('keeps the simulator out of reach of every node', () => {
    const reached = FILES.filter((file) => file.startsWith('nodes/')).flatMap((node) =>
      [...closure(node)].filter((file) => file.startsWith('src/simulator/')).map((file) => `${node} → ${file}`),
    );
    reached.should.eql([]);
  });

  it("keeps the device client's imports clear of the simulator and its MD5 code", () => {
    const reached = closure('src/device/client.ts');
    reached.should.containEql('src/device/auth.ts');
    [...reached].filter((file) => file.startsWith('src/simulator/')).should.eql([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines in src/ or nodes/`, () => {
    const long = FILES.flatMap(functionLengths)
      .filter((f) => f.lines > MAX_FUNCTION_LINES)
      .map((f) => `${f.name} (${f.lines} lines)`);
    long.should.eql([]);
  });

  it(`has no class over ${MAX_CONTROL_CLASS_LINES} lines in src/control/: the regulator in rooms`, () => {
    const control = FILES.filter((file) => file.startsWith('src/control/'));
    const classes = control.flatMap(classLengths);
    classes.length.should.be.aboveOrEqual(10);
    const long = classes.filter((c) => c.lines > MAX_CONTROL_CLASS_LINES).map((c) => `${c.name} (${c.lines} lines)`);
    long.should.eql([]);
  });
});
