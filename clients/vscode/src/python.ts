// Which Python runs the server, whether it has the `topicforest` package, and which interpreter
// can host the extension's private environment (environment.ts) when no setting names one.
import { spawn } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';

/** pyproject.toml's requires-python (test/unit/manifest.test.ts keeps the two equal). */
export const MIN_PYTHON = [3, 11] as const;
export const MIN_PYTHON_TEXT = MIN_PYTHON.join('.');

/** setting: topicForest.python; bundled: the private environment; the others are base candidates. */
export type PythonSource = 'setting' | 'bundled' | 'python-extension' | 'path';

export interface PythonChoice {
  path: string;
  source: PythonSource;
}

export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** the executable could not be started at all (ENOENT, EACCES) */
  missing?: boolean;
}

export interface ExecOptions {
  timeoutMs?: number;
  /** each line of stdout and stderr as it arrives (pip's progress goes to the log) */
  onLine?: (line: string) => void;
}

export type Exec = (file: string, args: string[], options?: ExecOptions) => Promise<ExecResult>;

/**
 * Every interpreter the extension starts runs isolated (`-I`: neither the current directory, nor
 * PYTHON* variables, nor the user site on sys.path) in a directory outside the workspace: with
 * `python -m`, a cloned repository's own `topicforest/` (or any module not yet imported) would
 * otherwise replace ours and run its code, even in Restricted Mode.
 */
export const ISOLATED = '-I';
export const SERVE_ARGS = [ISOLATED, '-m', 'topicforest', 'serve'];
export const neutralDirectory = (): string => os.tmpdir();

/** Runs a Python interpreter isolated (ISOLATED, neutralDirectory) to completion, collecting its
 *  output; never rejects. */
export const execProgram: Exec = (file, args, options = {}) => new Promise((resolve) => {
  const child = spawn(file, [ISOLATED, ...args],
    { cwd: neutralDirectory(), stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  const timer = options.timeoutMs
    ? setTimeout(() => child.kill('SIGKILL'), options.timeoutMs) : undefined;
  for (const stream of ['stdout', 'stderr'] as const) {
    let partial = '';
    child[stream].setEncoding('utf8').on('data', (chunk: string) => {
      out[stream] += chunk;
      const lines = (partial + chunk).split(/\r?\n/);
      partial = lines.pop() ?? '';
      for (const line of lines) options.onLine?.(line);
    });
  }
  child.on('error', (error: NodeJS.ErrnoException) => {
    clearTimeout(timer);
    resolve({ code: null, ...out, stderr: out.stderr + String(error),
      missing: error.code === 'ENOENT' || error.code === 'EACCES' });
  });
  child.on('close', (code) => {
    clearTimeout(timer);
    resolve({ code, ...out });
  });
});

/** The slice of the Python extension's API we use (ms-python.python exports.environments). */
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: unknown): { path?: string } | undefined;
  };
}

export type PythonExtensionLookup = () => Promise<PythonExtensionApi | undefined>;

/** `${workspaceFolder}` and relative paths resolve against the first workspace folder. */
export function expandSetting(value: string, workspaceFolder?: string): string {
  let out = value.trim();
  if (workspaceFolder) {
    out = out.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
    if (out.includes(path.sep) && !path.isAbsolute(out)) out = path.join(workspaceFolder, out);
  }
  return out;
}

/** Whether `file` lies inside `folder` (an untrusted workspace's interpreter is its code). */
export function isInside(file: string, folder: string | undefined): boolean {
  if (!folder) return false;
  const relative = path.relative(path.resolve(folder), path.resolve(file));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** Interpreters to build the private environment with, best first; in an untrusted workspace
 *  (`untrusted` is its folder) never one inside it. */
export async function baseCandidates(pythonExtension?: PythonExtensionLookup,
  untrusted?: string): Promise<PythonChoice[]> {
  const out: PythonChoice[] = [];
  try {
    const found = (await pythonExtension?.())?.environments?.getActiveEnvironmentPath?.()?.path;
    if (found && !isInside(found, untrusted)) out.push({ path: found, source: 'python-extension' });
  } catch {
    // an inactive or broken Python extension is not fatal: fall through to PATH
  }
  out.push({ path: 'python3', source: 'path' }, { path: 'python', source: 'path' });
  return out;
}

export function versionAtLeast(version: string, min: readonly number[]): boolean {
  const parts = version.split('.').map(Number);
  for (const [i, want] of min.entries()) {
    const have = parts[i] ?? 0;
    if (have !== want) return have > want;
  }
  return true;
}

const VERSION = 'import sys; print("%d.%d.%d" % sys.version_info[:3])';

export interface FoundPython extends PythonChoice {
  version: string;
}

/** The first candidate that runs and is new enough; `tried` says what each of the others was. */
export async function findBasePython(candidates: PythonChoice[], exec: Exec):
  Promise<{ found?: FoundPython; tried: string[] }> {
  const tried: string[] = [];
  for (const candidate of candidates) {
    const r = await exec(candidate.path, ['-c', VERSION], { timeoutMs: 20_000 });
    const version = r.stdout.trim();
    const label = candidate.source === 'python-extension'
      ? `${candidate.path} (the Python extension's interpreter)` : candidate.path;
    if (r.missing) tried.push(`${label}: not found`);
    else if (r.code !== 0 || !/^\d+\.\d+\.\d+$/.test(version)) tried.push(`${label}: does not run`);
    else if (!versionAtLeast(version, MIN_PYTHON)) tried.push(`${label}: ${version}, too old`);
    else return { found: { ...candidate, version }, tried };
  }
  return { tried };
}

export type PackageCheck = 'ok' | 'missing-package' | 'no-python' | 'error';

export interface PackageStatus {
  check: PackageCheck;
  /** the installed distribution's version when check is 'ok' */
  version?: string;
}

const CHECK = [
  'import importlib.util, importlib.metadata as md, sys',
  'sys.exit(3) if importlib.util.find_spec(sys.argv[1]) is None else None',
  'try: print(md.version(sys.argv[1]))',
  'except md.PackageNotFoundError: print("unknown")',
].join('\n');

/** Runs `<python> -c ...` to tell "no interpreter" from "no topicforest package". */
export async function checkServerPackage(python: string, module = 'topicforest',
  exec: Exec = execProgram): Promise<PackageStatus> {
  const r = await exec(python, ['-c', CHECK, module], { timeoutMs: 20_000 });
  if (r.missing) return { check: 'no-python' };
  if (r.code === 0) return { check: 'ok', version: r.stdout.trim() };
  return { check: r.code === 3 ? 'missing-package' : 'error' };
}

/** Where the extension's copy of the server lives (the .vsix carries it, see environment.ts). */
export interface BundleFiles {
  wheel: string;
  constraints: string;
  version: string;
}

const quote = (arg: string): string =>
  /[\s"'$`\\]/.test(arg) ? `"${arg.replace(/(["\\$`])/g, '\\$1')}"` : arg;

/** Installs the bundled wheel (never a name: "topicforest" is not on the package index). */
export function installCommand(python: string, bundle: BundleFiles): string {
  return [python, '-m', 'pip', 'install', '-c', bundle.constraints, bundle.wheel].map(quote).join(' ');
}

export type FixAction = 'install' | 'chooseInterpreter' | 'showLog' | 'retry';

export interface StartProblem {
  message: string;
  actions: FixAction[];
}

export function describeStartProblem(python: PythonChoice, check: PackageCheck,
  bundle?: BundleFiles): StartProblem | null {
  const where = python.source === 'setting' ? ' (from the "topicForest.python" setting)' : '';
  switch (check) {
    case 'ok':
      return null;
    case 'missing-package':
      return bundle ? {
        message: `Topic Forest: the Python package "topicforest" is not installed for ${python.path}` +
          `${where}. Install the server this extension carries (${bundle.version}) with: ` +
          `${installCommand(python.path, bundle)} — or clear the setting to let Topic Forest ` +
          'manage its own environment.',
        actions: ['install', 'chooseInterpreter', 'showLog'],
      } : {
        message: `Topic Forest: the Python package "topicforest" is not installed for ${python.path}` +
          `${where}. Install it from a topicforest wheel (pip install topicforest-<version>.whl).`,
        actions: ['chooseInterpreter', 'showLog'],
      };
    case 'no-python':
      return {
        message: `Topic Forest: cannot run Python at "${python.path}"${where}. Set ` +
          `"topicForest.python" to a Python ${MIN_PYTHON_TEXT}+ interpreter that has "topicforest" ` +
          'installed, or clear it to let Topic Forest manage its own environment.',
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

export function describeNoPython(tried: string[]): StartProblem {
  return {
    message: `Topic Forest needs Python ${MIN_PYTHON_TEXT} or newer to run its server and found ` +
      `none. Tried: ${tried.join('; ')}. Install Python ${MIN_PYTHON_TEXT}+ (python.org or your ` +
      'package manager) and Retry, or set "topicForest.python" to such an interpreter.',
    actions: ['retry', 'chooseInterpreter', 'showLog'],
  };
}
