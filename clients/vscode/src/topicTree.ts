// The topic tree: one item per topic (whether and how it goes into the next request, what it
// costs there, a summary tooltip), messages as children.
import * as vscode from 'vscode';
import type { Connection } from './connection';
import { compactTokens, excerpt, formatTime } from './format';
import type { ListTopicsResult, Message, Topic } from './protocol';
import { reshapeLines, reshapeMark } from './reshapes';

/** Where a topic stands in the next request for the current thread (listTopics {threadId}). */
export type Placement =
  | { kind: 'sent'; mode: string; tokens: number; rank: number }
  | { kind: 'noRoom'; takenBy?: string[] }  // titles of expanded or pinned topics sent instead
  | { kind: 'dropped' }
  | { kind: 'notSent' }   // live, but nothing of it in the render (e.g. nothing to show yet)
  | { kind: 'unknown' };  // a server older than listTopics' `rendered`

export type TopicNode = { kind: 'topic'; topic: Topic; placement: Placement };
export type MessageNode = { kind: 'message'; topicId: number; message: Message };
export type Node = TopicNode | MessageNode;

/** Each topic's place in the next request, from one listTopics result. */
export function placements(result: ListTopicsResult): Map<number, Placement> {
  const out = new Map<number, Placement>();
  // `rendered` is in the wire contract; a server that predates it (topicForest.python pointing
  // at an older install) gets no marks rather than wrong ones
  const known = Array.isArray((result as Partial<ListTopicsResult>).rendered);
  const sent = new Map(known ? result.rendered.map((t, rank) => [t.id, { ...t, rank }]) : []);
  const noRoom = new Set(known ? result.omittedTopics : []);
  const takenBy = result.topics.filter((t) => (sent.get(t.id)?.mode === 'expanded' || t.pinned) &&
    sent.has(t.id)).map((t) => t.title);
  for (const topic of result.topics) {
    const r = sent.get(topic.id);
    out.set(topic.id, topic.dropped ? { kind: 'dropped' }
      : !known ? { kind: 'unknown' }
        : r ? { kind: 'sent', mode: r.mode, tokens: r.tokens, rank: r.rank }
          : noRoom.has(topic.id) ? (takenBy.length ? { kind: 'noRoom', takenBy } : { kind: 'noRoom' })
            : { kind: 'notSent' });
  }
  return out;
}

/** Short marks of the render modes on a row (the usual one, a summary, has none) and what
 *  they mean (tooltip, context view). */
export const MODES: Record<string, { badge: string; meaning: string }> = {
  'summary': { badge: '', meaning: 'its summary' },
  'summary+messages': { badge: '+msgs', meaning: 'its summary plus the messages it does not cover yet' },
  'messages': { badge: 'msgs', meaning: 'its messages (no summary yet)' },
  'expanded': { badge: 'full', meaning: 'all its original messages (expanded)' },
  'recalled': { badge: 'recall', meaning: 'exchanges recalled for the query' },
};

export function modeBadge(mode: string): string {
  return MODES[mode]?.badge ?? mode;
}

export function modeMeaning(mode: string): string {
  return MODES[mode]?.meaning ?? mode;
}

/** `topic.dropped`, or `topic` with `.pinned` / `.expanded` suffixes (see package.json menus). */
export function topicContextValue(topic: Topic): string {
  if (topic.dropped) return 'topic.dropped';
  return `topic${topic.pinned ? '.pinned' : ''}${topic.expanded ? '.expanded' : ''}`;
}

/** The icon says whether the topic is in the next request (pinned and pending show as such). */
export function topicIcon(topic: Topic, placement: Placement): vscode.ThemeIcon {
  const dim = new vscode.ThemeColor('disabledForeground');
  if (topic.dropped) return new vscode.ThemeIcon('circle-slash', dim);
  if (topic.pending) return new vscode.ThemeIcon('sync~spin');
  if (placement.kind === 'noRoom' || placement.kind === 'notSent') return new vscode.ThemeIcon('circle-large-outline', dim);
  if (topic.pinned) return new vscode.ThemeIcon('pinned');
  if (topic.expanded) return new vscode.ThemeIcon('unfold');
  if (placement.kind === 'sent') return new vscode.ThemeIcon('circle-filled', new vscode.ThemeColor('charts.green'));
  return new vscode.ThemeIcon('comment-discussion');
}

export function topicStates(topic: Topic): string[] {
  const states: string[] = [];
  if (topic.dropped) states.push('dropped');
  if (topic.pinned) states.push('pinned');
  if (topic.expanded) states.push('expanded');
  if (topic.pending) states.push('summary pending');
  return states;
}

/** The row's short figure: what the topic costs in the next request and how it goes in, or why
 *  it is left out. The rest is in the tooltip. */
export function topicDescription(topic: Topic, placement: Placement): string {
  switch (placement.kind) {
    case 'sent': return [`${compactTokens(placement.tokens)} tok`, modeBadge(placement.mode)].filter(Boolean).join(' ');
    case 'noRoom': return 'no room';
    case 'dropped': return 'dropped';
    case 'notSent': return 'not sent';
    case 'unknown': return `${topic.messageCount} msg${topic.messageCount === 1 ? '' : 's'} · ` +
      `${compactTokens(topic.sourceTokens)} tok`;
  }
}

export function placementText(placement: Placement): string {
  switch (placement.kind) {
    case 'sent': return `In the next request (#${placement.rank + 1}): ${modeMeaning(placement.mode)}, ` +
      `${placement.tokens} tokens.`;
    case 'noRoom': return 'Not sent: no room left in the history budget for it.' + (placement.takenBy?.length
      ? ` ${placement.takenBy.map((t) => `"${t}"`).join(', ')} (expanded or pinned) take${placement.takenBy.length === 1 ? 's' : ''} ` +
        'most of the room: collapse or unpin to send this topic again.'
      : '');
    case 'dropped': return 'Dropped: left out of every request until restored.';
    case 'notSent': return 'Not in the next request: nothing of it to send yet.';
    case 'unknown': return 'This server does not say whether it is in the next request.';
  }
}

/** A file path as the user knows it: relative to the workspace folder it is under. */
export function displayPath(file: string, folders: readonly string[] = workspaceFolderPaths()): string {
  const norm = (p: string) => p.replace(/\\/g, '/').replace(/\/+$/, '');
  const path = norm(file);
  for (const folder of folders.map(norm)) {
    if (folder && path.startsWith(`${folder}/`)) return path.slice(folder.length + 1);
  }
  return file;
}

function workspaceFolderPaths(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
}

export function topicTooltip(topic: Topic, placement: Placement,
  folders?: readonly string[]): vscode.MarkdownString {
  const md = new vscode.MarkdownString();
  md.appendMarkdown('**');
  md.appendText(topic.title);
  md.appendMarkdown('**\n\n');
  md.appendText(placementText(placement));
  md.appendMarkdown('\n\n');
  if (topic.summary) md.appendText(topic.summary);
  else md.appendMarkdown('_No summary yet: it is being written in the background._');
  md.appendMarkdown('\n\n---\n\n');
  md.appendText(`Source: ${topic.messageCount} messages, ${topic.sourceTokens} tokens; ` +
    `summary ${topic.summaryTokens} tokens`);
  const states = topicStates(topic);
  if (states.length) md.appendText(` · ${states.join(', ')}`);
  if (topic.files.length) {
    md.appendMarkdown('\n\n');
    md.appendText(`Files: ${topic.files.slice(0, 8).map((f) => displayPath(f, folders)).join(', ')}`);
  }
  const changes = reshapeLines(topic);
  if (changes.length) {
    md.appendMarkdown('\n\n**Reshaped by new messages**\n\n');
    changes.forEach((line) => { md.appendMarkdown('- '); md.appendText(line); md.appendMarkdown('\n'); });
  }
  return md;
}

/** Characters of title and figure that a 300 px sidebar shows whole beside the inline actions
 *  (~7.5 px each, in every theme): the title gives way so the figure is never cut off; the
 *  tooltip has it all. */
export const ROW_CHARS = 24;

export function topicItem(topic: Topic, placement: Placement, folders?: readonly string[],
  now?: number): vscode.TreeItem {
  const mark = reshapeMark(topic, now);  // a recent split or merge shows on the row itself
  const description = [mark, topicDescription(topic, placement)].filter(Boolean).join(' · ');
  const item = new vscode.TreeItem(excerpt(topic.title || `Topic ${topic.id}`, ROW_CHARS - description.length - 1),
    vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `topic-${topic.id}`;
  item.description = description;
  item.tooltip = topicTooltip(topic, placement, folders);
  item.iconPath = topicIcon(topic, placement);
  item.contextValue = topicContextValue(topic);
  const states = topicStates(topic);
  item.accessibilityInformation = { label: `${topic.title}: ${placementText(placement)} ` +
    `Source: ${topic.messageCount} message${topic.messageCount === 1 ? '' : 's'}, ${topic.sourceTokens} tokens` +
    `${states.length ? `; ${states.join(', ')}` : ''}.${mark ? ` Recently ${mark === 'split' ? 'split off another topic' : 'merged with another topic'}.` : ''}` };
  return item;
}

export function messageItem(node: MessageNode): vscode.TreeItem {
  const { message } = node;
  const label = `${message.role === 'user' ? 'You' : 'Assistant'}: ${excerpt(message.content, 70)}`;
  const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
  item.id = `topic-${node.topicId}-msg-${message.id}`;
  item.description = formatTime(message.timestamp);
  item.tooltip = excerpt(message.content, 600);
  item.iconPath = new vscode.ThemeIcon(message.role === 'user' ? 'account' : 'hubot');
  item.contextValue = 'topicMessage';
  item.command = { command: 'topicForest.previewTopic', title: 'Preview Topic',
    arguments: [node.topicId] };
  return item;
}

/** The tree view's header text: tokens of the next request's history against the budget. */
export function budgetDescription(used: number, budget: number): string {
  return `${compactTokens(used)} / ${compactTokens(budget)} tokens`;
}

export class TopicTreeProvider implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  private readonly loaded = new vscode.EventEmitter<ListTopicsResult>();
  readonly onDidChangeTreeData = this.changed.event;
  /** Fires after every successful listTopics, for the status bar and the view header. */
  readonly onDidLoad = this.loaded.event;
  private last: ListTopicsResult | undefined;
  private pendingRefresh: ReturnType<typeof setTimeout> | undefined;
  private lastError: string | undefined;

  /** `thread`: the chat's current thread, whose next request the tree and budget describe. */
  constructor(private readonly connection: Connection, private readonly thread: () => string,
    private readonly log?: vscode.LogOutputChannel) {}

  get snapshot(): ListTopicsResult | undefined {
    return this.last;
  }

  /** The thread whose next request the tree describes. */
  currentThread(): string {
    return this.thread();
  }

  get error(): string | undefined {
    return this.lastError;
  }

  /** Coalesces bursts (a chat turn, a summary round) into one listTopics. */
  refresh(delayMs = 100): void {
    if (this.pendingRefresh) clearTimeout(this.pendingRefresh);
    this.pendingRefresh = setTimeout(() => {
      this.pendingRefresh = undefined;
      this.changed.fire(undefined);
    }, delayMs);
  }

  getTreeItem(node: Node): vscode.TreeItem {
    return node.kind === 'topic' ? topicItem(node.topic, node.placement) : messageItem(node);
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (this.connection.state !== 'running' && this.connection.state !== 'starting') return [];
    try {
      if (!node) {
        const result = await this.connection.request('topicForest/listTopics', { threadId: this.thread() });
        this.last = result;
        this.lastError = undefined;
        this.loaded.fire(result);
        const placed = placements(result);
        return result.topics.map((topic) => ({ kind: 'topic', topic,
          placement: placed.get(topic.id) ?? { kind: 'unknown' } }));
      }
      if (node.kind === 'topic') {
        const { messages } = await this.connection.request('topicForest/previewTopic',
          { topicId: node.topic.id });
        return messages.map((message) => ({ kind: 'message', topicId: node.topic.id, message }));
      }
    } catch (error) {
      this.lastError = String(error instanceof Error ? error.message : error);
      this.log?.warn(`topic tree: ${this.lastError}`);
    }
    return [];
  }

  dispose(): void {
    if (this.pendingRefresh) clearTimeout(this.pendingRefresh);
    this.changed.dispose();
    this.loaded.dispose();
  }
}
