// The chat WebviewView: forwards messages to topicForest/chat, streams chatDelta into the page,
// cancels on Stop, shows errors inline with what to do.
import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';
import { chatHtml, makeNonce } from './chatHtml';
import type { FromWebview, ToWebview } from './chatMessages';
import { ERROR_ACTION_COMMANDS } from './commands';
import type { Connection } from './connection';
import { describeError, isCancellation } from './errors';
import type { ChatDelta } from './protocol';

const THREAD_KEY = 'topicForest.threadId';
const HISTORY_LIMIT = 200;

/** The parts of vscode.Webview the provider uses (lets tests drive it without a real view). */
export interface ChatSink {
  postMessage(message: ToWebview): Thenable<boolean>;
}

/** Workspace-relative path of the active editor's file, if any. */
export function activeFilePath(): string | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  if (!doc || doc.uri.scheme !== 'file') return undefined;
  return vscode.workspace.asRelativePath(doc.uri, false);
}

export class ChatController implements vscode.Disposable {
  private sink: ChatSink | undefined;
  private turn: { turnId: string; cancel: vscode.CancellationTokenSource } | undefined;
  private turnsStarted = 0;
  private historyAfterTurn = false; // a history load met a turn: load it again once the turn ends
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly connection: Connection,
    private readonly state: vscode.Memento,
    private readonly afterTurn: () => void = () => undefined,
  ) {
    this.subscriptions.push(connection.onNotification('topicForest/chatDelta', (d) => this.onDelta(d)));
  }

  get threadId(): string {
    let id = this.state.get<string>(THREAD_KEY);
    if (!id) {
      id = randomUUID();
      void this.state.update(THREAD_KEY, id);
    }
    return id;
  }

  get busy(): boolean {
    return this.turn !== undefined;
  }

  attach(sink: ChatSink | undefined): void {
    this.sink = sink;
  }

  private post(message: ToWebview): void {
    void this.sink?.postMessage(message);
  }

  async handle(message: FromWebview): Promise<void> {
    switch (message.type) {
      case 'ready':
        return this.loadHistory(true);
      case 'send':
        return this.send(message.text);
      case 'stop':
        return this.stop();
      case 'newThread':
        return this.newThread();
      case 'copy':
        await vscode.env.clipboard.writeText(message.text);
        vscode.window.setStatusBarMessage('Copied to clipboard', 2000);
        return;
      case 'openLink':
        if (/^(https?|mailto):/i.test(message.href)) {
          await vscode.env.openExternal(vscode.Uri.parse(message.href));
        }
        return;
      case 'action':
        if (message.id in ERROR_ACTION_COMMANDS) {
          await vscode.commands.executeCommand(ERROR_ACTION_COMMANDS[message.id]);
        }
        return;
    }
  }

  /** After a (re)start the view may show an old error or nothing: reload the thread. */
  serverStarted(): void {
    if (this.sink) void this.loadHistory();
  }

  /** Show the thread as stored. A history replaces the whole view, so one that would land
   *  while a turn streams (or one asked for before the turn began, and answered after it) would
   *  wipe the turn: it is loaded again once the turn has ended instead. A `freshPage` (the view
   *  was just opened, mid-turn) shows nothing to wipe: it gets the history now and after. */
  async loadHistory(freshPage = false): Promise<void> {
    if (this.turn) {
      this.historyAfterTurn = true;
      if (!freshPage) return;
    }
    const threadId = this.threadId;
    const turnsStarted = this.turnsStarted;
    let message: ToWebview;
    let failure: unknown;
    try {
      const { messages } = await this.connection.request('topicForest/threadHistory',
        { threadId, limit: HISTORY_LIMIT });
      message = { type: 'history', threadId, messages };
    } catch (error) {
      message = { type: 'history', threadId, messages: [] };
      failure = error;
    }
    if (threadId !== this.threadId) return; // a new thread has shown itself meanwhile
    if (turnsStarted !== this.turnsStarted) return this.loadHistory();
    this.post(message);
    if (failure !== undefined) this.postError(failure);
  }

  async newThread(): Promise<void> {
    this.stop();
    await this.state.update(THREAD_KEY, randomUUID());
    this.post({ type: 'history', threadId: this.threadId, messages: [] });
  }

  stop(): void {
    this.turn?.cancel.cancel();
  }

  async send(text: string): Promise<void> {
    const message = text.trim();
    if (!message || this.turn) return;
    const turnId = randomUUID();
    const cancel = new vscode.CancellationTokenSource();
    this.turn = { turnId, cancel };
    this.turnsStarted += 1;
    this.post({ type: 'turnStart', turnId, text: message });
    try {
      const result = await this.connection.request('topicForest/chat',
        { threadId: this.threadId, turnId, message, activeFile: activeFilePath() }, cancel.token);
      this.post({ type: 'turnEnd', turnId, reply: result.reply, cancelled: result.cancelled });
    } catch (error) {
      if (cancel.token.isCancellationRequested && isCancellation(error)) {
        this.post({ type: 'turnEnd', turnId, reply: '', cancelled: true });
      } else {
        this.postError(error, turnId);
      }
    } finally {
      cancel.dispose();
      this.turn = undefined;
      this.afterTurn();
      if (this.historyAfterTurn) {
        this.historyAfterTurn = false;
        void this.loadHistory();
      }
    }
  }

  private onDelta(delta: ChatDelta): void {
    if (!this.turn || delta.turnId !== this.turn.turnId) return;
    this.post({ type: 'delta', turnId: delta.turnId, index: delta.index, delta: delta.delta });
  }

  /** Shows a failure of a webview request (copy, open link, ...) inline. */
  reportError(error: unknown): void {
    this.postError(error);
  }

  private postError(error: unknown, turnId?: string): void {
    const view = describeError(error);
    this.post({ type: 'error', turnId, message: view.message, hint: view.hint, actions: view.actions });
  }

  dispose(): void {
    this.stop();
    for (const s of this.subscriptions) s.dispose();
  }
}

export class ChatViewProvider implements vscode.WebviewViewProvider {
  constructor(private readonly extensionUri: vscode.Uri, private readonly controller: ChatController) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    const root = vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview');
    view.webview.options = { enableScripts: true, localResourceRoots: [root] };
    view.webview.html = chatHtml({
      cspSource: view.webview.cspSource,
      nonce: makeNonce(),
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(root, 'chat.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(root, 'chat.css')).toString(),
    });
    this.controller.attach(view.webview);
    view.webview.onDidReceiveMessage((m: FromWebview) => {
      this.controller.handle(m).catch((error: unknown) => this.controller.reportError(error));
    });
    view.onDidDispose(() => this.controller.attach(undefined));
  }
}
