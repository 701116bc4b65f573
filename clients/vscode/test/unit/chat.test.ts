import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import { fn } from 'jest-mock';
import * as vscode from 'vscode';
import * as mock from '../mocks/vscode';
import { clearAllMocks } from '../mocks/vscode';
import type { ToWebview } from '../../src/chatMessages';
import { ChatController } from '../../src/chatView';
import { ErrorCodes, type ChatParams, type Message } from '../../src/protocol';
import { eventually } from '../eventually';
import { FakeConnection, Memento } from './fakes';

type Handler = NonNullable<ConstructorParameters<typeof FakeConnection>[0]>;

/** The page's view of a turn: what these tests look at (header/setup/pending posts aside). */
const TURN_POSTS = new Set(['history', 'turnStart', 'delta', 'turnEnd', 'error', 'queued', 'interrupted', 'notice']);

function setup(handler: Handler, options: ConstructorParameters<typeof ChatController>[3] = {}) {
  // listThreads (the header's title) answers an empty list unless the test's handler answers it
  const conn = new FakeConnection((method, params, token) => (method === 'topicForest/listThreads'
    && !handles.listThreads ? { threads: [] } : handler(method, params, token)));
  const handles = { listThreads: false };
  const afterTurn = fn();
  const state = new Memento();
  const chat = new ChatController(conn, state, afterTurn, options);
  const all: ToWebview[] = [];
  const posted: ToWebview[] = [];
  chat.attach({ postMessage: (m) => {
    all.push(m);
    if (TURN_POSTS.has(m.type)) posted.push(m);
    return Promise.resolve(true);
  } });
  const requests = (method: string) => conn.sent.filter((s) => s.method === method);
  return { conn, chat, posted, all, afterTurn, state, handles, requests };
}

const userMessage = (id: number, content: string): Message => ({ id, threadId: 'x', role: 'user', content,
  timestamp: 1, tokens: 1, cancelled: false, attachments: [] });

const tick = () => new Promise((r) => setTimeout(r, 0));

const reply = (p: ChatParams, text: string, cancelled = false) => ({
  threadId: p.threadId, turnId: p.turnId, reply: text, cancelled,
  usage: { promptTokens: 1, completionTokens: 1 }, userMessageId: 1, replyMessageId: 2,
  context: { tokens: 1, budget: 1024, topics: [] }, attachments: [], model: 'openai/stub',
});

describe('chat controller', () => {
  beforeEach(() => {
    clearAllMocks();
    mock.window.activeTextEditor = undefined;
  });

  it('sends the message with thread, turn and active file, streams deltas of that turn only', async () => {
    mock.window.activeTextEditor = { document: { uri: mock.Uri.file('/ws/src/app.py') } };
    const { chat, conn, posted, afterTurn } = setup(async (_m, params) => {
      const p = params as ChatParams;
      // deltas arrive while the request is in flight; one from a stale turn is ignored
      conn.emit('topicForest/chatDelta', { threadId: p.threadId, turnId: p.turnId, index: 0, delta: 'Hel' });
      conn.emit('topicForest/chatDelta', { threadId: p.threadId, turnId: 'old', index: 0, delta: 'X' });
      conn.emit('topicForest/chatDelta', { threadId: p.threadId, turnId: p.turnId, index: 1, delta: 'lo' });
      return reply(p, 'Hello');
    });
    await chat.send('  hi there ');
    const sent = conn.sent[0]!;
    expect(sent.method).toBe('topicForest/chat');
    const params = sent.params as ChatParams;
    expect(params).toMatchObject({ message: 'hi there', activeFile: 'src/app.py', threadId: chat.threadId });
    expect(params.turnId).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent.token).toBeDefined();
    expect(posted.map((m) => m.type)).toEqual(['turnStart', 'delta', 'delta', 'turnEnd']);
    expect(params).not.toHaveProperty('attachments');
    expect(params).not.toHaveProperty('retryOf');
    expect(posted.flatMap((m) => (m.type === 'delta' ? [m.delta] : []))).toEqual(['Hel', 'lo']);
    expect(posted.at(-1)).toMatchObject({ type: 'turnEnd', reply: 'Hello', cancelled: false });
    expect(afterTurn).toHaveBeenCalledTimes(1);
  });

  it('stop cancels the request token (-> $/cancelRequest) and ends the turn as cancelled', async () => {
    const { chat, conn, posted } = setup((_m, _params, token) => new Promise((_resolve, reject) => {
      token?.onCancellationRequested(() => reject(Object.assign(new Error('cancelled'),
        { code: ErrorCodes.RequestCancelled })));
    }));
    const pending = chat.send('long question');
    expect(chat.busy).toBe(true);
    await chat.handle({ type: 'send', text: 'second' }); // ignored while busy
    await chat.handle({ type: 'stop' });
    await pending;
    const chats = conn.sent.filter((s) => s.method === 'topicForest/chat');
    expect(chats).toHaveLength(1); // the second was ignored
    expect(chats[0]!.token?.isCancellationRequested).toBe(true);
    expect(posted.at(-1)).toMatchObject({ type: 'turnEnd', cancelled: true });
    expect(posted.some((m) => m.type === 'error')).toBe(false);
    expect(chat.busy).toBe(false);
  });

  it('a stop before the first token keeps the turn through a history load, and Retry asks it again', async () => {
    const history: Message[] = [];
    const { chat, conn, posted } = setup((method, params, token) => {
      if (method === 'topicForest/threadHistory') return Promise.resolve({ messages: history });
      return new Promise((_resolve, reject) => {
        // the server stored the question before the model answered anything
        history.push(userMessage(7, (params as ChatParams).message));
        token?.onCancellationRequested(() => reject(Object.assign(new Error('cancelled'),
          { code: ErrorCodes.RequestCancelled })));
      });
    });
    const pending = chat.send('stop me early');
    chat.stop();
    await pending;
    expect(posted.at(-1)).toMatchObject({ type: 'turnEnd', reply: '', cancelled: true });
    await chat.loadHistory(); // e.g. the view re-opened: the stored thread has no reply to show
    expect(posted.at(-1)).toMatchObject({ type: 'interrupted', text: 'stop me early', partial: '',
      reason: 'Stopped before the reply began.' });
    void chat.retry();
    await eventually(() => expect(conn.sent.filter((s) => s.method === 'topicForest/chat')).toHaveLength(2), 60_000);
    expect(conn.sent.filter((s) => s.method === 'topicForest/chat')[1]?.params).toMatchObject({ retryOf: 7 });
    chat.stop();
  });

  it('a server that answers a stop with a partial reply keeps the partial text', async () => {
    const { chat, posted } = setup((_m, params, token) => new Promise((resolve) => {
      token?.onCancellationRequested(() => resolve(reply(params as ChatParams, 'partial', true)));
    }));
    const pending = chat.send('q');
    chat.stop();
    await pending;
    expect(posted.at(-1)).toMatchObject({ type: 'turnEnd', reply: 'partial', cancelled: true });
  });

  it('no chat model: the server\'s advice shows once (no second copy as a hint), with Configure Model', async () => {
    // The server's message already says how to set a model; the client used to add the same
    // advice again as a hint, so the bubble printed it twice.
    const advice = 'No chat model is configured. Set `topicForest.chatModel` to a litellm model string.';
    const { chat, posted } = setup(() => Promise.reject(Object.assign(
      new Error(advice), { code: ErrorCodes.ChatModelNotConfigured })));
    await chat.send('hello');
    const error = posted.at(-1);
    expect(error?.type).toBe('error');
    if (error?.type !== 'error') return;
    expect(error.turnId).toBeDefined();
    expect(error.message).toBe(advice);
    expect(error.hint).toBe('');
    expect(error.actions.map((a) => a.id)).toEqual(['configureModel']);
    await chat.handle({ type: 'action', id: 'configureModel' });
    expect(vscode.commands.executeCommand).toHaveBeenCalledWith('topicForest.configureModel');
  });

  it('loads the thread history on ready; a new thread gets a new id and an empty view', async () => {
    const history = [{ id: 1, threadId: 'x', role: 'user', content: 'earlier', timestamp: 1, tokens: 2,
      cancelled: false, attachments: [] }];
    const { chat, posted, requests, afterTurn } = setup(() => ({ threadId: 'x', messages: history }));
    const first = chat.threadId;
    await chat.handle({ type: 'ready' });
    expect(requests('topicForest/threadHistory')[0]).toMatchObject({ params: { threadId: first } });
    expect(posted[0]).toEqual({ type: 'history', threadId: first, messages: history });
    await chat.newThread(); // the view title's + (topicForest.newThread)
    expect(chat.threadId).not.toBe(first);
    expect(posted.at(-1)).toEqual({ type: 'history', threadId: chat.threadId, messages: [] });
    expect(afterTurn).toHaveBeenCalledTimes(1); // the tree follows the current thread
  });

  it('reloads the thread when the server (re)starts, with a view to show it in', async () => {
    const { chat, requests } = setup(() => ({ threadId: 'x', messages: [] }));
    chat.serverStarted();
    await tick();
    expect(requests('topicForest/threadHistory')).toHaveLength(1);
    chat.attach(undefined);
    chat.serverStarted();
    await tick();
    expect(requests('topicForest/threadHistory')).toHaveLength(1);
  });

  it('a history answered after a turn began never wipes the turn: the thread is loaded again after it', async () => {
    // The view asks for the history when it opens; a user quick to type starts a turn before
    // the answer lands. Posting that (older) history then would empty the view mid-turn.
    const stored = (n: number) => Array.from({ length: n }, (_, i) => ({
      id: i + 1, threadId: 'x', role: i % 2 ? 'assistant' : 'user', content: `m${i}`,
      timestamp: i, tokens: 1, cancelled: false, attachments: [],
    }));
    let answerHistory: (() => void) | undefined;
    let historyCalls = 0;
    let endTurn: (() => void) | undefined;
    const { chat, posted, conn } = setup((method, params) => {
      if (method === 'topicForest/threadHistory') {
        historyCalls += 1;
        const messages = stored(historyCalls === 1 ? 0 : 2);
        if (historyCalls > 1) return { threadId: 'x', messages };
        return new Promise((resolve) => { answerHistory = () => resolve({ threadId: 'x', messages }); });
      }
      const p = params as ChatParams;
      return new Promise((resolve) => { endTurn = () => resolve(reply(p, 'answer')); });
    });
    const ready = chat.handle({ type: 'ready' });
    const turn = chat.send('quick question');
    answerHistory!();
    await ready;
    // the late answer is not posted, and asking again waits for the turn
    expect(posted.map((m) => m.type)).toEqual(['turnStart']);
    expect(historyCalls).toBe(1);
    chat.serverStarted(); // a restart's reload during the turn waits as well
    expect(historyCalls).toBe(1);
    endTurn!();
    await turn;
    await new Promise((r) => setTimeout(r, 0));
    expect(posted.map((m) => m.type)).toEqual(['turnStart', 'turnEnd', 'history']);
    expect(posted.at(-1)).toMatchObject({ type: 'history', messages: stored(2) });
    expect(conn.sent.filter((s) => s.method === 'topicForest/threadHistory')).toHaveLength(2);
  });

  it('a view opened during a turn shows the thread at once, and again when the turn ends', async () => {
    let endTurn: (() => void) | undefined;
    const { chat, posted, conn } = setup((method, params) => {
      if (method === 'topicForest/threadHistory') return { threadId: 'x', messages: [] };
      return new Promise((resolve) => { endTurn = () => resolve(reply(params as ChatParams, 'a')); });
    });
    const turn = chat.send('question');
    await chat.handle({ type: 'ready' }); // the page was re-created: it shows nothing yet
    expect(posted.map((m) => m.type)).toEqual(['turnStart', 'history']);
    endTurn!();
    await turn;
    await new Promise((r) => setTimeout(r, 0));
    expect(posted.map((m) => m.type)).toEqual(['turnStart', 'history', 'turnEnd', 'history']);
    expect(conn.sent.filter((s) => s.method === 'topicForest/threadHistory')).toHaveLength(2);
  });

  it('copies code and opens only web links', async () => {
    const { chat } = setup(() => ({}));
    await chat.handle({ type: 'copy', text: 'print(1)' });
    expect(vscode.env.clipboard.writeText).toHaveBeenCalledWith('print(1)');
    await chat.handle({ type: 'openLink', href: 'javascript:alert(1)' });
    await chat.handle({ type: 'openLink', href: 'command:workbench.action.terminal.new' });
    expect(vscode.env.openExternal).not.toHaveBeenCalled();
    await chat.handle({ type: 'openLink', href: 'https://example.org/x' });
    expect(vscode.env.openExternal).toHaveBeenCalledTimes(1);
  });

  it('sends the pending attachments once, shows them as chips, and empties the list', async () => {
    const doc = new mock.FakeDocument(mock.Uri.file('/ws/src/app.py'), 'a = 1\nb = 2\n', 'python');
    const editor = new mock.FakeEditor(doc, [new mock.Selection(0, 0, 0, 5)]);
    const { chat, conn, posted, all } = setup((_m, p) => reply(p as ChatParams, 'ok'),
      { editor: () => editor as unknown as vscode.TextEditor });
    expect(chat.pending.addSelection()).toBe(true);
    expect(all.at(-1)).toMatchObject({ type: 'pending', attachments: [{ kind: 'selection', path: 'src/app.py' }] });
    await chat.send('what is a?');
    const params = conn.sent[0]!.params as ChatParams;
    expect(params.attachments).toEqual([{ kind: 'selection', path: 'src/app.py',
      range: { startLine: 0, endLine: 0 }, language: 'python', text: 'a = 1' }]);
    expect(posted[0]).toMatchObject({ type: 'turnStart', resend: false,
      attachments: [{ kind: 'selection', path: 'src/app.py', range: { startLine: 0, endLine: 0 } }] });
    expect(all.filter((m) => m.type === 'pending').at(-1)).toEqual({ type: 'pending', attachments: [] });
    await chat.send('again');
    expect(conn.sent[1]!.params).not.toHaveProperty('attachments');
  });

  it('the @ list and picking from it go through the extension', async () => {
    mock.workspace.workspaceFolders = [{ uri: mock.Uri.file('/ws') }];
    mock.files.splice(0, mock.files.length, 'src/app.py', 'docs/x.md');
    const { chat, all } = setup(() => ({}));
    await chat.handle({ type: 'mention', requestId: 7, query: 'app' });
    expect(all.at(-1)).toEqual({ type: 'mentions', requestId: 7, items: [{ kind: 'file', path: 'src/app.py' }] });
    await chat.handle({ type: 'attach', item: { kind: 'file', path: 'src/app.py' } });
    const chip = chat.pending.chips[0]!;
    expect(chip).toMatchObject({ kind: 'file', path: 'src/app.py' });
    await chat.handle({ type: 'detach', id: chip.id! });
    expect(chat.pending.size).toBe(0);
  });

  it('the first message names the thread: the header leaves "New thread" after the first turn', async () => {
    const threads: { threadId: string; messageCount: number; lastTime: number; title: string }[] = [];
    const { chat, all, handles } = setup((m, p) => {
      if (m === 'topicForest/listThreads') return { threads };
      const params = p as ChatParams;
      threads.push({ threadId: params.threadId, messageCount: 2, lastTime: 1, title: params.message });
      return reply(params, 'ok');
    });
    handles.listThreads = true;
    await chat.postHeader();
    expect(all.at(-1)).toMatchObject({ type: 'header', title: 'New thread' });
    await chat.send('How do I rotate the JWT secret?');
    await eventually(() => expect(all.filter((m) => m.type === 'header').at(-1))
      .toMatchObject({ title: 'How do I rotate the JWT secret?' }));
  });

  it('the model picker: chatModel plus topicForest.models, remembered per workspace, sent as model', async () => {
    const config = new Map<string, unknown>([['chatModel', 'openai/stub'], ['models', ['gpt-4o-mini', '', 'openai/stub', 'ollama/llama3']]]);
    const { chat, conn, all, state } = setup((m, p) => (m === 'topicForest/chat' ? reply(p as ChatParams, 'ok') : {}),
      { config: () => ({ get: <T>(k: string) => config.get(k) as T }) });
    await chat.postHeader();
    expect(all.at(-1)).toEqual({ type: 'header', title: 'New thread',
      models: ['openai/stub', 'gpt-4o-mini', 'ollama/llama3'], model: 'openai/stub' });
    await chat.handle({ type: 'pickModel', model: 'ollama/llama3' });
    expect(state.get('topicForest.model')).toBe('ollama/llama3');
    expect(all.at(-1)).toMatchObject({ type: 'header', model: 'ollama/llama3' });
    await chat.handle({ type: 'pickModel', model: 'not/offered' }); // ignored
    await chat.send('hi');
    expect(conn.sent.find((s) => s.method === 'topicForest/chat')!.params).toMatchObject({ model: 'ollama/llama3' });
    config.set('models', []); // no longer offered: back to chatModel
    expect(chat.models.current).toBe('openai/stub');
    config.clear();
    expect(chat.models.current).toBeNull();
    chat.configurationChanged();
    expect(all.filter((m) => m.type === 'setup').at(-1)).toMatchObject({ model: false });
  });

  it('Retry on the last reply answers the same stored question again (retryOf, no new message)', async () => {
    const { chat, conn, posted } = setup((m, p) => (m === 'topicForest/chat'
      ? { ...reply(p as ChatParams, 'answer'), userMessageId: 41 } : {}));
    await chat.send('why?');
    await chat.handle({ type: 'retry' });
    const chats = conn.sent.filter((s) => s.method === 'topicForest/chat');
    expect(chats).toHaveLength(2);
    expect(chats[1]!.params).toMatchObject({ message: 'why?', retryOf: 41 });
    expect(posted.flatMap((m) => (m.type === 'turnStart' ? [m.resend] : []))).toEqual([false, true]);
  });

  it('Retry after a provider error finds the stored question and answers it (retryOf)', async () => {
    let calls = 0;
    const { chat, conn, posted } = setup((m, p) => {
      if (m === 'topicForest/threadHistory') {
        return { threadId: 'x', messages: [{ id: 5, threadId: 'x', role: 'user', content: 'explain',
          timestamp: 1, tokens: 1, cancelled: false, attachments: [] }] };
      }
      calls += 1;
      if (calls === 1) return Promise.reject(Object.assign(new Error('The chat model x failed: 500'), { code: ErrorCodes.ProviderError }));
      return reply(p as ChatParams, 'fine now');
    });
    await chat.send('explain');
    expect(posted.at(-1)).toMatchObject({ type: 'error', retry: true });
    await chat.handle({ type: 'retry' });
    const chats = conn.sent.filter((s) => s.method === 'topicForest/chat');
    expect(chats[1]!.params).toMatchObject({ message: 'explain', retryOf: 5 });
  });

  it('Retry of a question the server never stored (no model) sends it anew, attachments included', async () => {
    let calls = 0;
    const doc = new mock.FakeDocument(mock.Uri.file('/ws/a.py'), 'x = 1', 'python');
    const editor = new mock.FakeEditor(doc, [new mock.Selection(0, 0, 0, 5)]);
    const { chat, conn } = setup((m, p) => {
      if (m === 'topicForest/threadHistory') return { threadId: 'x', messages: [] };
      calls += 1;
      if (calls === 1) return Promise.reject(Object.assign(new Error('No chat model'), { code: ErrorCodes.ChatModelNotConfigured }));
      return reply(p as ChatParams, 'ok');
    }, { editor: () => editor as unknown as vscode.TextEditor });
    chat.pending.addSelection();
    await chat.send('look');
    await chat.handle({ type: 'retry' });
    const second = conn.sent.filter((s) => s.method === 'topicForest/chat')[1]!.params as ChatParams;
    expect(second.retryOf).toBeUndefined();
    expect(second.attachments?.map((a) => a.text)).toEqual(['x = 1']);
  });

  it('a restart during a streaming reply keeps the partial reply, marked interrupted, and offers Retry', async () => {
    // Before: the failed turn showed a generic error and the reload after the restart erased the
    // partial reply, leaving the question unanswered.
    let phase: 'first' | 'retry' = 'first';
    const { chat, conn, posted, requests } = setup((m, p) => {
      const params = p as ChatParams;
      if (m === 'topicForest/threadHistory') {
        return { threadId: 'x', messages: [{ id: 9, threadId: 'x', role: 'user', content: 'long question',
          timestamp: 1, tokens: 1, cancelled: false, attachments: [] }] };
      }
      if (phase === 'first') {
        conn.emit('topicForest/chatDelta', { threadId: params.threadId, turnId: params.turnId, index: 0, delta: 'Part one, ' });
        conn.emit('topicForest/chatDelta', { threadId: params.threadId, turnId: params.turnId, index: 1, delta: 'part two' });
        conn.setState('stopped');
        return Promise.reject(Object.assign(new Error('Pending response rejected since connection got disposed'), { code: -32097 }));
      }
      return reply(params, 'the whole answer');
    });
    await chat.send('long question');
    expect(posted.at(-1)).toMatchObject({ type: 'interrupted', text: 'long question', partial: 'Part one, part two' });
    expect(posted.some((m) => m.type === 'error')).toBe(false);
    conn.setState('running');
    chat.serverStarted();
    await tick();
    expect(requests('topicForest/threadHistory')).toHaveLength(0); // nothing reloads over it
    phase = 'retry';
    await chat.handle({ type: 'retry' });
    const chats = requests('topicForest/chat');
    expect(chats[1]!.params).toMatchObject({ message: 'long question', retryOf: 9 });
    expect(posted.at(-1)).toMatchObject({ type: 'turnEnd', reply: 'the whole answer' });
  });

  it('a view re-opened after an interrupted reply shows the history and the interrupted reply after it', async () => {
    const { chat, conn, posted } = setup((m, p) => {
      if (m === 'topicForest/threadHistory') return { threadId: 'x', messages: [] };
      const params = p as ChatParams;
      conn.emit('topicForest/chatDelta', { threadId: params.threadId, turnId: params.turnId, index: 0, delta: 'half' });
      return { ...reply(params, 'half', true) }; // the server ended the turn itself (shutting down)
    });
    await chat.send('q');
    expect(posted.at(-1)).toMatchObject({ type: 'interrupted', partial: 'half' });
    await chat.handle({ type: 'ready' });
    expect(posted.slice(-2).map((m) => m.type)).toEqual(['history', 'interrupted']);
  });

  it('a restart before any reply text: the question waits and is answered when the server is back', async () => {
    let phase = 0;
    const { chat, conn, posted, requests } = setup((m, p) => {
      if (m === 'topicForest/threadHistory') {
        return { threadId: 'x', messages: [{ id: 3, threadId: 'x', role: 'user', content: 'q',
          timestamp: 1, tokens: 1, cancelled: false, attachments: [] }] };
      }
      phase += 1;
      if (phase === 1) {
        conn.setState('stopped');
        return Promise.reject(Object.assign(new Error('Client is not running'), { code: -32096 }));
      }
      return reply(p as ChatParams, 'answer');
    });
    await chat.send('q');
    const queued = posted.at(-1);
    expect(queued).toMatchObject({ type: 'queued', text: 'q' });
    expect(queued?.type === 'queued' && queued.turnId).toBeTruthy();
    conn.setState('running');
    chat.serverStarted();
    await tick();
    await tick();
    expect(requests('topicForest/chat')[1]!.params).toMatchObject({ message: 'q', retryOf: 3 });
    expect(posted.at(-1)).toMatchObject({ type: 'turnEnd', reply: 'answer' });
  });

  it('a message typed while the server is down shows the cause, is kept, and is sent when it is back', async () => {
    // Before: a generic "server not running" error bubble; the cause only in a toast; the text lost.
    const { chat, conn, posted, all, requests } = setup((m, p) => (m === 'topicForest/chat'
      ? reply(p as ChatParams, 'here') : { threadId: 'x', messages: [] }));
    conn.setState('failed', 'Topic Forest: no Python 3.11+ found (tried python3, python).');
    expect(all.at(-1)).toMatchObject({ type: 'setup', server: 'failed',
      reason: 'Topic Forest: no Python 3.11+ found (tried python3, python).' });
    await chat.send('are you there?');
    expect(requests('topicForest/chat')).toHaveLength(0);
    const queued = posted.at(-1);
    expect(queued?.type).toBe('queued');
    if (queued?.type !== 'queued') return;
    expect(queued.reason).toContain('no Python 3.11+ found');
    expect(queued.actions.map((a) => a.id)).toEqual(['restartServer', 'showLog']);
    conn.setState('running');
    chat.serverStarted();
    await tick();
    expect(requests('topicForest/chat')[0]!.params).toMatchObject({ message: 'are you there?' });
    expect(requests('topicForest/chat')[0]!.params).not.toHaveProperty('retryOf');
    expect(posted.slice(-2).map((m) => m.type)).toEqual(['turnStart', 'turnEnd']);
    expect(posted.at(-2)).toMatchObject({ resend: true });
  });

  it('the thread list switches, renames and deletes threads (with a modal confirm)', async () => {
    const threads = [
      { threadId: 'a', messageCount: 4, lastTime: 100, title: 'Parser bug' },
      { threadId: 'b', messageCount: 2, lastTime: 200, title: 'Build setup' },
    ];
    const { chat, handles, afterTurn, requests, all } = setup((m, p) => {
      if (m === 'topicForest/listThreads') return { threads };
      if (m === 'topicForest/renameThread') return { thread: { ...threads[0], title: (p as { title: string }).title } };
      if (m === 'topicForest/deleteThread') return { threadId: 'a', deletedMessages: 4 };
      return { threadId: (p as { threadId: string }).threadId, messages: [] };
    });
    handles.listThreads = true;
    await chat.threads.show();
    const picker = mock.quickPicks.at(-1) as mock.FakeQuickPick<vscode.QuickPickItem & { thread?: { threadId: string } }>;
    expect(picker.items.map((i) => i.label)).toEqual(['$(add) New thread', 'Build setup', 'Parser bug']);
    expect(picker.items[1]!.description).toContain('2 messages');
    picker.accept(picker.items[2]!); // Parser bug
    await tick();
    expect(chat.threadId).toBe('a');
    expect(afterTurn).toHaveBeenCalled();
    expect(requests('topicForest/threadHistory').at(-1)!.params).toMatchObject({ threadId: 'a' });
    expect(all.filter((m) => m.type === 'header').at(-1)).toMatchObject({ title: 'Parser bug' });

    await chat.threads.show();
    const second = mock.quickPicks.at(-1) as typeof picker;
    mock.window.showInputBox.mockResolvedValueOnce('  Lexer bug ');
    second.pressButton(second.items[2]!, 0);
    await tick();
    expect(requests('topicForest/renameThread')[0]!.params).toEqual({ threadId: 'a', title: 'Lexer bug' });

    mock.window.showWarningMessage.mockResolvedValueOnce(undefined); // cancelled: nothing deleted
    second.pressButton(second.items[2]!, 1);
    await tick();
    expect(requests('topicForest/deleteThread')).toHaveLength(0);
    mock.window.showWarningMessage.mockResolvedValueOnce('Delete');
    second.pressButton(second.items[2]!, 1);
    await tick();
    await tick();
    const [, options] = mock.window.showWarningMessage.mock.calls.at(-1) as [string, { modal: boolean; detail: string }];
    expect(options.modal).toBe(true);
    expect(options.detail).toContain('nothing of it stays in topics');
    expect(requests('topicForest/deleteThread')[0]!.params).toEqual({ threadId: 'a' });
    expect(chat.threadId).not.toBe('a'); // the current thread was deleted: a new one
  });

  it('threadsChanged: the current thread deleted in another window starts a new thread', async () => {
    let list = [{ threadId: 'mine', messageCount: 2, lastTime: 1, title: 'Mine' }];
    const { chat, conn, handles, posted, state } = setup((m) => (m === 'topicForest/listThreads'
      ? { threads: list }
      : { threadId: 'mine', messages: [{ id: 1, threadId: 'mine', role: 'user', content: 'hi', timestamp: 1,
        tokens: 1, cancelled: false, attachments: [] }] }));
    handles.listThreads = true;
    await state.update('topicForest.threadId', 'mine');
    await chat.loadHistory();
    conn.emit('topicForest/threadsChanged', { workspaceUri: 'file:///ws', threadId: 'other' });
    await tick();
    expect(chat.threadId).toBe('mine');
    list = [];
    // another window's commit: which thread is not known, so the current one is looked up
    conn.emit('topicForest/threadsChanged', { workspaceUri: 'file:///ws', threadId: null });
    await tick();
    await tick();
    expect(chat.threadId).not.toBe('mine');
    expect(posted.at(-1)).toMatchObject({ type: 'notice' });
  });

  it('threadsChanged naming this thread as appended to shows the stored transcript; others do not', async () => {
    const stored = [userMessage(1, 'hi')];
    const { chat, conn, posted, requests, state, handles } = setup((m) => (m === 'topicForest/listThreads'
      ? { threads: [{ threadId: 'mine', messageCount: stored.length, lastTime: 1, title: 'Mine' }] }
      : { threadId: 'mine', messages: [...stored] }));
    handles.listThreads = true;
    await state.update('topicForest.threadId', 'mine');
    await chat.loadHistory();
    const loads = () => requests('topicForest/threadHistory').length;
    expect(loads()).toBe(1);
    conn.emit('topicForest/threadsChanged', { workspaceUri: 'file:///ws', threadId: null, appended: ['other'] });
    await tick();
    expect(loads()).toBe(1);
    stored.push({ ...userMessage(2, 'a reply from the other window'), role: 'assistant' });
    conn.emit('topicForest/threadsChanged', { workspaceUri: 'file:///ws', threadId: null, appended: ['mine'] });
    await eventually(() => expect(posted.at(-1)).toMatchObject({ type: 'history', threadId: 'mine' }));
    const shown = posted.at(-1) as Extract<ToWebview, { type: 'history' }>;
    expect(shown.messages.map((m) => m.content)).toEqual(['hi', 'a reply from the other window']);
  });

  it('focus puts the caret in the input; the empty chat learns what is missing', async () => {
    const { chat, conn, all } = setup(() => ({ threadId: 'x', messages: [] }),
      { config: () => ({ get: () => undefined }) });
    chat.focusInput();
    expect(all.at(-1)).toEqual({ type: 'focusInput' });
    await chat.handle({ type: 'ready' });
    expect(all.find((m) => m.type === 'setup')).toEqual({ type: 'setup', server: 'running', reason: null, model: false });
    conn.setState('starting');
    expect(all.at(-1)).toMatchObject({ type: 'setup', server: 'starting' });
  });
});
