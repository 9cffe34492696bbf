/**
 * The README's model table and docs/reference.md's point tables are generated from the catalogue: this fails when
 * they differ. The README's links work where the package is published (npm, the flow library): each is absolute or
 * names a file the package ships.
 */
import fs from 'node:fs';
import path from 'node:path';
import 'should';
import { MODEL_READ_POINTS, READ_POINTS, WRITE_POINTS, servingAddresses } from '../src/points/catalogue';
import { MODELS_END, MODELS_START, TABLE_END, TABLE_START, modelTable, pointTables } from '../src/points/docs';

const ROOT = path.join(__dirname, '..', '..');
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const reference = fs.readFileSync(path.join(ROOT, 'docs', 'reference.md'), 'utf8');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { files: string[]; repository: { url: string } };

const generated = (text: string, start: string, end: string) => {
  const from = text.indexOf(start);
  from.should.be.aboveOrEqual(0, `no ${start}`);
  return text.slice(from, text.indexOf(end) + end.length);
};

/** Every link and image target of a markdown text: [text](target), ![alt](target) and <https://…>. */
export function linkTargets(markdown: string): string[] {
  const inline = [...markdown.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]);
  const autolinks = [...markdown.matchAll(/<(https?:\/\/[^>\s]+)>/g)].map((match) => match[1]);
  return [...inline, ...autolinks];
}

/** GitHub's anchor of a heading: lower case, punctuation but hyphens dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');

/** Whether a path inside the repository is in the published package, by package.json's `files`. */
function shipped(file: string): boolean {
  const normal = path.posix.normalize(file);
  const within = (pattern: string) => normal === pattern || normal.startsWith(`${pattern.replace(/\/$/, '')}/`);
  const included = pkg.files.filter((pattern) => !pattern.startsWith('!')).some(within);
  return included && fs.existsSync(path.join(ROOT, normal));
}

describe('README', () => {
  it('has the model table exactly as the catalogue generates it (run `npm run docs` to update)', () => {
    generated(readme, MODELS_START, MODELS_END).should.equal(modelTable());
  });

  it('stays an owner’s page: at most 300 lines', () => {
    readme.split('\n').length.should.be.belowOrEqual(300);
  });

  it('keeps the clone’s two commands in one block: the demo and the tests', () => {
    const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]);
    const clone = blocks.find((block) => block.includes('npm install && npm start'));
    (clone ?? '').should.match(/^npm test\b/m);
  });

  it('links only to absolute addresses, anchors of its own headings or files the package ships', () => {
    const repository = pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
    const headings = new Set([...readme.matchAll(/^#+ (.*)$/gm)].map((match) => anchorOf(match[1])));
    const targets = linkTargets(readme);
    targets.length.should.be.above(5);
    for (const target of targets) {
      if (/^https:\/\//.test(target)) {
        // Files of this repository by their address on GitHub: the file must exist here.
        const file = new RegExp(
          `^(?:${repository}/blob/main/|https://raw\\.githubusercontent\\.com/${repository.replace('https://github.com/', '')}/main/)([^#]+)`,
        ).exec(target);
        if (file) fs.existsSync(path.join(ROOT, file[1])).should.be.true(`${target} names a file of the repository`);
      } else if (target.startsWith('#')) {
        headings.has(target.slice(1)).should.be.true(`${target} is a heading of the README`);
      } else {
        shipped(target).should.be.true(`${target} is neither absolute nor a file the package ships`);
      }
    }
  });
});

describe('docs/reference.md', () => {
  it('has the point tables exactly as the catalogue generates them (run `npm run docs` to update)', () => {
    generated(reference, TABLE_START, TABLE_END).should.equal(pointTables());
  });

  it('lists every point of the catalogue by name and address', () => {
    for (const point of [...READ_POINTS, ...WRITE_POINTS]) reference.should.containEql(`| \`${point.name}\` | ${point.address} |`);
  });

  it('lists every model read point with the addresses each model serves it at', () => {
    for (const point of MODEL_READ_POINTS) reference.should.containEql(`| \`${point.name}\` | ${servingAddresses(point).join(' / ')} |`);
  });
});
