import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import { fn } from 'jest-mock';
import * as vscode from 'vscode';
import * as mock from '../mocks/vscode';
import { clearAllMocks } from '../mocks/vscode';
import type { ToWebview } from '../../src/chatMessages';
import { ChatController } from '../../src/chatView';
import { ErrorCodes, type ChatParams } from '../../src/protocol';
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
    expect(conn.sent).toHaveLength(1);
    expect(conn.sent[0]!.token?.isCancellationRequested).toBe(true);
    expect(posted.at(-1)).toMatchObject({ type: 'turnEnd', cancelled: true });
    expect(posted.some((m) => m.type === 'error')).toBe(false);
    expect(chat.busy).toBe(false);
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
    await chat.handle({ type: 'newThread' });
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
});
