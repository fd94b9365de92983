import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './support/serviceProcess.ts';

interface Run { code: number | null; stdout: string; stderr: string }

function run(cwd: string, args: string[]): Promise<Run> {
  const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/** The project's build inputs in a directory of their own, sharing the installed node_modules. */
function copyOfProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-build-'));
  for (const entry of ['src', 'projections', 'schemas', 'scripts', 'tsconfig.json', 'tsconfig.build.json', 'package.json']) {
    cpSync(join(repoRoot, entry), join(dir, entry), { recursive: true });
  }
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

describe('the compiled service (scripts/run.mjs)', function () {
  this.timeout(180_000);
  let project: string;
  before(() => { project = copyOfProject(); });
  after(() => rmSync(project, { recursive: true, force: true }));

  it('builds dist/ when there is none, and builds it again after a source edit, so an edit is never served by old code', async () => {
    const first = await run(project, ['scripts/run.mjs', 'cli', 'no-such-command']);
    expect(first.code, first.stderr).to.equal(2);
    expect(first.stderr).to.match(/compiling to dist/);
    expect(first.stderr).to.match(/unknown command 'no-such-command'\n\(add --help for usage\)/);
    expect(first.stdout).to.equal('');
    const firstBuild = JSON.parse(readFileSync(join(project, 'dist', 'build.json'), 'utf8')).fingerprint;

    const unchanged = await run(project, ['scripts/run.mjs', 'cli', 'no-such-command']);
    expect(unchanged.stderr).not.to.match(/compiling/);

    const cli = join(project, 'src', 'cli.ts');
    writeFileSync(cli, readFileSync(cli, 'utf8').replace(".showHelpAfterError('(add --help for usage)')", ".showHelpAfterError('(edited)')"));
    const edited = await run(project, ['scripts/run.mjs', 'cli', 'no-such-command']);
    expect(edited.code, edited.stderr).to.equal(2);
    expect(edited.stderr).to.match(/compiling to dist/);
    expect(edited.stderr).to.match(/unknown command 'no-such-command'\n\(edited\)/);
    expect(JSON.parse(readFileSync(join(project, 'dist', 'build.json'), 'utf8')).fingerprint).not.to.equal(firstBuild);
  });
});
