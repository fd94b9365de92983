/**
 * The Markdown of the project (README.md, docs/, the typed client's README): every fenced block is closed, every
 * relative link names a file that exists (and, into Markdown, a heading that exists), and every example shown in
 * README.md or docs/ is, verbatim, the file under examples/ that test/examples.test.ts runs against a live service.
 *
 * An example's fence is announced by the comment before it: `<!-- example: ../examples/refunds.sh -->` (the path
 * relative to the Markdown file). Fences of other content (sample output, state diagrams) say `text`; a command that
 * starts the service, and so never ends by itself, says why it is not run: `<!-- not run: starts the service -->`.
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { toString } from 'mdast-util-to-string';
import { repoRoot } from './support/serviceProcess.ts';

/** The few node fields this check reads (mdast's shapes). */
interface MdNode {
  type: string;
  value?: string;
  url?: string;
  lang?: string | null;
  depth?: number;
  children?: MdNode[];
  position?: { start: { line: number; offset?: number }; end: { line: number; offset?: number } };
}

/** Languages of what runs; a fence in one of them must be an example's file. */
const EXAMPLE_LANGUAGES = new Set(['sh', 'bash', 'shell', 'ts', 'typescript', 'js', 'javascript', 'sql']);
const EXAMPLE_MARKER = /^<!--\s*example:\s*(\S+)\s*-->$/;
/** A command that cannot be an example which ends by itself (it starts the service), with the reason said. */
const NOT_RUN_MARKER = /^<!--\s*not run:\s*\S.*-->$/;

function markdownFiles(): string[] {
  const docs = join(repoRoot, 'docs');
  const walk = (dir: string): string[] => readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : name.endsWith('.md') ? [path] : [];
  });
  return [join(repoRoot, 'README.md'), ...(existsSync(docs) ? walk(docs) : []), join(repoRoot, 'clients/typescript/README.md')];
}

const parsed = new Map<string, { source: string; tree: MdNode }>();
function parse(file: string) {
  let found = parsed.get(file);
  if (!found) {
    const source = readFileSync(file, 'utf8');
    found = { source, tree: fromMarkdown(source) as MdNode };
    parsed.set(file, found);
  }
  return found;
}

function visit(node: MdNode, each: (node: MdNode, parent: MdNode | null, index: number) => void, parent: MdNode | null = null, index = 0): void {
  each(node, parent, index);
  node.children?.forEach((child, i) => visit(child, each, node, i));
}

/** The anchors GitHub gives the headings of a Markdown file. */
const anchorsOf = new Map<string, Set<string>>();
function anchors(file: string): Set<string> {
  let found = anchorsOf.get(file);
  if (!found) {
    const slugger = new GithubSlugger();
    found = new Set();
    visit(parse(file).tree, (node) => { if (node.type === 'heading') found!.add(slugger.slug(toString(node))); });
    anchorsOf.set(file, found);
  }
  return found;
}

const where = (file: string, node: MdNode) => `${relative(repoRoot, file)}:${node.position?.start.line}`;

describe('Markdown: README.md, docs/, clients/typescript/README.md', () => {
  const files = markdownFiles();

  it('has guides under docs/, and a README that stays a front door (at most 250 lines)', () => {
    expect(files.filter((f) => f.startsWith(join(repoRoot, 'docs'))).length).to.be.greaterThan(5);
    expect(readFileSync(join(repoRoot, 'README.md'), 'utf8').split('\n').length).to.be.at.most(250);
  });

  for (const file of files) {
    describe(relative(repoRoot, file), () => {
      it('closes every fenced block, and names the language of each', () => {
        const { source, tree } = parse(file);
        const problems: string[] = [];
        visit(tree, (node) => {
          if (node.type !== 'code') return;
          const text = source.slice(node.position!.start.offset, node.position!.end.offset);
          const opening = /^\s*(`{3,}|~{3,})/.exec(text);
          if (!opening) return; // an indented block
          const lines = text.split('\n');
          const last = lines.at(-1)!.trim();
          const closed = lines.length > 1 && last.startsWith(opening[1]!) && /^(`+|~+)$/.test(last);
          if (!closed) problems.push(`${where(file, node)}: the fence opened here is never closed`);
          if (!node.lang) problems.push(`${where(file, node)}: a fence without a language (\`text\` for output)`);
        });
        expect(problems, problems.join('\n')).to.deep.equal([]);
      });

      it('links only to files and headings that exist', () => {
        const problems: string[] = [];
        visit(parse(file).tree, (node) => {
          if (!['link', 'definition', 'image'].includes(node.type) || !node.url) return;
          const url = node.url;
          if (/^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith('//')) return; // another site, mailto:
          const [pathPart, anchor] = url.split('#') as [string, string | undefined];
          const target = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
          if (!existsSync(target)) {
            problems.push(`${where(file, node)}: ${url}: no such file`);
            return;
          }
          if (anchor !== undefined && target.endsWith('.md') && !anchors(target).has(anchor)) {
            problems.push(`${where(file, node)}: ${url}: no heading #${anchor} in ${relative(repoRoot, target)}`);
          }
        });
        expect(problems, problems.join('\n')).to.deep.equal([]);
      });

      if (file.endsWith('clients/typescript/README.md')) return;
      it('shows each example as the file under examples/ that the examples test runs, verbatim', () => {
        const problems: string[] = [];
        visit(parse(file).tree, (node, parent, index) => {
          if (node.type !== 'code' || !EXAMPLE_LANGUAGES.has(node.lang ?? '')) return;
          const before = parent?.children?.[index - 1];
          if (before?.type === 'html' && NOT_RUN_MARKER.test(before.value!.trim())) return;
          const marker = before?.type === 'html' ? EXAMPLE_MARKER.exec(before.value!.trim()) : null;
          if (!marker) {
            problems.push(`${where(file, node)}: a ${node.lang} fence that is not an example's file (put <!-- example: ../examples/….sh --> before it)`);
            return;
          }
          const example = resolve(dirname(file), marker[1]!);
          if (!example.startsWith(join(repoRoot, 'examples') + '/') || !existsSync(example)) {
            problems.push(`${where(file, node)}: ${marker[1]} is not a file under examples/`);
          } else if (readFileSync(example, 'utf8').trimEnd() !== node.value!.trimEnd()) {
            problems.push(`${where(file, node)}: differs from ${relative(repoRoot, example)}; show the file as it is`);
          }
        });
        expect(problems, problems.join('\n')).to.deep.equal([]);
      });
    });
  }
});
