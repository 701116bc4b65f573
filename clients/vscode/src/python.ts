// Which Python runs the server, and whether it has the `topicforest` package.
import { execFile } from 'node:child_process';
import * as path from 'node:path';

export type PythonSource = 'setting' | 'python-extension' | 'default';

export interface PythonChoice {
  path: string;
  source: PythonSource;
}

/** The slice of the Python extension's API we use (ms-python.python exports.environments). */
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: unknown): { path?: string } | undefined;
  };
}

export interface PythonLookup {
  setting: string;
  workspaceFolder?: string;
  pythonExtension?: () => Promise<PythonExtensionApi | undefined>;
}

/** `${workspaceFolder}` and relative paths resolve against the first workspace folder. */
export function expandSetting(value: string, workspaceFolder?: string): string {
  let out = value.trim();
  if (workspaceFolder) {
    out = out.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
    if (out.includes(path.sep) && !path.isAbsolute(out)) out = path.join(workspaceFolder, out);
  }
  return out;
}

export async function choosePython(lookup: PythonLookup): Promise<PythonChoice> {
  if (lookup.setting.trim() !== '') {
    return { path: expandSetting(lookup.setting, lookup.workspaceFolder), source: 'setting' };
  }
  try {
    const api = await lookup.pythonExtension?.();
    const found = api?.environments?.getActiveEnvironmentPath?.()?.path;
    if (found) return { path: found, source: 'python-extension' };
  } catch {
    // an inactive or broken Python extension is not fatal: fall through to python3
  }
  return { path: 'python3', source: 'default' };
}

export type PackageCheck = 'ok' | 'missing-package' | 'no-python' | 'error';

const CHECK = 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)';

/** Runs `<python> -c ...` to tell "no interpreter" from "no topicforest package". */
export function checkServerPackage(python: string, module = 'topicforest',
  timeoutMs = 20_000): Promise<PackageCheck> {
  return new Promise((resolve) => {
    execFile(python, ['-c', CHECK, module], { timeout: timeoutMs }, (error) => {
      if (!error) return resolve('ok');
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EACCES') return resolve('no-python');
      resolve((error as { code?: unknown }).code === 3 ? 'missing-package' : 'error');
    });
  });
}

export function installCommand(python: string): string {
  const quoted = /[\s"'$]/.test(python) ? `"${python.replace(/(["\\$`])/g, '\\$1')}"` : python;
  return `${quoted} -m pip install topicforest`;
}

export interface StartProblem {
  message: string;
  actions: ('install' | 'chooseInterpreter' | 'showLog')[];
}

export function describeStartProblem(python: PythonChoice, check: PackageCheck): StartProblem | null {
  const where = python.source === 'setting' ? ' (from the "topicForest.python" setting)'
    : python.source === 'python-extension' ? " (the Python extension's active interpreter)" : '';
  switch (check) {
    case 'ok':
      return null;
    case 'missing-package':
      return {
        message: `Topic Forest: the Python package "topicforest" is not installed for ${python.path}` +
          `${where}. Install it with: ${installCommand(python.path)}`,
        actions: ['install', 'chooseInterpreter', 'showLog'],
      };
    case 'no-python':
      return {
        message: `Topic Forest: cannot run Python at "${python.path}"${where}. Set ` +
          '"topicForest.python" to a Python 3.11+ interpreter that has "topicforest" installed.',
        actions: ['chooseInterpreter', 'showLog'],
      };
    case 'error':
      return {
        message: `Topic Forest: checking for the "topicforest" package with ${python.path}${where} ` +
          'failed; see the log.',
        actions: ['chooseInterpreter', 'showLog'],
      };
  }
}
