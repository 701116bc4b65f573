import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { expect } from 'expect';
import {
  checkServerPackage, choosePython, describeStartProblem, expandSetting, installCommand,
} from '../../src/python';

const REPO_PYTHON = join(process.cwd(), '../../.venv/bin/python');

describe('python interpreter choice', () => {
  it('prefers the setting, expanding ${workspaceFolder}', async () => {
    const api = async () => ({ environments: { getActiveEnvironmentPath: () => ({ path: '/env/bin/python' }) } });
    expect(await choosePython({ setting: '${workspaceFolder}/.venv/bin/python', workspaceFolder: '/ws',
      pythonExtension: api })).toEqual({ path: '/ws/.venv/bin/python', source: 'setting' });
    expect(expandSetting('.venv/bin/python', '/ws')).toBe('/ws/.venv/bin/python');
    expect(expandSetting('python3.12', '/ws')).toBe('python3.12');
  });

  it("then the Python extension's active interpreter, then python3", async () => {
    const api = async () => ({ environments: { getActiveEnvironmentPath: () => ({ path: '/env/bin/python' }) } });
    expect(await choosePython({ setting: '', pythonExtension: api }))
      .toEqual({ path: '/env/bin/python', source: 'python-extension' });
    expect(await choosePython({ setting: ' ', pythonExtension: async () => undefined }))
      .toEqual({ path: 'python3', source: 'default' });
    expect(await choosePython({ setting: '', pythonExtension: () => Promise.reject(new Error('x')) }))
      .toEqual({ path: 'python3', source: 'default' });
  });

  it('tells a missing interpreter from a missing package', async () => {
    expect(await checkServerPackage('/nonexistent/python')).toBe('no-python');
    expect(await checkServerPackage('python3', 'topicforest_no_such_module')).toBe('missing-package');
    expect(await checkServerPackage('python3', 'json')).toBe('ok');
  });

  it('finds topicforest in the repo venv', { skip: existsSync(REPO_PYTHON) ? false : 'no repo .venv' }, async () => {
    expect(await checkServerPackage(REPO_PYTHON)).toBe('ok');
  });

  it('offers the install command for a missing package', () => {
    const problem = describeStartProblem({ path: '/opt/py 3/bin/python', source: 'setting' }, 'missing-package');
    expect(problem?.message).toContain('"topicforest" is not installed');
    expect(problem?.message).toContain('"/opt/py 3/bin/python" -m pip install topicforest');
    expect(problem?.actions).toEqual(['install', 'chooseInterpreter', 'showLog']);
    expect(describeStartProblem({ path: 'python3', source: 'default' }, 'ok')).toBeNull();
    expect(describeStartProblem({ path: 'py', source: 'default' }, 'no-python')?.message)
      .toContain('topicForest.python');
    expect(installCommand('python3')).toBe('python3 -m pip install topicforest');
  });
});
