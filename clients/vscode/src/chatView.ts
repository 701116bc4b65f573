// The chat WebviewView: forwards messages to topicForest/chat (with attachments, the picked model,
// retryOf), streams chatDelta into the page, cancels on Stop, shows errors inline with what to do,
// keeps a message typed while the server is down, and keeps a reply the server died under.
import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';
import { chipOf, PendingAttachments } from './attachments';
import { type Chip, type FromWebview, STOPPED_EMPTY, type ToWebview } from './chatMessages';
import type { CodeBlockActions } from './codeBlocks';
import { ERROR_ACTION_COMMANDS } from './commands';
import type { Connection } from './connection';
import { describeError, isCancellation, isConnectionLost } from './errors';
import { ModelChoice } from './models';
import type { Attachment, ChatDelta, ChatParams, Message, ThreadsChanged } from './protocol';
import type { ConfigReader } from './settings';
import { type ThreadHost, ThreadList } from './threads';

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

/** One question as the user asked it: what Retry and the queue send again. */
interface Asked {
  text: string;
  attachments: Attachment[];
  chips: Chip[];
  /** its stored user message, once known */
  userId?: number;
  /** the thread's last stored user message before this one went out */
  userIdBefore?: number;
  /** a request left with it (the server may have stored it) */
  maybeSent: boolean;
}

interface Turn {
  turnId: string;
  cancel: vscode.CancellationTokenSource;
  asked: Asked;
  parts: string[];
}

export interface ChatOptions {
  /** the last text editor the user was in */
  editor?: () => vscode.TextEditor | undefined;
  codeBlocks?: CodeBlockActions;
  config?: () => ConfigReader;
  /** the pending attachments' estimated tokens changed (the budget figure shows them beside it) */
  onAttachments?: (tokens: number) => void;
}

const SERVER_ACTIONS = [{ id: 'restartServer', label: 'Restart Server' },
  { id: 'showLog', label: 'Show Log' }] as const;

export class ChatController implements vscode.Disposable, ThreadHost {
  private sink: ChatSink | undefined;
  private turn: Turn | undefined;
  private turnsStarted = 0;
  private historyAfterTurn = false; // a history load met a turn: load it again once the turn ends
  private lastAsked: Asked | undefined;
  private lastUserId: number | undefined;
  private hasMessages = false;
  private queued: Asked[] = [];
  private interrupted: { asked: Asked; partial: string; reason: string } | undefined;
  private taking = false;
  private untitled = true; // the header shows "New thread": a first message names the thread
  readonly pending: PendingAttachments;
  readonly threads: ThreadList;
  readonly models: ModelChoice;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly connection: Connection,
    private readonly state: vscode.Memento,
    /** the current thread changed or a turn ended (the tree shows that thread's budget) */
    private readonly afterTurn: () => void = () => undefined,
    private readonly options: ChatOptions = {},
  ) {
    const editor = options.editor ?? (() => vscode.window.activeTextEditor);
    this.pending = new PendingAttachments(editor, () => {
      this.post({ type: 'pending', attachments: this.pending.chips });
      options.onAttachments?.(this.pending.tokens);
    });
    this.threads = new ThreadList(connection, this);
    this.models = new ModelChoice(state, options.config ??
      (() => vscode.workspace.getConfiguration('topicForest')));
    this.subscriptions.push(
      connection.onNotification('topicForest/chatDelta', (d) => this.onDelta(d)),
      connection.onNotification('topicForest/threadsChanged', (t) => void this.onThreadsChanged(t)),
      connection.onDidChangeState(() => this.postSetup()),
    );
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
    return this.turn !== undefined || this.taking;
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
        this.post({ type: 'pending', attachments: this.pending.chips });
        this.postSetup();
        return this.loadHistory(true);
      case 'send':
        return this.send(message.text);
      case 'stop':
        return this.stop();
      case 'retry':
        return this.retry();
      case 'threads':
        return this.threads.show();
      case 'pickModel':
        await this.models.choose(message.model);
        return this.postHeader();
      case 'copy':
        await vscode.env.clipboard.writeText(message.text);
        vscode.window.setStatusBarMessage('Copied to clipboard', 2000);
        return;
      case 'insert':
        await this.options.codeBlocks?.insert(message.code);
        return;
      case 'apply':
        await this.options.codeBlocks?.apply(message.code, message.path);
        return;
      case 'mention':
        this.post({ type: 'mentions', requestId: message.requestId,
          items: await this.pending.mentions(message.query) });
        return;
      case 'attach':
        await this.pending.addMention(message.item);
        return;
      case 'detach':
        return this.pending.remove(message.id);
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

  /** Puts the caret in the chat's input (after the view has been focused). */
  focusInput(): void {
    this.post({ type: 'focusInput' });
  }

  /** Settings changed: the model list and the empty chat's advice may have. */
  configurationChanged(): void {
    this.postSetup();
    void this.postHeader();
  }

  /** After a (re)start: send what waited for the server, else reload the thread (the view may
   *  show an old error or nothing). A reply the server died under stays as it is. */
  serverStarted(): void {
    this.postSetup();
    if (this.queued.length) void this.flush();
    else if (this.sink && !this.interrupted) void this.loadHistory();
  }

  private postSetup(): void {
    this.post({ type: 'setup', server: this.connection.state, reason: this.connection.failure ?? null,
      model: this.models.models.length > 0 });
  }

  /** The header: the thread's title, the model list and the choice. */
  async postHeader(): Promise<void> {
    const threadId = this.threadId;
    let title = 'New thread';
    try {
      const thread = (await this.threads.threads()).find((t) => t.threadId === threadId);
      if (thread) title = thread.title || title;
    } catch {
      // the server is down: the setup note says so
    }
    if (threadId !== this.threadId) return;
    this.untitled = title === 'New thread';
    this.post({ type: 'header', title, models: this.models.models, model: this.models.current });
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
    let messages: Message[] = [];
    let failure: unknown;
    try {
      ({ messages } = await this.connection.request('topicForest/threadHistory',
        { threadId, limit: HISTORY_LIMIT }));
    } catch (error) {
      failure = error;
    }
    if (threadId !== this.threadId) return; // a new thread has shown itself meanwhile
    if (turnsStarted !== this.turnsStarted) return this.loadHistory();
    this.post({ type: 'history', threadId, messages });
    if (failure === undefined) this.remember(messages);
    else if (!this.queued.length) this.postError(failure);
    this.showKept();
    void this.postHeader();
  }

  /** What Retry re-sends, from the stored thread: its last user message. */
  private remember(messages: Message[]): void {
    this.hasMessages = messages.length > 0;
    const last = messages.filter((m) => m.role === 'user').at(-1);
    this.lastUserId = last?.id;
    if (last && !this.interrupted) {
      this.lastAsked = { text: last.content, attachments: [], chips: last.attachments.map(chipOf),
        userId: last.id, maybeSent: true };
    }
  }

  /** A history replaced the page: show again what it does not hold (queued, interrupted). */
  private showKept(): void {
    for (const asked of this.queued) this.postQueued(asked);
    const kept = this.interrupted;
    if (kept) this.post({ type: 'interrupted', text: kept.asked.text, partial: kept.partial,
      attachments: kept.asked.chips, reason: kept.reason });
  }

  async newThread(): Promise<void> {
    await this.switchTo(randomUUID(), false);
  }

  /** Shows another thread (a new one when `load` is false: nothing to load). */
  async switchTo(threadId: string, load = true): Promise<void> {
    this.stop();
    await this.state.update(THREAD_KEY, threadId);
    this.lastAsked = undefined;
    this.lastUserId = undefined;
    this.hasMessages = false;
    this.interrupted = undefined;
    this.afterTurn();
    if (load) return this.loadHistory();
    this.post({ type: 'history', threadId, messages: [] });
    this.showKept();
    await this.postHeader();
  }

  async deleted(threadId: string): Promise<void> {
    if (threadId === this.threadId) await this.newThread();
  }

  renamed(): void {
    void this.postHeader();
  }

  /** This or another window renamed or deleted a thread (`threadId` null: another window
   *  changed threads, which ones unknown; `appended`: the threads it added messages to). */
  private async onThreadsChanged(changed: ThreadsChanged): Promise<void> {
    if (changed.appended?.includes(this.threadId)) {
      // another window added to this thread: show its transcript as stored (one transcript
      // everywhere); what this window kept aside is no longer the thread's end
      this.interrupted = undefined;
      void this.loadHistory();
    }
    await this.threads.refresh();
    if (changed.threadId !== null && changed.threadId !== this.threadId) return;
    const threadId = this.threadId;
    let exists = true;
    try {
      exists = (await this.threads.threads()).some((t) => t.threadId === threadId);
    } catch {
      return;
    }
    if (!exists && this.hasMessages && threadId === this.threadId && !this.turn) {
      await this.newThread();
      this.post({ type: 'notice', text: 'That thread was deleted (in another window); this is a new one.' });
    } else {
      await this.postHeader();
    }
  }

  stop(): void {
    this.turn?.cancel.cancel();
  }

  async send(text: string): Promise<void> {
    const message = text.trim();
    if (!message || this.turn || this.taking) return;
    let taken: { attachments: Attachment[]; chips: Chip[] } = { attachments: [], chips: [] };
    if (this.pending.size) { // (no await without attachments: the turn starts at once)
      this.taking = true;
      taken = await this.pending.take().finally(() => (this.taking = false));
    }
    const { attachments, chips } = taken;
    const asked: Asked = { text: message, attachments, chips, userIdBefore: this.lastUserId,
      maybeSent: false };
    this.lastAsked = asked;
    this.interrupted = undefined;
    if (this.serverDown()) {
      this.queued.push(asked);
      this.postQueued(asked);
      return;
    }
    await this.run(asked, undefined, false);
  }

  /** Retry: what waits for the server, else the last question once more (`retryOf` when the
   *  server stored it, else as a new message). */
  async retry(): Promise<void> {
    if (this.turn) return;
    if (this.queued.length) return this.flush();
    const asked = this.lastAsked;
    if (!asked) return;
    if (this.serverDown()) {
      this.interrupted = undefined;
      this.queued.push(asked);
      this.postQueued(asked);
      return;
    }
    let retryOf: number | undefined;
    try {
      retryOf = await this.storedUserId(asked);
    } catch (error) {
      this.postError(error, undefined, true);
      return;
    }
    await this.run(asked, retryOf, true);
  }

  private serverDown(): boolean {
    return this.connection.state === 'failed' || this.connection.state === 'stopped';
  }

  private postQueued(asked: Asked, turnId?: string): void {
    const cause = this.connection.failure ?? 'The Topic Forest server is not running.';
    this.post({ type: 'queued', turnId, text: asked.text, attachments: asked.chips,
      reason: `Not sent yet: ${cause} It will be sent when the server is back.`,
      actions: [...SERVER_ACTIONS] });
  }

  /** Sends what was typed while the server was down, in order. */
  private async flush(): Promise<void> {
    while (this.queued.length && !this.turn) {
      const asked = this.queued.shift() as Asked;
      let retryOf: number | undefined;
      try {
        retryOf = await this.storedUserId(asked);
      } catch {
        this.queued.unshift(asked);
        return;
      }
      await this.run(asked, retryOf, true);
    }
  }

  /** The stored user message of `asked`, if the server has it. */
  private async storedUserId(asked: Asked): Promise<number | undefined> {
    if (asked.userId !== undefined || !asked.maybeSent) return asked.userId;
    const { messages } = await this.connection.request('topicForest/threadHistory',
      { threadId: this.threadId, limit: 4 });
    const last = messages.filter((m) => m.role === 'user').at(-1);
    return last && last.id !== asked.userIdBefore && last.content === asked.text ? last.id : undefined;
  }

  private async run(asked: Asked, retryOf: number | undefined, resend: boolean): Promise<void> {
    const turnId = randomUUID();
    const cancel = new vscode.CancellationTokenSource();
    const turn: Turn = { turnId, cancel, asked, parts: [] };
    this.turn = turn;
    this.turnsStarted += 1;
    this.interrupted = undefined;
    this.post({ type: 'turnStart', turnId, text: asked.text, attachments: asked.chips, resend });
    const model = this.models.current;
    const params: ChatParams = { threadId: this.threadId, turnId, message: asked.text,
      activeFile: activeFilePath(), ...(model ? { model } : {}) };
    if (retryOf !== undefined) params.retryOf = retryOf;
    else if (asked.attachments.length) params.attachments = asked.attachments;
    asked.maybeSent = true;
    try {
      const result = await this.connection.request('topicForest/chat', params, cancel.token);
      asked.userId = result.userMessageId;
      this.lastUserId = result.userMessageId;
      this.hasMessages = true;
      if (result.cancelled && !cancel.token.isCancellationRequested) {
        this.lost(turn, result.reply); // the server stopped the turn itself (it is shutting down)
      } else {
        this.ended(turn, result.reply, result.cancelled);
      }
    } catch (error) {
      if (cancel.token.isCancellationRequested && isCancellation(error)) {
        this.ended(turn, turn.parts.join(''), true);
      } else if (isConnectionLost(error)) {
        this.lost(turn, turn.parts.join(''));
      } else {
        this.postError(error, turnId, true);
      }
    } finally {
      cancel.dispose();
      this.turn = undefined;
      this.afterTurn();
      if (this.untitled) void this.postHeader(); // its first message has named the thread
      if (this.historyAfterTurn) {
        this.historyAfterTurn = false;
        void this.loadHistory();
      }
    }
  }

  /** A stop before the first token stores no reply: the turn is kept here (as a reply the server
   *  died under is) so that a history load shows it again, marked, with Retry. */
  private ended(turn: Turn, reply: string, cancelled: boolean): void {
    if (cancelled && !reply) {
      this.interrupted = { asked: turn.asked, partial: '', reason: STOPPED_EMPTY };
    }
    this.post({ type: 'turnEnd', turnId: turn.turnId, reply, cancelled });
  }

  /** The server went away under a turn: nothing arrived -> it waits and goes out again when the
   *  server is back; a partial reply -> it stays, marked as interrupted, with Retry. */
  private lost(turn: Turn, partial: string): void {
    if (!partial) {
      this.queued.push(turn.asked);
      this.postQueued(turn.asked, turn.turnId);
      return;
    }
    const reason = 'Interrupted: the server stopped before the reply was complete.';
    this.interrupted = { asked: turn.asked, partial, reason };
    this.post({ type: 'interrupted', turnId: turn.turnId, text: turn.asked.text, partial,
      attachments: turn.asked.chips, reason });
  }

  private onDelta(delta: ChatDelta): void {
    if (!this.turn || delta.turnId !== this.turn.turnId) return;
    this.turn.parts[delta.index] = delta.delta;
    this.post({ type: 'delta', turnId: delta.turnId, index: delta.index, delta: delta.delta });
  }

  /** Shows a failure of a webview request (copy, open link, ...) inline. */
  reportError(error: unknown): void {
    this.postError(error);
  }

  private postError(error: unknown, turnId?: string, retry = false): void {
    const view = describeError(error);
    this.post({ type: 'error', turnId, message: view.message, hint: view.hint, actions: view.actions,
      retry });
  }

  dispose(): void {
    this.stop();
    for (const s of this.subscriptions) s.dispose();
  }
}
