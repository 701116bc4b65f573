import { describe, it } from 'node:test';
import { expect } from 'expect';
import { fn } from 'jest-mock';
import { MarkdownString, ThemeIcon, TreeItemCollapsibleState } from 'vscode';
import type { ListTopicsResult } from '../../src/protocol';
import {
  budgetDescription, displayPath, messageItem, type Placement, placements, placementText, ROW_CHARS,
  topicContextValue,
  topicDescription, topicItem, TopicTreeProvider,
} from '../../src/topicTree';
import { FakeConnection, makeTopic } from './fakes';

const SENT: Placement = { kind: 'sent', mode: 'summary', tokens: 120, rank: 1 };

describe('topic tree items', () => {
  for (const [state, contextValue, icon] of [
    [{}, 'topic', 'circle-filled'],
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
      const item = topicItem(topic, topic.dropped ? { kind: 'dropped' } : SENT);
      expect(item.contextValue).toBe(contextValue);
      expect((item.iconPath as ThemeIcon).id).toBe(icon);
    });
  }

  it('shows what the topic costs in the next request and how it goes in; source size in the tooltip', () => {
    const item = topicItem(makeTopic({ pinned: true, pending: true }), SENT);
    expect(item.label).toBe('Parser errors i…');
    expect(item.id).toBe('topic-7');
    expect(item.collapsibleState).toBe(TreeItemCollapsibleState.Collapsed);
    expect(item.description).toBe('120 tok');
    const tooltip = (item.tooltip as MarkdownString).value;
    expect(tooltip).toContain('Parser errors in tokenize\\(\\)');
    expect(tooltip).toContain('In the next request \\(\\#2\\): its summary, 120 tokens');
    expect(tooltip).toContain('Source: 4 messages, 1530 tokens; summary 40 tokens · pinned, summary pending');
    expect(tooltip).toContain('tokenize\\(\\) in lexer\\.py');
    expect(tooltip).toContain('src/lexer\\.py');
    // what a screen reader says (and the e2e reads): title, place in the request, source size
    expect(item.accessibilityInformation?.label).toBe('Parser errors in tokenize(): In the next request (#2): ' +
      'its summary, 120 tokens. Source: 4 messages, 1530 tokens; pinned, summary pending.');
  });

  for (const [placement, description, tooltip, icon] of [
    [{ kind: 'sent', mode: 'summary+messages', tokens: 2345, rank: 0 }, '2.3k tok +msgs',
      'its summary plus the messages it does not cover yet, 2345 tokens', 'circle-filled'],
    [{ kind: 'sent', mode: 'expanded', tokens: 900, rank: 0 }, '900 tok full', 'all its original messages', 'circle-filled'],
    [{ kind: 'sent', mode: 'messages', tokens: 80, rank: 0 }, '80 tok msgs', 'its messages \\(no summary yet\\)', 'circle-filled'],
    [{ kind: 'sent', mode: 'recalled', tokens: 80, rank: 0 }, '80 tok recall', 'recalled for the query', 'circle-filled'],
    [{ kind: 'noRoom' }, 'no room', 'Not sent: no room left in the history budget', 'circle-large-outline'],
    [{ kind: 'notSent' }, 'not sent', 'nothing of it to send yet', 'circle-large-outline'],
    [{ kind: 'dropped' }, 'dropped', 'left out of every request until restored', 'circle-slash'],
    [{ kind: 'unknown' }, '4 msgs · 1.5k tok', 'does not say whether', 'comment-discussion'],
  ] as [Placement, string, string, string][]) {
    it(`marks a topic ${placement.kind} ${'mode' in placement ? placement.mode : ''} as "${description}"`, () => {
      const item = topicItem(makeTopic({ dropped: placement.kind === 'dropped' }), placement);
      expect(item.description).toBe(description);
      expect((item.tooltip as MarkdownString).value).toContain(tooltip);
      expect((item.iconPath as ThemeIcon).id).toBe(icon);
    });
  }

  it('keeps the row short enough for a 300 px sidebar: the title gives way, never the figure', () => {
    const title = 'A very long topic title about the CI pipeline cache and pytest-xdist';
    for (const placement of [{ kind: 'sent', mode: 'summary+messages', tokens: 12_345, rank: 3 },
      { kind: 'sent', mode: 'summary', tokens: 80, rank: 0 }, { kind: 'noRoom' }, { kind: 'dropped' }] as Placement[]) {
      const item = topicItem(makeTopic({ title, dropped: placement.kind === 'dropped' }), placement);
      expect(`${item.label as string} ${item.description as string}`.length).toBe(ROW_CHARS);
      expect(item.label).toMatch(/^A very .*…$/);
      expect((item.tooltip as MarkdownString).value).toContain('pytest\\-xdist');
    }
    expect(topicItem(makeTopic({ title: 'CI' }), SENT).label).toBe('CI');
  });

  it('says a summary is pending when there is none', () => {
    const tooltip = (topicItem(makeTopic({ summary: null, pending: true }), SENT).tooltip as MarkdownString).value;
    expect(tooltip).toContain('No summary yet');
    expect(topicDescription(makeTopic({ messageCount: 1, sourceTokens: 12 }), { kind: 'unknown' })).toBe('1 msg · 12 tok');
  });

  it('shows file paths under the workspace folder relative to it, others as they are', () => {
    expect(displayPath('/home/me/proj/src/app.py', ['/home/me/proj'])).toBe('src/app.py');
    expect(displayPath('/home/me/proj/src/app.py', ['/home/me/proj/'])).toBe('src/app.py');
    expect(displayPath('C:\\work\\proj\\src\\app.py', ['C:\\work\\proj'])).toBe('src/app.py');
    expect(displayPath('/home/me/project2/x.py', ['/home/me/proj'])).toBe('/home/me/project2/x.py');
    expect(displayPath('/usr/lib/python3.11/json/decoder.py', ['/home/me/proj'])).toBe('/usr/lib/python3.11/json/decoder.py');
    expect(displayPath('src/lexer.py', ['/home/me/proj'])).toBe('src/lexer.py');
    const tooltip = (topicItem(makeTopic({ files: ['/ws/src/app.py', 'lib/x.py'] }), SENT,
      ['/ws']).tooltip as MarkdownString).value;
    expect(tooltip).toContain('Files: src/app\\.py, lib/x\\.py');
  });

  it('escapes markdown in titles and summaries (tooltips cannot be forged)', () => {
    const tooltip = (topicItem(makeTopic({ title: '[x](command:evil)', summary: '**b**' }), SENT).tooltip as MarkdownString).value;
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

describe('placements: where each topic stands in the next request', () => {
  const result = (over: Partial<ListTopicsResult>): ListTopicsResult => ({
    topics: [makeTopic({ id: 1 }), makeTopic({ id: 2 }), makeTopic({ id: 3, dropped: true }), makeTopic({ id: 4 })],
    budget: 2048, used: 1587, threadId: 't1',
    rendered: [{ id: 2, mode: 'expanded', tokens: 700 }, { id: 1, mode: 'summary', tokens: 90 }],
    omittedTopics: [4], threadMessages: 2, ...over,
  });

  it('sent in rank order with mode and tokens, no room, dropped', () => {
    const placed = placements(result({}));
    expect(placed.get(2)).toEqual({ kind: 'sent', mode: 'expanded', tokens: 700, rank: 0 });
    expect(placed.get(1)).toEqual({ kind: 'sent', mode: 'summary', tokens: 90, rank: 1 });
    expect(placed.get(3)).toEqual({ kind: 'dropped' });
    expect(placed.get(4)).toEqual({ kind: 'noRoom', takenBy: [makeTopic({ id: 2 }).title] });
  });

  it('a topic with no room says which expanded or pinned topics took it', () => {
    const placed = placements(result({}));
    const noRoom = placed.get(4);
    expect(noRoom && placementText(noRoom)).toContain('(expanded or pinned) takes most of the room');
    const plain = placements(result({ rendered: [{ id: 1, mode: 'summary', tokens: 90 }] })).get(4);
    expect(plain).toEqual({ kind: 'noRoom' });
    expect(plain && placementText(plain)).toBe('Not sent: no room left in the history budget for it.');
  });

  it('a live topic in neither list is not sent; a server that does not say gives no marks', () => {
    expect(placements(result({ omittedTopics: [] })).get(4)).toEqual({ kind: 'notSent' });
    const old = result({});
    delete (old as Partial<ListTopicsResult>).rendered;
    delete (old as Partial<ListTopicsResult>).omittedTopics;
    expect([...placements(old).values()].map((p) => p.kind)).toEqual(['unknown', 'unknown', 'dropped', 'unknown']);
  });
});

describe('TopicTreeProvider', () => {
  it('lists topics, reports the budget, and loads messages as children', async () => {
    const topics = [makeTopic(), makeTopic({ id: 9, title: 'CI caching', dropped: true })];
    const listed = { topics, budget: 1024, used: 600, threadId: 'thread-a', rendered: [{ id: 7, mode: 'summary', tokens: 40 }],
      omittedTopics: [] };
    const conn = new FakeConnection((method) => {
      if (method === 'topicForest/listTopics') return listed;
      if (method === 'topicForest/previewTopic') {
        return { topic: topics[0], messages: [{ id: 1, threadId: 't', role: 'assistant',
          content: 'Use re.finditer', timestamp: 1, tokens: 5, cancelled: false, attachments: [] }] };
      }
      throw new Error(`unexpected ${method}`);
    });
    let thread = 'thread-a';
    const tree = new TopicTreeProvider(conn, () => thread);
    const loaded = fn();
    tree.onDidLoad(loaded);
    const roots = await tree.getChildren();
    expect(conn.sent[0]).toMatchObject({ method: 'topicForest/listTopics', params: { threadId: 'thread-a' } });
    expect(roots.map((n) => n.kind === 'topic' && n.topic.id)).toEqual([7, 9]);
    expect(roots.map((n) => n.kind === 'topic' && tree.getTreeItem(n).description)).toEqual(['40 tok', 'dropped']);
    expect(loaded).toHaveBeenCalledWith(listed);
    const children = await tree.getChildren(roots[0]);
    expect(conn.sent.at(-1)).toMatchObject({ method: 'topicForest/previewTopic', params: { topicId: 7 } });
    expect(children).toHaveLength(1);
    expect((tree.getTreeItem(children[0]!).label as string)).toBe('Assistant: Use re.finditer');
    thread = 'thread-b'; // the chat switched threads: the next load is about that thread
    await tree.getChildren();
    expect(conn.sent.at(-1)).toMatchObject({ method: 'topicForest/listTopics', params: { threadId: 'thread-b' } });
    tree.dispose();
  });

  it('asks nothing while the server is down, and survives request errors', async () => {
    const conn = new FakeConnection(() => Promise.reject(new Error('boom')));
    conn.state = 'failed';
    const tree = new TopicTreeProvider(conn, () => 't');
    expect(await tree.getChildren()).toEqual([]);
    expect(conn.sent).toHaveLength(0);
    conn.state = 'running';
    expect(await tree.getChildren()).toEqual([]);
    expect(tree.error).toBe('boom');
  });

  it('coalesces refresh bursts into one tree change', async () => {
    const tree = new TopicTreeProvider(new FakeConnection(), () => 't');
    const fired = fn();
    tree.onDidChangeTreeData(fired);
    tree.refresh(10);
    tree.refresh(10);
    tree.refresh(10);
    await new Promise((r) => setTimeout(r, 40));
    expect(fired).toHaveBeenCalledTimes(1);
  });
});
