import { describe, it } from 'node:test';
import { expect } from 'expect';
import { fn } from 'jest-mock';
import { MarkdownString, ThemeIcon, TreeItemCollapsibleState } from 'vscode';
import {
  budgetDescription, messageItem, topicContextValue, topicDescription, topicItem, TopicTreeProvider,
} from '../../src/topicTree';
import { FakeConnection, makeTopic } from './fakes';

describe('topic tree items', () => {
  for (const [state, contextValue, icon] of [
    [{}, 'topic', 'comment-discussion'],
    [{ pinned: true }, 'topic.pinned', 'pinned'],
    [{ expanded: true }, 'topic.expanded', 'unfold'],
    [{ pinned: true, expanded: true }, 'topic.pinned.expanded', 'pinned'],
    [{ dropped: true }, 'topic.dropped', 'circle-slash'],
    [{ dropped: true, pinned: true, expanded: true }, 'topic.dropped', 'circle-slash'],
    [{ pending: true }, 'topic', 'sync~spin'],
  ] as const) {
    it(`state ${JSON.stringify(state)} -> contextValue ${contextValue}, icon ${icon}`, () => {
      const topic = makeTopic(state);
      expect(topicContextValue(topic)).toBe(contextValue);
      const item = topicItem(topic);
      expect(item.contextValue).toBe(contextValue);
      expect((item.iconPath as ThemeIcon).id).toBe(icon);
    });
  }

  it('shows title, message count, tokens and states; summary in the tooltip', () => {
    const item = topicItem(makeTopic({ pinned: true, pending: true }));
    expect(item.label).toBe('Parser errors in tokenize()');
    expect(item.id).toBe('topic-7');
    expect(item.collapsibleState).toBe(TreeItemCollapsibleState.Collapsed);
    expect(item.description).toBe('4 msgs · 1.5k tok · pinned · summary pending');
    const tooltip = (item.tooltip as MarkdownString).value;
    expect(tooltip).toContain('tokenize\\(\\) in lexer\\.py');
    expect(tooltip).toContain('src/lexer\\.py');
  });

  it('says a summary is pending when there is none', () => {
    const tooltip = (topicItem(makeTopic({ summary: null, pending: true })).tooltip as MarkdownString).value;
    expect(tooltip).toContain('No summary yet');
    expect(topicDescription(makeTopic({ messageCount: 1, sourceTokens: 12 }))).toBe('1 msg · 12 tok');
  });

  it('escapes markdown in titles and summaries (tooltips cannot be forged)', () => {
    const tooltip = (topicItem(makeTopic({ title: '[x](command:evil)', summary: '**b**' })).tooltip as MarkdownString).value;
    expect(tooltip).not.toContain('](command:evil)');
    expect(tooltip).toContain('\\*\\*b\\*\\*');
  });

  it('message children are one-line excerpts that open the preview', () => {
    const item = messageItem({ kind: 'message', topicId: 7, message: {
      id: 3, threadId: 't', role: 'user', content: 'line one\nline two ' + 'x'.repeat(200),
      timestamp: 1_700_000_000, tokens: 60, cancelled: false, attachments: [] } });
    expect((item.label as string)).toMatch(/^You: line one line two x+…$/);
    expect((item.label as string).length).toBeLessThanOrEqual(75);
    expect(item.contextValue).toBe('topicMessage');
    expect(item.command?.command).toBe('topicForest.previewTopic');
    expect(item.command?.arguments).toEqual([7]);
  });

  it('header shows budget use', () => {
    expect(budgetDescription(812, 1024)).toBe('812 / 1k tokens');
    expect(budgetDescription(2345, 8192)).toBe('2.3k / 8.2k tokens');
  });
});

describe('TopicTreeProvider', () => {
  it('lists topics, reports the budget, and loads messages as children', async () => {
    const topics = [makeTopic(), makeTopic({ id: 9, title: 'CI caching', dropped: true })];
    const conn = new FakeConnection((method) => {
      if (method === 'topicForest/listTopics') return { topics, budget: 1024, used: 600 };
      if (method === 'topicForest/previewTopic') {
        return { topic: topics[0], messages: [{ id: 1, threadId: 't', role: 'assistant',
          content: 'Use re.finditer', timestamp: 1, tokens: 5, cancelled: false, attachments: [] }] };
      }
      throw new Error(`unexpected ${method}`);
    });
    const tree = new TopicTreeProvider(conn);
    const loaded = fn();
    tree.onDidLoad(loaded);
    const roots = await tree.getChildren();
    expect(roots.map((n) => n.kind === 'topic' && n.topic.id)).toEqual([7, 9]);
    expect(loaded).toHaveBeenCalledWith({ topics, budget: 1024, used: 600 });
    const children = await tree.getChildren(roots[0]);
    expect(conn.sent.at(-1)).toMatchObject({ method: 'topicForest/previewTopic', params: { topicId: 7 } });
    expect(children).toHaveLength(1);
    expect((tree.getTreeItem(children[0]!).label as string)).toBe('Assistant: Use re.finditer');
    tree.dispose();
  });

  it('asks nothing while the server is down, and survives request errors', async () => {
    const conn = new FakeConnection(() => Promise.reject(new Error('boom')));
    conn.state = 'failed';
    const tree = new TopicTreeProvider(conn);
    expect(await tree.getChildren()).toEqual([]);
    expect(conn.sent).toHaveLength(0);
    conn.state = 'running';
    expect(await tree.getChildren()).toEqual([]);
    expect(tree.error).toBe('boom');
  });

  it('coalesces refresh bursts into one tree change', async () => {
    const tree = new TopicTreeProvider(new FakeConnection());
    const fired = fn();
    tree.onDidChangeTreeData(fired);
    tree.refresh(10);
    tree.refresh(10);
    tree.refresh(10);
    await new Promise((r) => setTimeout(r, 40));
    expect(fired).toHaveBeenCalledTimes(1);
  });
});
