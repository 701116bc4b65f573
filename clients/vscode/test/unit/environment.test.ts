// The private environment's life cycle against a fake Python (a recorded Exec) in a real temp dir.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import {
  type Bundle, findBundle, ManagedEnvironment, pipProblem, SetupError, type SetupHost, UV,
} from '../../src/environment';
import { type Exec, type ExecResult, execProgram, type PythonChoice } from '../../src/python';

const ok = (stdout = ''): ExecResult => ({ code: 0, stdout, stderr: '' });
const OFFLINE = [
  'Collecting litellm==1.102.4',
  "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(': " +
  'Failed to establish a new connection: [Errno -3] Temporary failure in name resolution\')',
  'ERROR: Could not find a version that satisfies the requirement litellm==1.102.4 (from versions: none)',
  'ERROR: No matching distribution found for litellm==1.102.4',
].join('\n');

// what uv 0.13.8 printed building the environment (docs/performance.md), shortened
const UV_OUTPUT = ['Using Python 3.12.1 environment at: /env', 'Resolved 64 packages in 860ms',
  'Downloading litellm (26.1MiB)', 'Prepared 64 packages in 9.12s', 'Installed 64 packages in 1.02s',
  ' + litellm==1.102.4'];

/**
 * Plays python3 (3.12.1), `-m venv` (makes bin/python) and the env's pip (marks the wheel
 * installed; `offline` makes it fail as pip does without a network). Records every call.
 */
class FakePython {
  calls: string[][] = [];
  offline = false;
  venvFails = false;
  pipDelayMs = 0;
  uvFails = false; // uv itself installs, then cannot reach the index (one pip is configured for)
  installed = new Set<string>(); // env dirs whose site-packages have topicforest

  exec: Exec = async (file, args, options) => {
    this.calls.push([file, ...args]);
    if (file === 'python3' && args[0] === '-c') return ok('3.12.1\n');
    if (file === 'python3' && args[1] === 'venv') {
      if (this.venvFails) {
        return { code: 1, stdout: 'Error: Command \'-Im ensurepip\' returned non-zero exit status 1.', stderr: '' };
      }
      const dir = args[2] ?? '';
      fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'bin', 'python'), '');
      return ok();
    }
    const envDir = path.dirname(path.dirname(file));
    if (!fs.existsSync(file)) return { code: null, stdout: '', stderr: 'ENOENT', missing: true };
    if (args[0] === '-c') return this.installed.has(envDir) ? ok() : { code: 1, stdout: '', stderr: 'No module named topicforest' };
    if (args[1] === 'uv') {
      if (this.uvFails) return { code: 2, stdout: '', stderr: 'error: Failed to fetch: `https://pypi.org/simple/litellm/`' };
      for (const line of UV_OUTPUT) options?.onLine?.(line);
      this.installed.add(envDir);
      return ok();
    }
    if (args[1] === 'pip') {
      await new Promise((r) => setTimeout(r, this.pipDelayMs));
      if (this.offline) {
        for (const line of OFFLINE.split('\n')) options?.onLine?.(line);
        return { code: 1, stdout: OFFLINE, stderr: '' };
      }
      for (const line of ['Collecting pygls==2.1.1', 'Collecting litellm==1.102.4']) options?.onLine?.(line);
      this.installed.add(envDir);
      return ok();
    }
    throw new Error(`unexpected call ${file} ${args.join(' ')}`);
  };

  count(what: 'venv' | 'pip' | 'uv'): number {
    return this.calls.filter((c) => c[2] === what).length;
  }
}

describe('the private environment', () => {
  let storage: string;
  let fake: FakePython;
  let logged: string[];
  let steps: string[];
  let bundle: Bundle;

  const host = (): SetupHost => ({
    exec: fake.exec,
    log: (line) => logged.push(line),
    candidates: () => Promise.resolve<PythonChoice[]>([{ path: 'python3', source: 'path' }]),
    withProgress: (task) => task((step) => steps.push(step)),
  });

  beforeEach(() => {
    storage = fs.mkdtempSync(path.join(os.tmpdir(), 'tf-env-'));
    fake = new FakePython();
    logged = [];
    steps = [];
    bundle = { wheel: '/ext/bundled/topicforest-0.1.0-py3-none-any.whl',
      constraints: '/ext/bundled/constraints.txt', version: '0.1.0', sha256: 'aaa' };
  });
  afterEach(() => fs.rmSync(storage, { recursive: true, force: true }));

  it('is built once with progress, then re-used as it is', async () => {
    const env = new ManagedEnvironment(storage, bundle);
    expect(await env.ensure(host())).toBe(path.join(storage, 'env', 'bin', 'python'));
    expect(fake.calls).toContainEqual(['python3', '-m', 'venv', path.join(storage, 'env')]);
    expect(fake.calls.slice(-2)).toEqual([
      [env.python, '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', UV],
      [env.python, '-m', 'uv', 'pip', 'install', '--python', env.python, '-c', bundle.constraints, bundle.wheel]]);
    const step = 'installing the server 0.1.0 and its dependencies';
    expect(steps).toEqual(['looking for Python 3.11+', 'creating a virtual environment with Python 3.12.1',
      `${step}: fetching the installer`, `${step}: resolved 64 packages`, `${step}: downloading litellm`,
      `${step}: prepared 64 packages`, `${step}: installed 64 packages`,
      expect.stringMatching(/^ready in \d+ s: starting the server$/)]);
    expect(logged).toContain('uv: Installed 64 packages in 1.02s');

    steps = [];
    fake.calls = [];
    expect(await new ManagedEnvironment(storage, bundle).ensure(host())).toBe(env.python);
    expect(fake.calls).toEqual([[env.python, '-c', 'import topicforest']]);
    expect(steps).toEqual([]);
  });

  it('installs with pip when uv fails, saying why in the log', async () => {
    fake.uvFails = true;
    const env = new ManagedEnvironment(storage, bundle);
    expect(await env.ensure(host())).toBe(env.python);
    expect(fake.calls.slice(-1)).toEqual([[env.python, '-m', 'pip', 'install', '--disable-pip-version-check',
      '--no-input', '--progress-bar', 'off', '-c', bundle.constraints, bundle.wheel]]);
    expect(logged).toContain('uv failed (error: Failed to fetch: `https://pypi.org/simple/litellm/`): installing with pip');
    expect(steps.at(-2)).toBe('installing the server 0.1.0 and its dependencies: litellm==1.102.4');
    expect(await env.state(fake.exec)).toBe('ready');
  });

  it('installs a new bundled wheel into the existing environment on the next start', async () => {
    await new ManagedEnvironment(storage, bundle).ensure(host());
    fake.calls = [];
    const next = { ...bundle, version: '0.2.0', sha256: 'bbb' };
    const env = new ManagedEnvironment(storage, next);
    expect(await env.state(fake.exec)).toBe('outdated');
    await env.ensure(host());
    expect(fake.count('venv')).toBe(0);
    expect(fake.calls.filter((c) => c[2] === 'pip').map((c) => c.slice(8))).toEqual([
      ['-c', next.constraints, next.wheel], ['--force-reinstall', '--no-deps', next.wheel]]);
    expect(steps).toContain('updating the server 0.1.0 to 0.2.0');
    expect(await env.state(fake.exec)).toBe('ready');
  });

  it('rebuilds a half-made environment (an install that never finished)', async () => {
    const env = new ManagedEnvironment(storage, bundle);
    fs.mkdirSync(path.join(env.dir, 'bin'), { recursive: true });
    fs.writeFileSync(path.join(env.dir, 'bin', 'python'), '');
    fs.writeFileSync(path.join(env.dir, 'half-written'), '');
    expect(await env.state(fake.exec)).toBe('broken');
    await env.ensure(host());
    expect(fake.count('venv')).toBe(1);
    expect(fs.existsSync(path.join(env.dir, 'half-written'))).toBe(false);
    expect(await env.state(fake.exec)).toBe('ready');
  });

  it('rebuilds an environment whose interpreter was deleted', async () => {
    const env = new ManagedEnvironment(storage, bundle);
    await env.ensure(host());
    fs.rmSync(env.python);
    expect(await env.state(fake.exec)).toBe('broken');
    await env.ensure(host());
    expect(fake.count('venv')).toBe(2);
    expect(logged).toContain('the environment is incomplete or its interpreter is gone: rebuilding it');
    expect(await env.state(fake.exec)).toBe('ready');
  });

  it('says "no network?" with Retry when pip cannot reach the index, and Retry starts over', async () => {
    fake.offline = true;
    const env = new ManagedEnvironment(storage, bundle);
    const error = await env.ensure(host()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SetupError);
    const { problem } = error as SetupError;
    expect(problem.message).toContain("could not download its server's dependencies");
    expect(problem.message).toContain('(no network?)');
    expect(problem.message).toContain('ERROR: No matching distribution found for litellm==1.102.4');
    expect(problem.actions).toEqual(['retry', 'showLog']);
    expect(await env.state(fake.exec)).toBe('broken');
    fake.offline = false;
    await env.ensure(host());
    expect(await env.state(fake.exec)).toBe('ready');
  });

  it("reads real pip's answer from an unreachable index as no network", async () => {
    const r = await execProgram('python3', ['-m', 'pip', 'download', '--isolated', '--no-deps',
      '--retries', '0', '--timeout', '2', '--index-url', 'http://127.0.0.1:9/simple', '-d', storage,
      'litellm==1.102.4'], { timeoutMs: 60_000 });
    expect(r.code).not.toBe(0);
    const problem = pipProblem(r, '/env');
    expect(problem.message).toContain('(no network?)');
    expect(problem.actions).toEqual(['retry', 'showLog']);
    // a failure that is not about the index is reported as it is, with Retry to rebuild
    const other = pipProblem({ code: 1, stdout: '', stderr: 'ERROR: No space left on device' }, '/env');
    expect(other.message).toBe('Topic Forest could not install its server into /env: ERROR: No space ' +
      'left on device. See the log; Retry rebuilds the environment.');
  });

  it('names the fix when the interpreter cannot make a venv', async () => {
    fake.venvFails = true;
    const error = await new ManagedEnvironment(storage, bundle).ensure(host()).catch((e: unknown) => e);
    expect((error as SetupError).problem.message).toContain(
      'could not create a virtual environment with python3 (Python 3.12.1)');
    expect((error as SetupError).problem.message).toContain('apt install python3-venv');
  });

  it('fails with what it tried when no Python fits', async () => {
    const none: SetupHost = { ...host(), candidates: () => Promise.resolve([{ path: '/no/python', source: 'path' }]) };
    const error = await new ManagedEnvironment(storage, bundle).ensure(none).catch((e: unknown) => e);
    expect((error as SetupError).problem.message).toContain('Tried: /no/python: not found');
    expect(fs.existsSync(path.join(storage, 'env'))).toBe(false);
  });

  it('two windows starting together build it once', async () => {
    fake.pipDelayMs = 200;
    const [a, b] = await Promise.all([new ManagedEnvironment(storage, bundle).ensure(host()),
      new ManagedEnvironment(storage, bundle).ensure(host())]);
    expect(a).toBe(b);
    expect(fake.count('venv')).toBe(1);
    expect(fake.count('pip')).toBe(1);
    expect(fs.existsSync(path.join(storage, 'env.lock'))).toBe(false);
  });

  it('finds the wheel and its pins inside the extension', () => {
    const ext = fs.mkdtempSync(path.join(os.tmpdir(), 'tf-ext-'));
    try {
      expect(findBundle(ext)).toBeUndefined();
      fs.mkdirSync(path.join(ext, 'bundled'));
      fs.writeFileSync(path.join(ext, 'bundled', 'topicforest-0.2.0-py3-none-any.whl'), 'wheel bytes');
      expect(findBundle(ext)).toBeUndefined(); // no constraints: not a usable bundle
      fs.writeFileSync(path.join(ext, 'bundled', 'constraints.txt'), 'pygls==2.1.1\n');
      expect(findBundle(ext)).toEqual({ wheel: path.join(ext, 'bundled', 'topicforest-0.2.0-py3-none-any.whl'),
        constraints: path.join(ext, 'bundled', 'constraints.txt'), version: '0.2.0',
        sha256: createHash('sha256').update('wheel bytes').digest('hex') });
    } finally {
      fs.rmSync(ext, { recursive: true, force: true });
    }
  });
});
