// ChatController (src/chatView.ts) besides a turn: history, threads, the header, attachments, links, focus.
import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import * as vscode from 'vscode';
import * as mock from '../mocks/vscode';
import { clearAllMocks } from '../mocks/vscode';
import type { ToWebview } from '../../src/chatMessages';
import type { ChatParams } from '../../src/protocol';
import { eventually } from '../eventually';
import { reply, setup, tick, userMessage } from './chatFixtures';

describe('chat controller: threads and the view', () => {
  beforeEach(() => {
    clearAllMocks();
    mock.window.activeTextEditor = undefined;
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
