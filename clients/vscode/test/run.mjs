// Bundles the TypeScript tests with esbuild (`vscode` -> test/mocks/vscode.ts) and runs them with
// node's test runner. usage: node test/run.mjs [unit|webview]...   (default: both)
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const suites = process.argv.slice(2).length ? process.argv.slice(2) : ['unit', 'webview'];
const entryPoints = suites.flatMap((suite) =>
  readdirSync(join('test', suite)).filter((f) => f.endsWith('.test.ts')).map((f) => join('test', suite, f)));
const outdir = '.test-out';
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints, outdir, outbase: 'test', bundle: true, platform: 'node', format: 'cjs',
  target: 'node20', sourcemap: 'inline', logLevel: 'warning', packages: 'external',
  alias: { vscode: './test/mocks/vscode.ts' },
});
const files = entryPoints.map((f) => join(outdir, f.slice('test/'.length).replace(/\.ts$/, '.js')));
const result = spawnSync(process.execPath, ['--enable-source-maps', '--test', '--test-reporter=spec', ...files],
  { stdio: 'inherit' });
process.exit(result.status ?? 1);
