import { describe, it } from 'node:test';
import { expect } from 'expect';
import { mocked } from 'jest-mock';
import * as vscode from 'vscode';
import { clearAllMocks } from '../mocks/vscode';
import { contextMarkdown, contextUri, ContextViewProvider, threadIdFromUri } from '../../src/contextView';
import type { RenderContextResult } from '../../src/protocol';
import { FakeConnection, makeTopic } from './fakes';

const RENDER: RenderContextResult = {
  messages: [
    { role: 'system', content: 'Memory of earlier conversation\n## Topic: Parser errors\n| summary' },
    { role: 'user', content: '# not a heading\n```\nx\n```' },
    { role: 'assistant', content: 'Use re.finditer' },
  ],
  tokens: 1587, budget: 2048, topics: [{ id: 7, mode: 'summary+messages', tokens: 300 }],
  omittedTopics: [9], hotMessageIds: [31, 32], fallback: false,
};
const TOPICS = [makeTopic({ id: 7, title: 'Parser errors' }), makeTopic({ id: 9, title: 'CI [caching](x)' }),
  makeTopic({ id: 11, title: 'Docker', dropped: true })];

describe('what the model sees', () => {
  it('round-trips the thread id through the uri', () => {
    const uri = contextUri('a b&c');
    expect(uri.scheme).toBe('topicforest-context');
    expect(uri.path).toBe('/What the Model Sees.md');
    expect(threadIdFromUri(uri)).toBe('a b&c');
    expect(() => threadIdFromUri(vscode.Uri.from({ scheme: 'topicforest-context', path: '/x' }))).toThrow();
  });

  it('shows the total, the topics sent and left out, and every message fenced', () => {
    const md = contextMarkdown('thread-1', RENDER, TOPICS);
    expect(md).toContain('**1587 of 2048 tokens** (77%), 3 messages');
    expect(md).toContain('## Topics sent (1)\n\n- Topic 7 · Parser errors — its summary plus the messages it does not cover yet, 300 tokens');
    expect(md).toContain('## Not sent: no room (1)\n\n- Topic 9 · CI caching (x)');
    expect(md).toContain('## Dropped (1)\n\n- Topic 11 · Docker');
    expect(md).toContain('### 1 · system\n\n```text\nMemory of earlier conversation\n## Topic: Parser errors\n| summary\n```');
    expect(md).toContain('### 2 · user\n\n````text\n# not a heading\n```\nx\n```\n````');
    // every message's text, exactly, in order
    let at = 0;
    for (const m of RENDER.messages) {
      at = md.indexOf(m.content, at);
      expect(at).toBeGreaterThan(0);
    }
    // no heading outside a fence but ours
    const outside = md.split(/^`{3,}text$[\s\S]*?^`{3,}$/m).join('').split('\n').filter((l) => l.startsWith('#'));
    expect(outside).toEqual(['# What the model sees', '## Topics sent (1)', '## Not sent: no room (1)',
      '## Dropped (1)', '## Messages (3)', '### 1 · system', '### 2 · user', '### 3 · assistant']);
  });

  it('says when the flat-summary fallback stands in for the topics, and when nothing is sent', () => {
    const md = contextMarkdown('t', { ...RENDER, topics: [], omittedTopics: [], fallback: true }, []);
    expect(md).toContain('a flat summary of the earlier conversation stands in');
    expect(md).toContain('## Topics sent (0)\n\n_None._');
  });

  it('asks the server for the thread\'s render and opens it read-only', async () => {
    clearAllMocks();
    const conn = new FakeConnection((method) => method === 'topicForest/renderContext' ? RENDER
      : method === 'topicForest/listThreads'
        ? { threads: [{ threadId: 'thread-1', messageCount: 3, lastTime: 1, title: 'Parser errors in `lexer`' }] }
        : { topics: TOPICS, budget: 2048, used: 1587, threadId: 'thread-1', rendered: RENDER.topics, omittedTopics: [9] });
    const provider = new ContextViewProvider(conn);
    const changed: string[] = [];
    provider.onDidChange((uri) => changed.push(uri.toString()));
    await provider.show('thread-1');
    const uri = mocked(vscode.workspace.openTextDocument).mock.calls[0]?.[0] as unknown as vscode.Uri;
    expect(uri.toString()).toBe(contextUri('thread-1').toString());
    expect(changed).toEqual([uri.toString()]); // an open view is read again
    const text = await provider.provideTextDocumentContent(uri);
    expect(conn.sent.map((s) => [s.method, s.params])).toEqual([
      ['topicForest/renderContext', { threadId: 'thread-1' }],
      ['topicForest/listTopics', { threadId: 'thread-1' }],
      ['topicForest/listThreads', {}],
    ]);
    expect(text).toBe(contextMarkdown('Parser errors in `lexer`', RENDER, TOPICS));
    // the thread by its title, not its id
    expect(text).toContain('The history the next chat request of the thread `Parser errors in  lexer ` carries');
    expect(text).not.toContain('thread-1');
    expect(vscode.window.showTextDocument).toHaveBeenCalled();
    provider.dispose();
  });
});
