// The Topics view's header, the status bar and the context keys its welcome content shows by
// (package.json viewsWelcome). The view never gets a `message`: VS Code shows welcome content
// only for an empty tree without one, so a message is what kept the welcome from ever showing.
import * as vscode from 'vscode';
import type { ServerState } from './connection';
import type { ListTopicsResult } from './protocol';
import type { BudgetStatus, TopicCounts } from './statusBar';
import { budgetDescription } from './topicTree';

/** Context keys read by the viewsWelcome `when` clauses. */
export const CONTEXT_KEYS = {
  server: 'topicForest.server',           // ServerState
  noChatModel: 'topicForest.noChatModel', // neither topicForest.chatModel nor topicForest.models names one
  chatVisible: 'topicForest.chatVisible', // the chat view is open (chatViewProvider.ts): no "Open Chat"
} as const;

export function setContext(key: string, value: unknown): void {
  void vscode.commands.executeCommand('setContext', key, value);
}

/** The counts a listTopics result gives, if the server says which topics are sent. */
export function topicCounts(result: ListTopicsResult): TopicCounts | undefined {
  const { rendered, omittedTopics, threadMessages } = result as Partial<ListTopicsResult>;
  if (!Array.isArray(rendered)) return undefined;
  return { sent: rendered.length, noRoom: omittedTopics?.length ?? 0,
    topicTokens: rendered.reduce((sum, t) => sum + t.tokens, 0), threadMessages };
}

export class TopicsViewState {
  constructor(
    private readonly view: { description?: string },
    private readonly status: Pick<BudgetStatus, 'update' | 'serverState'>,
  ) {}

  loaded(result: ListTopicsResult): void {
    this.view.description = budgetDescription(result.used, result.budget);
    this.status.update(result.used, result.budget, topicCounts(result));
  }

  serverState(state: ServerState): void {
    this.status.serverState(state);
    if (state === 'failed') this.view.description = undefined;
    setContext(CONTEXT_KEYS.server, state);
  }

  /** Whether the chat has a model to pick (models.ts `modelChoices`). */
  hasModel(any: boolean): void {
    setContext(CONTEXT_KEYS.noChatModel, !any);
  }
}
