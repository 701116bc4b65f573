// The topic tree: one item per topic (state icon, counts, summary tooltip), messages as children.
import * as vscode from 'vscode';
import type { Connection } from './connection';
import { compactTokens, excerpt, formatTime } from './format';
import type { ListTopicsResult, Message, Topic } from './protocol';

export type TopicNode = { kind: 'topic'; topic: Topic };
export type MessageNode = { kind: 'message'; topicId: number; message: Message };
export type Node = TopicNode | MessageNode;

/** `topic.dropped`, or `topic` with `.pinned` / `.expanded` suffixes (see package.json menus). */
export function topicContextValue(topic: Topic): string {
  if (topic.dropped) return 'topic.dropped';
  return `topic${topic.pinned ? '.pinned' : ''}${topic.expanded ? '.expanded' : ''}`;
}

export function topicIcon(topic: Topic): vscode.ThemeIcon {
  if (topic.dropped) return new vscode.ThemeIcon('circle-slash', new vscode.ThemeColor('disabledForeground'));
  if (topic.pending) return new vscode.ThemeIcon('sync~spin');
  if (topic.pinned) return new vscode.ThemeIcon('pinned');
  if (topic.expanded) return new vscode.ThemeIcon('unfold');
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

export function topicDescription(topic: Topic): string {
  const counts = `${topic.messageCount} msg${topic.messageCount === 1 ? '' : 's'} · ` +
    `${compactTokens(topic.sourceTokens)} tok`;
  return [counts, ...topicStates(topic)].join(' · ');
}

export function topicTooltip(topic: Topic): vscode.MarkdownString {
  const md = new vscode.MarkdownString();
  md.appendMarkdown('**');
  md.appendText(topic.title);
  md.appendMarkdown('**\n\n');
  if (topic.summary) md.appendText(topic.summary);
  else md.appendMarkdown('_No summary yet: it is being written in the background._');
  md.appendMarkdown('\n\n---\n\n');
  md.appendText(`${topic.messageCount} messages, ${topic.sourceTokens} source tokens, ` +
    `${topic.summaryTokens} summary tokens`);
  const states = topicStates(topic);
  if (states.length) md.appendText(` · ${states.join(', ')}`);
  if (topic.files.length) {
    md.appendMarkdown('\n\n');
    md.appendText(`Files: ${topic.files.slice(0, 8).join(', ')}`);
  }
  return md;
}

export function topicItem(topic: Topic): vscode.TreeItem {
  const item = new vscode.TreeItem(topic.title || `Topic ${topic.id}`,
    vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `topic-${topic.id}`;
  item.description = topicDescription(topic);
  item.tooltip = topicTooltip(topic);
  item.iconPath = topicIcon(topic);
  item.contextValue = topicContextValue(topic);
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

/** The tree view's header text: history tokens of the next request against the budget. */
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

  constructor(private readonly connection: Connection, private readonly log?: vscode.LogOutputChannel) {}

  get snapshot(): ListTopicsResult | undefined {
    return this.last;
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
    return node.kind === 'topic' ? topicItem(node.topic) : messageItem(node);
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (this.connection.state !== 'running' && this.connection.state !== 'starting') return [];
    try {
      if (!node) {
        const result = await this.connection.request('topicForest/listTopics', {});
        this.last = result;
        this.lastError = undefined;
        this.loaded.fire(result);
        return result.topics.map((topic) => ({ kind: 'topic', topic }));
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
