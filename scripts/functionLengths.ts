/**
 * Prints the longest functions of `src/` and `projections/` (lines from the function's first to its last line),
 * longest first: `npm run functions` (all over 80 lines) or `npm run functions -- 40` (another threshold). A route
 * table, a decider's switch or a handler that reads as one story may stay long; past MAX_FUNCTION_LINES it is split.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/** Above this many lines a function is split (test/functionLengths.test.ts holds it). */
export const MAX_FUNCTION_LINES = 120;
const ROOTS = ['src', 'projections'];

export interface FunctionLength { file: string; name: string; line: number; lines: number }

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function nameOf(node: ts.Node, source: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name) return named.name.getText(source);
  // An arrow or function expression: the variable, property or call argument that holds it.
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name) return parent.name.getText(source);
  if (parent && ts.isCallExpression(parent)) return `${parent.expression.getText(source).slice(0, 40)}(…)`;
  return '(anonymous)';
}

/** Every function, method, arrow and accessor of the source roots, with its length in lines. */
export function functionLengths(root = process.cwd()): FunctionLength[] {
  const found: FunctionLength[] = [];
  for (const file of ROOTS.flatMap((r) => sourceFiles(join(root, r)))) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        found.push({ file: relative(root, file), name: nameOf(node, source), line: start + 1, lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found.sort((a, b) => b.lines - a.lines);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const threshold = Number(process.argv[2] ?? 80);
  const over = functionLengths().filter((f) => f.lines > threshold);
  for (const f of over) console.log(`${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`);
  console.log(`${over.length} functions over ${threshold} lines (the limit is ${MAX_FUNCTION_LINES})`);
}
