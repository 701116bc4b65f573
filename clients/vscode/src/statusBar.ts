// Status bar: the history tokens the current thread's next request carries (listTopics {threadId})
// against the budget; click focuses the tree.
import * as vscode from 'vscode';
import type { ServerState } from './connection';
import { compactTokens } from './format';

export function budgetText(used: number, budget: number, attached = 0): string {
  return `$(layers) ${compactTokens(used)}/${compactTokens(budget)}${attached ? ` +${compactTokens(attached)}` : ''}`;
}

/** How many topics the next request carries and how many it leaves out for lack of room; what
 * the topics cost in it, and how many of the thread's own messages it carries (0: a new thread). */
export interface TopicCounts {
  sent: number;
  noRoom: number;
  topicTokens?: number;
  threadMessages?: number;
}

const topics = (n: number) => `${n} topic${n === 1 ? '' : 's'}`;

/** What the next request carries; `attached`: the pending attachments' estimated tokens. */
export function budgetTooltip(used: number, budget: number, counts?: TopicCounts, attached = 0): string {
  const extra = attached ? ` + ${attached} tokens of attachments with the next message (estimated; ` +
    'outside the history budget).' : '';
  return `Topic Forest: ${historyCarried(used, budget, counts)}${extra} Click to show topics.`;
}

function historyCarried(used: number, budget: number, counts?: TopicCounts): string {
  const pct = budget > 0 ? Math.round((100 * used) / budget) : 0;
  const noRoom = counts?.noRoom ? `; ${topics(counts.noRoom)} left out for lack of room` : '';
  const carries = `${used} of ${budget} history tokens (${pct}%)`;
  if (counts?.threadMessages === 0) {  // a new thread is not full: it carries the workspace's memory
    return `a new thread starts with the workspace's topics: ${topics(counts.sent)}, ` +
      `${counts.topicTokens ?? used} tokens${noRoom}. Its next request carries ${carries}; its own ` +
      'messages join them as you chat, within the same budget.';
  }
  const what = counts ? `${topics(counts.sent)} and the current thread's recent messages${noRoom}`
    : 'topics and the current thread\'s recent messages';
  return `the next request carries ${carries}: ${what}.`;
}

export class BudgetStatus implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem('topicForest.budget',
      vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Topic Forest Budget';
    this.item.command = 'topicForest.topics.focus';
    this.item.text = '$(layers) Topic Forest';
    this.item.show();
  }

  private last: { used: number; budget: number; counts?: TopicCounts } | undefined;
  private attached = 0;

  update(used: number, budget: number, counts?: TopicCounts): void {
    this.last = { used, budget, counts };
    this.item.text = budgetText(used, budget, this.attached);
    this.item.tooltip = budgetTooltip(used, budget, counts, this.attached);
    this.item.backgroundColor = undefined;
  }

  /** The chat's pending attachments: outside the history budget, shown beside it. */
  attachments(tokens: number): void {
    this.attached = tokens;
    if (this.last) this.update(this.last.used, this.last.budget, this.last.counts);
  }

  serverState(state: ServerState): void {
    if (state === 'failed') {
      this.item.text = '$(warning) Topic Forest';
      this.item.tooltip = 'Topic Forest: the server is not running. Click to restart it.';
      this.item.command = 'topicForest.restartServer';
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    } else {
      this.item.command = 'topicForest.topics.focus';
      this.item.backgroundColor = undefined;
      if (state === 'starting') this.item.text = '$(sync~spin) Topic Forest';
    }
  }

  dispose(): void {
    this.item.dispose();
  }
}
