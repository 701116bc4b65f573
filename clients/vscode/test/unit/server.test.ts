import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import { mocked } from 'jest-mock';
import * as vscode from 'vscode';
import type { ServerState } from '../../src/connection';
import { SetupError, type SetupHost } from '../../src/environment';
import { neutralDirectory } from '../../src/python';
import { type Environment, type Launch, openPythonSetting, type ServerProcess, ServerManager } from '../../src/server';
import { eventually } from '../eventually';
import { clearAllMocks, configuration, env, progressReports, terminals, Uri, workspace } from '../mocks/vscode';

class FakeProcess implements ServerProcess {
  running = false;
  stopped = false;
  requests: { method: string; params: unknown }[] = [];
  notifications: { method: string; params: unknown }[] = [];
  handlers = new Map<string, (p: unknown) => void>();
  private runningListeners: ((r: boolean) => void)[] = [];
  constructor(readonly launch: Launch) {}
  start(): Promise<void> { this.running = true; return Promise.resolve(); }
  stop(): Promise<void> { this.running = false; this.stopped = true; return Promise.resolve(); }
  isRunning(): boolean { return this.running; }
  sendRequest(method: string, params: unknown): Promise<unknown> {
    this.requests.push({ method, params });
    return Promise.resolve({ ok: method });
  }
  sendNotification(method: string, params: unknown): Promise<void> {
    this.notifications.push({ method, params });
    return Promise.resolve();
  }
  onNotification(method: string, handler: (p: unknown) => void) {
    this.handlers.set(method, handler);
    return { dispose: () => this.handlers.delete(method) };
  }
  onDidChangeRunning(listener: (r: boolean) => void) {
    this.runningListeners.push(listener);
    return { dispose: () => undefined };
  }
  crash(): void { this.running = false; for (const l of this.runningListeners) l(false); }
}

const logged: string[] = [];
const log = { info: (l: string) => logged.push(l), warn: (l: string) => logged.push(`WARN ${l}`),
  error: (l: string) => logged.push(`ERROR ${l}`), show: () => undefined } as unknown as vscode.LogOutputChannel;

const BUNDLE = { wheel: '/ext/bundled/topicforest-0.1.0-py3-none-any.whl',
  constraints: '/ext/bundled/constraints.txt', version: '0.1.0' };

/** The private environment: builds (with one progress step) or fails as told. */
class FakeEnvironment implements Environment {
  readonly bundle = BUNDLE;
  ensured = 0;
  failWith: SetupError | undefined;
  async ensure(host: SetupHost): Promise<string> {
    this.ensured++;
    if (this.failWith) throw this.failWith;
    await host.withProgress(async (report) => { report('installing the server 0.1.0', 50); });
    return '/storage/env/bin/python';
  }
}

function setup(check: 'ok' | 'missing-package' = 'ok', environment = new FakeEnvironment()) {
  const processes: FakeProcess[] = [];
  const states: ServerState[] = [];
  const manager = new ServerManager(log, {
    create: (launch) => { const p = new FakeProcess(launch); processes.push(p); return p; },
    checkPackage: () => Promise.resolve(check === 'ok' ? { check, version: '0.1.0' } : { check }),
    pythonExtension: () => Promise.resolve(undefined),
    environment,
    extensionVersion: '0.1.0',
  });
  manager.onDidChangeState((s) => states.push(s));
  return { manager, processes, states };
}

const change = (...keys: string[]) => ({
  affectsConfiguration: (section: string) => keys.some((k) => k === section || k.startsWith(`${section}.`)),
});

describe('server manager', () => {
  beforeEach(() => {
    clearAllMocks();
    configuration.clear();
    terminals.length = 0;
    logged.length = 0;
    progressReports.length = 0;
    env.remoteName = undefined;
    workspace.isTrusted = true;
    workspace.workspaceFolders = [{ uri: Uri.file('/ws') }];
    configuration.set('topicForest.python', '/venv/bin/python');
    configuration.set('topicForest.chatModel', 'openai/stub');
    configuration.set('topicForest.historyBudget', 1024);
  });

  it('launches the configured python with the settings, then serves requests', async () => {
    const { manager, processes, states } = setup();
    const deltas: unknown[] = [];
    manager.onNotification('topicForest/chatDelta', (d) => deltas.push(d)); // before start
    await manager.start();
    expect(states).toEqual(['starting', 'running']);
    expect(processes).toHaveLength(1);
    const [p] = processes as [FakeProcess];
    expect(p.launch).toEqual({ python: '/venv/bin/python', cwd: neutralDirectory(), initializationOptions: {
      chatModel: 'openai/stub', models: [], summaryModels: null, apiBase: null, historyBudget: 1024,
      attachmentBudget: 4096, mergeThreshold: 0.15, maxTopics: 16, storePath: null,
      storeUrl: null, user: null } });
    expect(await manager.request('topicForest/listTopics', {})).toEqual({ ok: 'topicForest/listTopics' });
    p.handlers.get('topicForest/chatDelta')?.({ index: 0 });
    expect(deltas).toEqual([{ index: 0 }]);
  });

  it('without topicForest.python it runs the private environment, with progress and both versions logged', async () => {
    configuration.delete('topicForest.python');
    const environment = new FakeEnvironment();
    const { manager, processes, states } = setup('ok', environment);
    await manager.start();
    expect(environment.ensured).toBe(1);
    expect(processes[0]?.launch.python).toBe('/storage/env/bin/python');
    expect(states).toEqual(['starting', 'running']);
    expect(progressReports).toEqual([{ title: 'Topic Forest: setting up the server',
      message: 'installing the server 0.1.0', increment: 50 }]);
    expect(logged).toEqual(expect.arrayContaining(['Topic Forest extension 0.1.0',
      'python: /storage/env/bin/python (bundled)', 'server: topicforest 0.1.0']));
  });

  it("in Restricted Mode an interpreter inside the workspace is refused, never run", async () => {
    workspace.isTrusted = false;
    configuration.set('topicForest.python', '.venv/bin/python'); // a user setting, relative
    let checked = 0;
    const processes: FakeProcess[] = [];
    const manager = new ServerManager(log, {
      create: (launch) => { const p = new FakeProcess(launch); processes.push(p); return p; },
      checkPackage: () => { checked += 1; return Promise.resolve({ check: 'ok', version: '0.1.0' }); },
      extensionVersion: '0.1.0',
    });
    await manager.start();
    expect(manager.state).toBe('failed');
    expect(manager.failure).toMatch(/\/ws\/\.venv\/bin\/python is inside this workspace, which is not trusted/);
    expect(checked).toBe(0);
    expect(processes).toHaveLength(0);
  });

  it('a failed setup shows its message with Retry, and Retry starts over', async () => {
    configuration.delete('topicForest.python');
    const environment = new FakeEnvironment();
    environment.failWith = new SetupError({ message: 'could not download (no network?)',
      actions: ['retry', 'showLog'] });
    let click!: (label: string) => void;
    mocked(vscode.window.showErrorMessage).mockReturnValueOnce(new Promise<string>((r) => (click = r)) as never);
    const { manager, processes, states } = setup('ok', environment);
    await manager.start();
    expect(states).toEqual(['starting', 'failed']);
    expect(processes).toEqual([]);
    expect(mocked(vscode.window.showErrorMessage).mock.calls[0]).toEqual(
      ['could not download (no network?)', 'Retry', 'Show Log']);
    environment.failWith = undefined; // the network is back
    click('Retry');
    await eventually(() => expect(manager.state).toBe('running'));
    expect(environment.ensured).toBe(2);
    expect(processes).toHaveLength(1);
  });

  it('Set Python Path opens the tab where the setting can be edited', async () => {
    const opened = async () => {
      mocked(vscode.commands.executeCommand).mockClear();
      await openPythonSetting();
      return mocked(vscode.commands.executeCommand).mock.calls[0];
    };
    const query = { query: 'topicForest.python' };
    env.remoteName = 'ssh-remote';
    expect(await opened()).toEqual(['workbench.action.openRemoteSettings', query]);
    env.remoteName = undefined;
    expect(await opened()).toEqual(['workbench.action.openWorkspaceSettings', query]);
    workspace.isTrusted = false; // an untrusted workspace ignores its own topicForest.python
    expect(await opened()).toEqual(['workbench.action.openSettings', query]);
  });

  it('a missing package fails with the install command and an Install button that runs it', async () => {
    mocked(vscode.window.showErrorMessage).mockResolvedValueOnce('Install in Terminal');
    const { manager, processes, states } = setup('missing-package');
    await manager.start();
    expect(processes).toEqual([]);
    expect(states.at(-1)).toBe('failed');
    const [message, ...buttons] = mocked(vscode.window.showErrorMessage).mock.calls[0] as unknown as string[];
    expect(message).toContain('"topicforest" is not installed for /venv/bin/python');
    expect(buttons).toEqual(['Install in Terminal', 'Set Python Path', 'Show Log']);
    await new Promise((r) => setTimeout(r, 0));
    expect(message).toContain(`install -c ${BUNDLE.constraints} ${BUNDLE.wheel}`);
    expect(terminals[0]?.sent).toEqual([`/venv/bin/python -m pip install -c ${BUNDLE.constraints} ${BUNDLE.wheel}`]);
    await expect(manager.request('topicForest/listTopics', {})).rejects.toThrow('not running');
  });

  it('a changed python restarts with the new interpreter and keeps notification handlers', async () => {
    const { manager, processes } = setup();
    const changed: unknown[] = [];
    await manager.start();
    manager.onNotification('topicForest/topicsChanged', (p) => changed.push(p)); // after start
    configuration.set('topicForest.python', '/other/python');
    await manager.configurationChanged(change('topicForest.python'));
    expect(processes).toHaveLength(2);
    expect(processes[0]?.stopped).toBe(true);
    expect(processes[1]?.launch.python).toBe('/other/python');
    processes[1]?.handlers.get('topicForest/topicsChanged')?.({ reason: 'dropped' });
    expect(changed).toEqual([{ reason: 'dropped' }]);
    expect(manager.state).toBe('running');
  });

  it('a changed team memory setting restarts the server with it; other changes are pushed', async () => {
    const { manager, processes } = setup();
    await manager.start();
    configuration.set('topicForest.maxTopics', 5);
    await manager.configurationChanged(change('topicForest.maxTopics'));
    expect(processes).toHaveLength(1);
    expect(processes[0]?.notifications.map((n) => n.method)).toEqual(['workspace/didChangeConfiguration']);
    for (const [key, value] of [['storeUrl', 'postgresql://ann@db:5432/tf'], ['user', 'ann'],
      ['storePath', '/tmp/tf']] as const) {
      configuration.set(`topicForest.${key}`, value);
      await manager.configurationChanged(change(`topicForest.${key}`));
    }
    expect(processes).toHaveLength(4);
    expect(processes.slice(0, 3).every((p) => p.stopped)).toBe(true);
    expect(processes[3]?.launch.initializationOptions).toMatchObject({
      storeUrl: 'postgresql://ann@db:5432/tf', user: 'ann', storePath: '/tmp/tf', maxTopics: 5 });
    expect(manager.state).toBe('running');
  });

  it('a change while the previous start is still checking the interpreter still wins', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const processes: FakeProcess[] = [];
    const manager = new ServerManager(log, {
      create: (launch) => { const p = new FakeProcess(launch); processes.push(p); return p; },
      // the first check (bare venv) is slow; later ones answer at once
      checkPackage: async (python) => {
        if (python === '/bare/python') { await gate; return { check: 'missing-package' }; }
        return { check: 'ok', version: '0.1.0' };
      },
      pythonExtension: () => Promise.resolve(undefined),
    });
    await manager.start();
    configuration.set('topicForest.python', '/bare/python');
    const first = manager.configurationChanged(change('topicForest.python'));
    await new Promise((r) => setTimeout(r, 0));
    configuration.set('topicForest.python', '/good/python');
    const second = manager.configurationChanged(change('topicForest.python'));
    release();
    await Promise.all([first, second]);
    expect(processes.map((p) => p.launch.python)).toEqual(['/venv/bin/python', '/good/python']);
    expect(manager.state).toBe('running');
  });

  it('other setting changes are pushed as didChangeConfiguration without a restart', async () => {
    const { manager, processes } = setup();
    await manager.start();
    configuration.set('topicForest.apiBase', 'http://127.0.0.1:9/v1');
    await manager.configurationChanged(change('topicForest.apiBase'));
    await manager.configurationChanged(change('editor.fontSize'));
    expect(processes).toHaveLength(1);
    expect(processes[0]?.notifications).toEqual([{ method: 'workspace/didChangeConfiguration',
      params: { settings: { topicForest: expect.objectContaining({ apiBase: 'http://127.0.0.1:9/v1',
        chatModel: 'openai/stub' }) } } }]);
  });

  it('reports a crashed server as stopped and only notifies a running one', async () => {
    const { manager, processes } = setup();
    await manager.start();
    manager.notify('topicForest/activeFileChanged', { uri: 'file:///ws/a.py' });
    processes[0]?.crash();
    expect(manager.state).toBe('stopped');
    manager.notify('topicForest/activeFileChanged', { uri: null });
    expect(processes[0]?.notifications).toEqual([{ method: 'topicForest/activeFileChanged',
      params: { uri: 'file:///ws/a.py' } }]);
  });
});
