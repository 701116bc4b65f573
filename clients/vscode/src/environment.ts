// The extension's private Python environment. With `topicForest.python` unset, a venv in the
// extension's global storage gets the wheel the .vsix carries (`bundled/`) and the pinned
// dependencies. A marker file, written last, says the environment is complete and which wheel it
// holds: an interrupted install or a vanished interpreter shows up as "broken" and is rebuilt, a
// different bundled wheel as "outdated" and is installed on the next start. The memory store
// lives elsewhere (the user data dir or `storePath`), so rebuilding loses nothing.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  type BundleFiles, describeNoPython, type Exec, type ExecResult, findBasePython, type FoundPython,
  MIN_PYTHON_TEXT, type PythonChoice, type StartProblem,
} from './python';

export interface Bundle extends BundleFiles {
  sha256: string;
}

const WHEEL = /^topicforest-([^-]+)-py3-none-any\.whl$/;

/** The wheel and constraints under `<extension>/bundled`, or undefined in a build without them. */
export function findBundle(extensionPath: string): Bundle | undefined {
  const dir = path.join(extensionPath, 'bundled');
  const name = fs.existsSync(dir) ? fs.readdirSync(dir).find((n) => WHEEL.test(n)) : undefined;
  const constraints = path.join(dir, 'constraints.txt');
  if (!name || !fs.existsSync(constraints)) return undefined;
  const wheel = path.join(dir, name);
  const sha256 = createHash('sha256').update(fs.readFileSync(wheel)).digest('hex');
  return { wheel, constraints, version: WHEEL.exec(name)?.[1] ?? '?', sha256 };
}

interface Marker {
  sha256: string;
  version: string;
  base: string;
  baseVersion: string;
}

export type EnvState = 'ready' | 'outdated' | 'missing' | 'broken';

/** A setup failure with the message and buttons the user should see. */
export class SetupError extends Error {
  constructor(readonly problem: StartProblem) {
    super(problem.message);
  }
}

export type Report = (step: string, increment?: number) => void;

export interface SetupHost {
  exec: Exec;
  log: (line: string) => void;
  /** base interpreters to try, best first (python.ts baseCandidates) */
  candidates: () => Promise<PythonChoice[]>;
  /** runs the slow part under a visible progress notification */
  withProgress: <T>(task: (report: Report) => Promise<T>) => Promise<T>;
}

// pip's words for "could not reach the index" (and for an index that lacks a pinned version)
const NETWORK = new RegExp(['No matching distribution found', 'Could not find a version that satisfies',
  'Failed to establish a new connection', 'Temporary failure in name resolution',
  'Name or service not known', 'Network is unreachable', 'Connection refused', 'Read timed out',
  'ConnectTimeout', 'ProxyError', 'SSLError', 'Max retries exceeded'].join('|'), 'i');

/** The line that says what went wrong: pip's last ERROR line, else the last line. */
function lastError(r: ExecResult): string {
  const lines = `${r.stdout}\n${r.stderr}`.split('\n').map((l) => l.trim()).filter(Boolean);
  return lines.filter((l) => l.startsWith('ERROR')).pop() ?? lines.pop() ?? `exit code ${String(r.code)}`;
}

export function pipProblem(r: ExecResult, dir: string): StartProblem {
  if (NETWORK.test(`${r.stdout}\n${r.stderr}`)) {
    return {
      message: 'Topic Forest could not download its server\'s dependencies from the Python ' +
        `package index (no network?). pip said: ${lastError(r)}. Connect and Retry; behind a ` +
        'proxy or mirror, start VS Code with HTTPS_PROXY or PIP_INDEX_URL set.',
      actions: ['retry', 'showLog'],
    };
  }
  return {
    message: `Topic Forest could not install its server into ${dir}: ${lastError(r)}. ` +
      'See the log; Retry rebuilds the environment.',
    actions: ['retry', 'showLog'],
  };
}

export function venvProblem(base: FoundPython, r: ExecResult): StartProblem {
  const hint = /ensurepip|venv/i.test(`${r.stdout}${r.stderr}`)
    ? ' On Debian/Ubuntu install the venv module (apt install python3-venv).' : '';
  return {
    message: `Topic Forest could not create a virtual environment with ${base.path} ` +
      `(Python ${base.version}): ${lastError(r)}.${hint} Then Retry, or set "topicForest.python".`,
    actions: ['retry', 'chooseInterpreter', 'showLog'],
  };
}

/** The faster installer, pinned (uv only installs; what it installs is pinned by the constraints). */
export const UV = 'uv==0.13.8';
// uv's lines that mark progress: "Resolved 64 packages in 860ms", "Downloading litellm (26.1MiB)"
// (one per large wheel), "Prepared 64 packages in 9s", "Installed 64 packages in 1s"
const UV_PROGRESS = /^(?:(?:Resolved|Prepared|Installed) \d+ packages?|Downloading \S+)/;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export class ManagedEnvironment {
  readonly dir: string;

  constructor(storage: string, readonly bundle: Bundle) {
    this.dir = path.join(storage, 'env');
  }

  get python(): string {
    return process.platform === 'win32'
      ? path.join(this.dir, 'Scripts', 'python.exe') : path.join(this.dir, 'bin', 'python');
  }

  private get markerPath(): string {
    return path.join(this.dir, 'topicforest-env.json');
  }

  private readMarker(): Marker | undefined {
    try {
      return JSON.parse(fs.readFileSync(this.markerPath, 'utf8')) as Marker;
    } catch {
      return undefined;
    }
  }

  async state(exec: Exec): Promise<EnvState> {
    if (!fs.existsSync(this.dir)) return 'missing';
    const marker = this.readMarker();
    if (!marker) return 'broken';
    const r = await exec(this.python, ['-c', 'import topicforest'], { timeoutMs: 30_000 });
    if (r.code !== 0) return 'broken';
    return marker.sha256 === this.bundle.sha256 ? 'ready' : 'outdated';
  }

  /** Makes the environment usable (as it is, updated, or built anew); returns its interpreter. */
  async ensure(host: SetupHost): Promise<string> {
    const first = await this.state(host.exec);
    host.log(`private environment ${this.dir}: ${first}`);
    if (first === 'ready') return this.python;
    await this.locked(host, async () => {
      const state = await this.state(host.exec); // another window may have finished it meanwhile
      if (state === 'ready') return;
      await host.withProgress(async (report) => {
        const started = Date.now();
        await (state === 'outdated' ? this.update(host, report) : this.build(host, report, state));
        const ready = `ready in ${String(Math.round((Date.now() - started) / 1000))} s: starting the server`;
        host.log(`private environment ${ready}`);
        report(ready, 100);
      });
    });
    return this.python;
  }

  private async build(host: SetupHost, report: Report, state: EnvState): Promise<void> {
    if (state === 'broken') host.log('the environment is incomplete or its interpreter is gone: rebuilding it');
    report(`looking for Python ${MIN_PYTHON_TEXT}+`, 5);
    const { found, tried } = await findBasePython(await host.candidates(), host.exec);
    for (const line of tried) host.log(`python candidate ${line}`);
    if (!found) throw new SetupError(describeNoPython(tried));
    fs.rmSync(this.dir, { recursive: true, force: true });
    report(`creating a virtual environment with Python ${found.version}`, 5);
    host.log(`creating ${this.dir} with ${found.path} (Python ${found.version})`);
    const venv = await host.exec(found.path, ['-m', 'venv', this.dir],
      { timeoutMs: 300_000, onLine: host.log });
    if (venv.code !== 0) throw new SetupError(venvProblem(found, venv));
    const step = `installing the server ${this.bundle.version} and its dependencies`;
    const install = ['-c', this.bundle.constraints, this.bundle.wheel];
    // uv fetches and installs the ~65 wheels many times faster than pip (docs/performance.md);
    // where it cannot be had or fails (an index only pip is configured for), pip does it all
    if (!await this.uv(host, report, step, install)) await this.pip(host, report, step, install);
    this.writeMarker(found.path, found.version);
  }

  private async update(host: SetupHost, report: Report): Promise<void> {
    const old = this.readMarker();
    // without the marker an interrupted update reads as "broken" and is rebuilt next time
    fs.rmSync(this.markerPath, { force: true });
    const step = `updating the server ${old?.version ?? ''} to ${this.bundle.version}`;
    host.log(step);
    await this.pip(host, report, step, ['-c', this.bundle.constraints, this.bundle.wheel]);
    // the same version number may carry new code: reinstall the wheel itself
    await this.pip(host, report, step, ['--force-reinstall', '--no-deps', this.bundle.wheel]);
    this.writeMarker(old?.base ?? '?', old?.baseVersion ?? '?');
  }

  /** Installs `args` with uv (itself pip-installed into the venv first); false if that failed. */
  private async uv(host: SetupHost, report: Report, step: string, args: string[]): Promise<boolean> {
    report(`${step}: fetching the installer`, 5);
    const quiet = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off'];
    const fetched = await host.exec(this.python, [...quiet, UV], { timeoutMs: 600_000, onLine: host.log });
    if (fetched.code !== 0) {
      host.log(`${UV} could not be installed (${lastError(fetched)}): installing with pip`);
      return false;
    }
    const argv = ['-m', 'uv', 'pip', 'install', '--python', this.python, ...args];
    host.log(`${this.python} ${argv.join(' ')}`);
    const r = await host.exec(this.python, argv, { timeoutMs: 30 * 60_000, onLine: (line) => {
      if (line.trim()) host.log(`uv: ${line}`);
      const progress = UV_PROGRESS.exec(line.trim());
      if (progress) report(`${step}: ${progress[0].toLowerCase()}`, 8);
    } });
    if (r.code === 0) return true;
    host.log(`uv failed (${lastError(r)}): installing with pip`);
    return false;
  }

  private async pip(host: SetupHost, report: Report, step: string, args: string[]): Promise<void> {
    report(step, 5);
    const argv = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input',
      '--progress-bar', 'off', ...args];
    host.log(`${this.python} ${argv.join(' ')}`);
    let ticks = 60; // about one per dependency: the bar moves while pip works
    const r = await host.exec(this.python, argv, { timeoutMs: 30 * 60_000, onLine: (line) => {
      if (line.trim()) host.log(`pip: ${line}`);
      const collecting = /^Collecting (\S+)/.exec(line);
      if (collecting) report(`${step}: ${collecting[1] ?? ''}`, ticks-- > 0 ? 1 : 0);
    } });
    if (r.code !== 0) throw new SetupError(pipProblem(r, this.dir));
  }

  private writeMarker(base: string, baseVersion: string): void {
    const marker: Marker = { sha256: this.bundle.sha256, version: this.bundle.version, base, baseVersion };
    fs.writeFileSync(this.markerPath, JSON.stringify(marker, null, 2));
  }

  /** One window sets up at a time: a lock directory holding its owner's pid. */
  private async locked(host: SetupHost, task: () => Promise<void>): Promise<void> {
    const lock = `${this.dir}.lock`;
    fs.mkdirSync(path.dirname(lock), { recursive: true });
    for (let waited = 0; ; waited += 1000) {
      try {
        fs.mkdirSync(lock);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (this.lockIsStale(lock) || waited > 30 * 60_000) {
        host.log(`removing a stale setup lock ${lock}`);
        fs.rmSync(lock, { recursive: true, force: true });
      } else {
        if (waited === 0) host.log('another window is setting up the environment: waiting for it');
        await sleep(1000);
      }
    }
    fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
    try {
      await task();
    } finally {
      fs.rmSync(lock, { recursive: true, force: true });
    }
  }

  private lockIsStale(lock: string): boolean {
    try {
      const owner = Number(fs.readFileSync(path.join(lock, 'pid'), 'utf8'));
      return !alive(owner);
    } catch {
      // no pid yet: its owner is between mkdir and writing it, unless that was long ago
      try {
        return Date.now() - fs.statSync(lock).mtimeMs > 10_000;
      } catch {
        return true;
      }
    }
  }
}
