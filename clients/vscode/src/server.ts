// Starts `<python> -m topicforest serve` (through a ServerProcess factory: vscode-languageclient in
// the extension, a fake in tests), restarts it, and re-attaches notification handlers each time.
import * as vscode from 'vscode';
import type { Connection, ServerState } from './connection';
import type {
  ClientNotifications, NotificationMethod, Notifications, ParamsOf, RequestMethod, ResultOf,
} from './protocol';
import {
  checkServerPackage, choosePython, describeStartProblem, installCommand, type PackageCheck,
  type PythonChoice,
} from './python';
import { serverSettings, type ServerSettings } from './settings';

const SECTION = 'topicForest';

export interface Launch {
  python: string;
  cwd: string | undefined;
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

export interface ServerDeps {
  create: (launch: Launch) => ServerProcess;
  checkPackage?: (python: string) => Promise<PackageCheck>;
  pythonExtension?: () => Promise<unknown>;
}

async function pythonExtensionApi(): Promise<unknown> {
  const ext = vscode.extensions.getExtension('ms-python.python');
  if (!ext) return undefined;
  return ext.isActive ? ext.exports : await ext.activate();
}

export class ServerManager implements Connection, vscode.Disposable {
  private client: ServerProcess | undefined;
  private handlers: { method: string; handler: (params: unknown) => void }[] = [];
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private current: ServerState = 'stopped';
  private starting: Promise<void> | undefined;
  private restarts: Promise<void> = Promise.resolve();
  readonly onDidChangeState = this.stateEmitter.event;

  constructor(private readonly log: vscode.LogOutputChannel, private readonly deps: ServerDeps) {}

  get state(): ServerState {
    return this.current;
  }

  private setState(state: ServerState): void {
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
    const python = await choosePython({
      setting: config.get<string>('python') ?? '',
      workspaceFolder: folder,
      pythonExtension: (this.deps.pythonExtension ?? pythonExtensionApi) as never,
    });
    this.log.info(`python: ${python.path} (${python.source})`);
    const check = await (this.deps.checkPackage ?? checkServerPackage)(python.path);
    const problem = describeStartProblem(python, check);
    if (problem) {
      this.log.error(problem.message);
      this.setState('failed');
      void this.offerFix(python, problem.message, problem.actions);
      return;
    }
    const client = this.deps.create({ python: python.path, cwd: folder,
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
      this.setState('failed');
      void this.offerFix(python, `Topic Forest: the server did not start (${String(error)}).`,
        ['showLog']);
    }
  }

  private async offerFix(python: PythonChoice, message: string,
    actions: ('install' | 'chooseInterpreter' | 'showLog')[]): Promise<void> {
    const labels = { install: 'Install in Terminal', chooseInterpreter: 'Set Python Path',
      showLog: 'Show Log' } as const;
    const picked = await vscode.window.showErrorMessage(message, ...actions.map((a) => labels[a]));
    if (picked === labels.install) {
      const terminal = vscode.window.createTerminal('Topic Forest: install');
      terminal.show();
      terminal.sendText(installCommand(python.path));
    } else if (picked === labels.chooseInterpreter) {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'topicForest.python');
    } else if (picked === labels.showLog) {
      this.log.show();
    }
  }

  /** Pushes the current settings; a changed `python` needs a restart instead. */
  async configurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!event.affectsConfiguration(SECTION)) return;
    if (event.affectsConfiguration(`${SECTION}.python`)) {
      this.log.info('topicForest.python changed: restarting the server');
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
    if (!client?.isRunning()) throw new Error('The Topic Forest server is not running.');
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
