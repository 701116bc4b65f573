// ChatController (src/chatView.ts), a turn: send and stream, Stop, errors, Retry, a turn across a server restart.
import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import * as vscode from 'vscode';
import * as mock from '../mocks/vscode';
import { clearAllMocks } from '../mocks/vscode';
import { ErrorCodes, type ChatParams, type Message } from '../../src/protocol';
import { eventually } from '../eventually';
import { reply, setup, tick, userMessage } from './chatFixtures';

describe('chat controller: turns', () => {
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
});
