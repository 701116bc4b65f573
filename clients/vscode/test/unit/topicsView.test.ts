import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import { fn, mocked } from 'jest-mock';
import * as vscode from 'vscode';
import { clearAllMocks } from '../mocks/vscode';
import pkg from '../../package.json';
import { CONTEXT_KEYS, topicCounts, TopicsViewState } from '../../src/topicsView';
import { makeTopic } from './fakes';

function setup() {
  const view: { description?: string; message?: string } = {};
  const status = { update: fn(), serverState: fn() };
  return { view, status, state: new TopicsViewState(view, status) };
}

const contextSet = () => mocked(vscode.commands.executeCommand).mock.calls
  .filter(([c]) => c === 'setContext').map(([, key, value]): unknown[] => [key, value]);

describe('the Topics view header, status bar and welcome keys', () => {
  beforeEach(() => clearAllMocks());

  it('header and status bar show the thread\'s next request; an empty tree leaves room for the welcome', () => {
    const { view, status, state } = setup();
    state.loaded({ topics: [], budget: 2048, used: 1587, threadId: 't', rendered: [], omittedTopics: [],
      threadMessages: 6 });
    expect(view.description).toBe('1.6k / 2k tokens');
    expect(status.update).toHaveBeenCalledWith(1587, 2048, { sent: 0, noRoom: 0, topicTokens: 0, threadMessages: 6 });
    // VS Code shows welcome content only for an empty tree without a message
    expect(view.message).toBeUndefined();
  });

  it('counts topics sent and left out for lack of room; none from a server that does not say', () => {
    const topics = [makeTopic({ id: 1 }), makeTopic({ id: 2 })];
    expect(topicCounts({ topics, budget: 1, used: 1, threadId: 't', rendered: [{ id: 1, mode: 'summary', tokens: 3 },
      { id: 2, mode: 'verbatim', tokens: 5 }], omittedTopics: [3], threadMessages: 0 }))
      .toEqual({ sent: 2, noRoom: 1, topicTokens: 8, threadMessages: 0 });
    expect(topicCounts({ topics, budget: 1, used: 1 } as never)).toBeUndefined();
  });

  it('sets the context keys the welcome content is shown by', () => {
    const { view, status, state } = setup();
    state.serverState('failed');
    state.hasModel(false);
    state.hasModel(true);
    expect(status.serverState).toHaveBeenCalledWith('failed');
    expect(view.description).toBeUndefined();
    expect(contextSet()).toEqual([[CONTEXT_KEYS.server, 'failed'], [CONTEXT_KEYS.noChatModel, true],
      [CONTEXT_KEYS.noChatModel, false]]);
  });

  it('every welcome entry is for the Topics view, shown by keys the extension sets, one per server state', () => {
    const welcome = pkg.contributes.viewsWelcome;
    const parts = (when: string) => when.split('&&').map((part) => {
      const m = /^\s*(!?)([\w.]+)\s*(?:(==|!=)\s*(\w+))?\s*$/.exec(part);
      if (!m) throw new Error(`unsupported when clause: ${part}`);
      return { not: m[1] === '!', key: m[2]!, op: m[3], rhs: m[4] };
    });
    for (const entry of welcome) {
      expect(entry.view).toBe('topicForest.topics');
      for (const { key } of parts(entry.when)) expect(Object.values(CONTEXT_KEYS)).toContain(key);
    }
    const shown = (server: string, noChatModel = false, chatVisible = false) => welcome.filter((e) =>
      parts(e.when).every(({ not, key, op, rhs }) => {
        const value = key === CONTEXT_KEYS.server ? server : key === CONTEXT_KEYS.noChatModel ? noChatModel : chatVisible;
        return op === '==' ? value === rhs : op === '!=' ? value !== rhs : Boolean(value) !== not;
      })).map((e) => e.contents);
    expect(shown('running')).toEqual([expect.stringContaining('No topics yet'),
      '[Open Chat](command:topicForest.chat.focus)']);
    expect(shown('running', true)[2]).toContain('[Configure Model](command:topicForest.configureModel)');
    // the chat is open: no offer to open it
    expect(shown('running', false, true)).toEqual([expect.stringContaining('No topics yet')]);
    expect(shown('running', true, true).join('\n')).not.toContain('Open Chat');
    expect(shown('failed')).toEqual([expect.stringContaining('[Restart Server](command:topicForest.restartServer)')]);
    expect(shown('starting')).toEqual([expect.stringContaining('Starting')]);
  });
});
