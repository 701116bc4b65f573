// Starts `<python> -m topicforest serve` (through a ServerProcess factory: vscode-languageclient in
// the extension, a fake in tests), restarts it, and re-attaches notification handlers each time.
// The interpreter is `topicForest.python` when set, else the private environment (environment.ts).
import * as vscode from 'vscode';
import type { Connection, ServerState } from './connection';
import { SetupError, type SetupHost } from './environment';
import { ServerNotRunningError } from './errors';
import type {
  ClientNotifications, NotificationMethod, Notifications, ParamsOf, RequestMethod, ResultOf,
} from './protocol';
import {
  baseCandidates, type BundleFiles, checkServerPackage, describeStartProblem, execProgram,
  expandSetting, type FixAction, installCommand, isInside, neutralDirectory, type PackageStatus,
  type PythonChoice, type PythonExtensionLookup, type StartProblem,
} from './python';
import { MEMORY_SETTING_KEYS, serverSettings, type ServerSettings } from './settings';

const SECTION = 'topicForest';

export interface Launch {
  python: string;
  /** never the workspace folder (python.ts: ISOLATED) */
  cwd: string;
  initializationOptions: ServerSettings;
}

/** A running server as the manager sees it (LanguageClient in practice). */
export interface ServerProcess {
  start(): Promise<void>;
  stop(timeoutMs: number): Promise<void>;
  isRunning(): boolean;
  sendRequest(method: string, params: unknown, token?: vscode.CancellationToken): Promise<unknown>;
  sendNotification(method: string, params: unknown): Promise<void>;
  onNotification(method: string, handler: (params: unknown) => void): { dispose(): void };
  /** true when the process is up and initialized, false when it went away. */
  onDidChangeRunning(listener: (running: boolean) => void): { dispose(): void };
}

/** The private environment as the manager sees it (ManagedEnvironment in practice). */
export interface Environment {
  readonly bundle: BundleFiles;
  ensure(host: SetupHost): Promise<string>;
}

export interface ServerDeps {
  create: (launch: Launch) => ServerProcess;
  /** undefined when this build carries no server wheel */
  environment?: Environment;
  extensionVersion?: string;
  checkPackage?: (python: string) => Promise<PackageStatus>;
  pythonExtension?: () => Promise<unknown>;
  exec?: SetupHost['exec'];
}

async function pythonExtensionApi(): Promise<unknown> {
  const ext = vscode.extensions.getExtension('ms-python.python');
  if (!ext) return undefined;
  return ext.isActive ? ext.exports : await ext.activate();
}

/**
 * Opens `topicForest.python` where it can be edited: the Remote tab in a remote window (the User
 * tab shows no machine-overridable setting there), the Workspace tab in a trusted folder (an
 * untrusted one ignores it), else User settings.
 */
export async function openPythonSetting(): Promise<void> {
  const command = vscode.env.remoteName ? 'workbench.action.openRemoteSettings'
    : vscode.workspace.workspaceFolders?.length && vscode.workspace.isTrusted
      ? 'workbench.action.openWorkspaceSettings' : 'workbench.action.openSettings';
  await vscode.commands.executeCommand(command, { query: `${SECTION}.python` });
}

export class ServerManager implements Connection, vscode.Disposable {
  private client: ServerProcess | undefined;
  private handlers: { method: string; handler: (params: unknown) => void }[] = [];
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private current: ServerState = 'stopped';
  private lastFailure: string | undefined;
  private starting: Promise<void> | undefined;
  private restarts: Promise<void> = Promise.resolve();
  readonly onDidChangeState = this.stateEmitter.event;

  constructor(private readonly log: vscode.LogOutputChannel, private readonly deps: ServerDeps) {}

  get state(): ServerState {
    return this.current;
  }

  /** Why the last start failed, while the server is not running. */
  get failure(): string | undefined {
    return this.current === 'running' ? undefined : this.lastFailure;
  }

  private setState(state: ServerState): void {
    if (state === 'starting') this.lastFailure = undefined;
    this.current = state;
    this.stateEmitter.fire(state);
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** Restarts run one after another, each after any start in flight, so the last one wins. */
  restart(): Promise<void> {
    this.restarts = this.restarts.catch(() => undefined).then(async () => {
      if (this.starting) await this.starting;
      await this.stop();
      await this.start();
    });
    return this.restarts;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.log.warn(`stopping the server: ${String(error)}`);
      }
    }
    this.setState('stopped');
  }

  private async doStart(): Promise<void> {
    this.setState('starting');
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const config = vscode.workspace.getConfiguration(SECTION);
    const remote = vscode.env.remoteName ? ` (remote: ${vscode.env.remoteName})` : '';
    this.log.info(`Topic Forest extension ${this.deps.extensionVersion ?? '?'}${remote}`);
    const python = await this.choosePython(config.get<string>('python') ?? '', folder);
    if ('message' in python) return this.fail(python);
    const client = this.deps.create({ python: python.path, cwd: neutralDirectory(),
      initializationOptions: serverSettings(config) });
    client.onDidChangeRunning((running) => {
      if (this.client === client) this.setState(running ? 'running' : 'stopped');
    });
    for (const { method, handler } of this.handlers) client.onNotification(method, handler);
    this.client = client;
    try {
      await client.start();
      this.log.info('server running');
      this.setState('running');
    } catch (error) {
      this.log.error(`server did not start: ${String(error)}`);
      this.fail({ message: `Topic Forest: the server did not start (${String(error)}).`,
        actions: ['showLog'] });
    }
  }

  /** The interpreter to run, checked; or what stops us, with the fixes to offer. */
  private async choosePython(setting: string, folder: string | undefined):
    Promise<PythonChoice | StartProblem> {
    const env = this.deps.environment;
    let python: PythonChoice;
    if (setting.trim() !== '') {
      python = { path: expandSetting(setting, folder), source: 'setting' };
    } else if (env) {
      try {
        python = { path: await env.ensure(this.setupHost()), source: 'bundled' };
      } catch (error) {
        if (error instanceof SetupError) return error.problem;
        throw error;
      }
    } else {
      return { message: 'Topic Forest: this build of the extension carries no server; set ' +
        '"topicForest.python" to an interpreter that has "topicforest" installed.',
      actions: ['chooseInterpreter', 'showLog'] };
    }
    if (!vscode.workspace.isTrusted && isInside(python.path, folder)) {
      return { message: `Topic Forest: the interpreter ${python.path} is inside this workspace, ` +
        'which is not trusted (Restricted Mode): running it would run the workspace\'s code. ' +
        'Trust the workspace, or set "topicForest.python" to an interpreter outside it.',
      actions: ['chooseInterpreter', 'showLog'] };
    }
    this.log.info(`python: ${python.path} (${python.source})`);
    const status = await (this.deps.checkPackage ?? checkServerPackage)(python.path);
    const problem = describeStartProblem(python, status.check, env?.bundle);
    if (problem) return problem;
    this.log.info(`server: topicforest ${status.version ?? '?'}`);
    if (env && status.version !== env.bundle.version) {
      const server = status.version ?? '?';
      this.log.warn(`the server is topicforest ${server}; this extension carries ${env.bundle.version}`);
    }
    return python;
  }

  private setupHost(): SetupHost {
    return {
      exec: this.deps.exec ?? execProgram,
      log: (line) => this.log.info(line),
      candidates: () => baseCandidates(
        (this.deps.pythonExtension ?? pythonExtensionApi) as PythonExtensionLookup,
        vscode.workspace.isTrusted ? undefined : vscode.workspace.workspaceFolders?.[0]?.uri.fsPath),
      withProgress: (task) => Promise.resolve(vscode.window.withProgress({
        location: vscode.ProgressLocation.Notification,
        title: 'Topic Forest: setting up the server',
      }, (progress) => task((message, increment) => progress.report({ message, increment })))),
    };
  }

  private fail(problem: StartProblem): void {
    this.log.error(problem.message);
    this.lastFailure = problem.message;
    this.setState('failed');
    void this.offerFix(problem);
  }

  private async offerFix(problem: StartProblem): Promise<void> {
    const labels: Record<FixAction, string> = { install: 'Install in Terminal',
      chooseInterpreter: 'Set Python Path', showLog: 'Show Log', retry: 'Retry' };
    const picked = await vscode.window.showErrorMessage(problem.message,
      ...problem.actions.map((a) => labels[a]));
    const bundle = this.deps.environment?.bundle;
    if (picked === labels.install && bundle) {
      const python = expandSetting(vscode.workspace.getConfiguration(SECTION).get<string>('python') ?? '',
        vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
      const terminal = vscode.window.createTerminal('Topic Forest: install');
      terminal.show();
      terminal.sendText(installCommand(python, bundle));
    } else if (picked === labels.chooseInterpreter) {
      await openPythonSetting();
    } else if (picked === labels.showLog) {
      this.log.show();
    } else if (picked === labels.retry) {
      await this.restart();
    }
  }

  /** Pushes the current settings; a changed `python`, or a setting that chooses which memory
   * a workspace opens (`storePath`, `storeUrl`, `user`), needs a restart instead. */
  async configurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!event.affectsConfiguration(SECTION)) return;
    const restartFor = ['python', ...MEMORY_SETTING_KEYS].find((key) =>
      event.affectsConfiguration(`${SECTION}.${key}`));
    if (restartFor) {
      this.log.info(`topicForest.${restartFor} changed: restarting the server`);
      await this.restart();
      return;
    }
    const settings = serverSettings(vscode.workspace.getConfiguration(SECTION));
    if (this.client?.isRunning()) {
      await this.client.sendNotification('workspace/didChangeConfiguration',
        { settings: { [SECTION]: settings } });
    }
  }

  async request<M extends RequestMethod>(
    method: M, params: ParamsOf<M>, token?: vscode.CancellationToken): Promise<ResultOf<M>> {
    if (this.starting) await this.starting;
    const client = this.client;
    if (!client?.isRunning()) throw new ServerNotRunningError();
    return await client.sendRequest(method, params, token) as ResultOf<M>;
  }

  notify<N extends keyof ClientNotifications>(method: N, params: ClientNotifications[N]): void {
    if (this.client?.isRunning()) {
      this.client.sendNotification(method, params).catch((error: unknown) =>
        this.log.warn(`${method}: ${String(error)}`));
    }
  }

  onNotification<N extends NotificationMethod>(
    method: N, handler: (params: Notifications[N]) => void): vscode.Disposable {
    const entry = { method, handler: handler as (params: unknown) => void };
    this.handlers.push(entry);
    const live = this.client?.onNotification(method, entry.handler);
    return new vscode.Disposable(() => {
      this.handlers = this.handlers.filter((h) => h !== entry);
      live?.dispose();
    });
  }

  dispose(): void {
    void this.stop();
    this.stateEmitter.dispose();
  }
}
