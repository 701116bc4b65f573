import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { expect } from 'expect';
import {
  baseCandidates, checkServerPackage, describeNoPython, describeStartProblem, type Exec,
  execProgram, expandSetting, findBasePython, installCommand, isInside, neutralDirectory,
  SERVE_ARGS, versionAtLeast,
} from '../../src/python';

const REPO_PYTHON = join(process.cwd(), '../../.venv/bin/python');
const BUNDLE = { wheel: '/ext/bundled/topicforest-0.1.0-py3-none-any.whl',
  constraints: '/ext/bundled/constraints.txt', version: '0.1.0' };

/** An Exec that answers the version probe from a table: a version, 'missing' or 'crash'. */
function versions(table: Record<string, string>): Exec {
  return (file) => {
    const v = table[file] ?? 'missing';
    if (v === 'missing') return Promise.resolve({ code: null, stdout: '', stderr: 'ENOENT', missing: true });
    if (v === 'crash') return Promise.resolve({ code: 1, stdout: '', stderr: 'Segmentation fault' });
    return Promise.resolve({ code: 0, stdout: `${v}\n`, stderr: '' });
  };
}

/** A cloned repository whose planted `topicforest/` leaves a marker when it is imported. */
function hostileRepository(): { root: string; marker: string } {
  const root = mkdtempSync(join(tmpdir(), 'tf-hostile-'));
  const marker = join(root, 'pwned');
  mkdirSync(join(root, 'topicforest'));
  writeFileSync(join(root, 'topicforest', '__init__.py'),
    `import pathlib; pathlib.Path(${JSON.stringify(marker)}).write_text('ran')\n`);
  return { root, marker };
}

describe('a hostile workspace never runs its code', () => {
  it('the server argv imports our topicforest even when started inside the repository', { skip: !existsSync(REPO_PYTHON) && 'no .venv (make venv)' }, () => {
    const { root, marker } = hostileRepository();
    const argv = SERVE_ARGS.map((a) => (a === 'serve' ? '--version' : a));
    const done = spawnSync(REPO_PYTHON, argv, { cwd: root, encoding: 'utf8' });
    expect(done.status).toBe(0);
    expect(done.stdout).toMatch(/^topicforest \d/);
    expect(existsSync(marker)).toBe(false);
  });

  it('every interpreter check runs isolated, outside the workspace', { skip: !existsSync(REPO_PYTHON) && 'no .venv (make venv)' }, async () => {
    const { root, marker } = hostileRepository();
    const r = await execProgram(REPO_PYTHON, ['-c', 'import os, sys; print(os.getcwd()); print(sys.flags.isolated)']);
    expect(r.stdout.split('\n').slice(0, 2)).toEqual([neutralDirectory(), '1']);
    expect(neutralDirectory()).not.toBe(root);
    expect(existsSync(marker)).toBe(false);
  });

  it("an untrusted workspace's own interpreter is never a candidate", async () => {
    const api = async () => ({ environments: { getActiveEnvironmentPath: () => ({ path: '/ws/.venv/bin/python' }) } });
    expect(await baseCandidates(api, '/ws')).toEqual([{ path: 'python3', source: 'path' },
      { path: 'python', source: 'path' }]);
    expect(isInside('/ws/.venv/bin/python', '/ws')).toBe(true);
    expect(isInside('/wsx/bin/python', '/ws')).toBe(false);
    expect(isInside('/usr/bin/python3', '/ws')).toBe(false);
  });
});

describe('python interpreter search', () => {
  it('expands ${workspaceFolder} and relative paths in the setting', () => {
    expect(expandSetting('${workspaceFolder}/.venv/bin/python', '/ws')).toBe('/ws/.venv/bin/python');
    expect(expandSetting('.venv/bin/python', '/ws')).toBe('/ws/.venv/bin/python');
    expect(expandSetting('python3.12', '/ws')).toBe('python3.12');
  });

  it("tries the Python extension's active interpreter, then python3, then python", async () => {
    const api = async () => ({ environments: { getActiveEnvironmentPath: () => ({ path: '/env/bin/python' }) } });
    expect(await baseCandidates(api)).toEqual([{ path: '/env/bin/python', source: 'python-extension' },
      { path: 'python3', source: 'path' }, { path: 'python', source: 'path' }]);
    const onPath = [{ path: 'python3', source: 'path' }, { path: 'python', source: 'path' }];
    expect(await baseCandidates(async () => undefined)).toEqual(onPath);
    expect(await baseCandidates(() => Promise.reject(new Error('inactive')))).toEqual(onPath);
  });

  it('takes the first interpreter that runs and is 3.11 or newer, saying why the others were not', async () => {
    const candidates = await baseCandidates(async () =>
      ({ environments: { getActiveEnvironmentPath: () => ({ path: '/old/bin/python' }) } }));
    const { found, tried } = await findBasePython(candidates,
      versions({ '/old/bin/python': '3.9.18', python3: 'missing', python: '3.12.1' }));
    expect(found).toEqual({ path: 'python', source: 'path', version: '3.12.1' });
    expect(tried).toEqual(["/old/bin/python (the Python extension's interpreter): 3.9.18, too old",
      'python3: not found']);
  });

  it('names everything it tried and the fix when no interpreter fits', async () => {
    const { found, tried } = await findBasePython(await baseCandidates(),
      versions({ python3: '3.10.12', python: 'crash' }));
    expect(found).toBeUndefined();
    const problem = describeNoPython(tried);
    expect(problem.message).toContain('needs Python 3.11 or newer');
    expect(problem.message).toContain('Tried: python3: 3.10.12, too old; python: does not run.');
    expect(problem.message).toContain('"topicForest.python"');
    expect(problem.actions).toEqual(['retry', 'chooseInterpreter', 'showLog']);
  });

  it('compares versions numerically', () => {
    expect(versionAtLeast('3.11.0', [3, 11])).toBe(true);
    expect(versionAtLeast('3.9.18', [3, 11])).toBe(false);
    expect(versionAtLeast('3.100.0', [3, 11])).toBe(true);
    expect(versionAtLeast('4.0.0', [3, 11])).toBe(true);
  });

  it('runs real interpreters: skips a missing one and finds python3 on this machine', async () => {
    const { found, tried } = await findBasePython([{ path: '/nonexistent/python', source: 'path' },
      { path: 'python3', source: 'path' }], (await import('../../src/python')).execProgram);
    expect(tried).toEqual(['/nonexistent/python: not found']);
    expect(found?.path).toBe('python3');
    expect(versionAtLeast(found?.version ?? '0', [3, 11])).toBe(true);
  });
});

describe('the package check', () => {
  it('tells a missing interpreter from a missing package', async () => {
    expect(await checkServerPackage('/nonexistent/python')).toEqual({ check: 'no-python' });
    expect(await checkServerPackage('python3', 'topicforest_no_such_module'))
      .toEqual({ check: 'missing-package' });
    expect(await checkServerPackage('python3', 'json')).toEqual({ check: 'ok', version: 'unknown' });
  });

  it('finds topicforest and its version in the repo venv', { skip: existsSync(REPO_PYTHON) ? false : 'no repo .venv' }, async () => {
    expect(await checkServerPackage(REPO_PYTHON)).toEqual({ check: 'ok', version: '0.1.0' });
  });

  it('offers to install the bundled wheel, never a name the package index lacks', () => {
    const problem = describeStartProblem({ path: '/opt/py 3/bin/python', source: 'setting' },
      'missing-package', BUNDLE);
    expect(problem?.message).toContain('"topicforest" is not installed for /opt/py 3/bin/python');
    expect(problem?.message).toContain('"/opt/py 3/bin/python" -m pip install -c ' +
      '/ext/bundled/constraints.txt /ext/bundled/topicforest-0.1.0-py3-none-any.whl');
    expect(problem?.message).not.toMatch(/pip install topicforest(\s|$)/);
    expect(problem?.actions).toEqual(['install', 'chooseInterpreter', 'showLog']);
    // a build without a wheel has nothing to install: no Install button
    expect(describeStartProblem({ path: 'py', source: 'setting' }, 'missing-package')?.actions)
      .toEqual(['chooseInterpreter', 'showLog']);
    expect(describeStartProblem({ path: 'python3', source: 'bundled' }, 'ok')).toBeNull();
    expect(describeStartProblem({ path: 'py', source: 'setting' }, 'no-python')?.message)
      .toContain('topicForest.python');
    expect(installCommand('/a b/python', { ...BUNDLE, wheel: '/x/$w.whl' }))
      .toBe('"/a b/python" -m pip install -c /ext/bundled/constraints.txt "/x/\\$w.whl"');
  });
});
