// Topic actions from the tree's context menu (and a few palette commands).
import * as vscode from 'vscode';
import type { Connection } from './connection';
import { describeError, errorCode } from './errors';
import { PREVIEW_SCHEME, previewUri, topicIdFromUri } from './preview';
import { ErrorCodes, type RequestMethod, type Topic } from './protocol';
import type { Node, TopicTreeProvider } from './topicTree';

/** Context-menu commands get the tree node; preview links pass a bare topic id. */
export type TopicArg = Node | number | undefined;

export function topicIdOf(arg: TopicArg): number | undefined {
  if (typeof arg === 'number') return arg;
  if (!arg) return undefined;
  return arg.kind === 'topic' ? arg.topic.id : arg.topicId;
}

type TopicRequest = Extract<RequestMethod,
  'topicForest/dropTopic' | 'topicForest/restoreTopic' | 'topicForest/pinTopic' |
  'topicForest/expandTopic' | 'topicForest/collapseTopic'>;

/** Command id -> the request it sends and any extra params. */
export const TOPIC_ACTIONS: Record<string, { method: TopicRequest; extra?: { pinned: boolean } }> = {
  'topicForest.dropTopic': { method: 'topicForest/dropTopic' },
  'topicForest.restoreTopic': { method: 'topicForest/restoreTopic' },
  'topicForest.pinTopic': { method: 'topicForest/pinTopic', extra: { pinned: true } },
  'topicForest.unpinTopic': { method: 'topicForest/pinTopic', extra: { pinned: false } },
  'topicForest.expandTopic': { method: 'topicForest/expandTopic' },
  'topicForest.collapseTopic': { method: 'topicForest/collapseTopic' },
};

/** What an expand or pin did to the next request, when it is more than the user asked for:
 *  an expanded topic that does not fit whole, topics pushed out for lack of room. */
export function reshapeMessage(result: { topic: Topic; messages?: unknown[]; pushedOut?: number[] },
  listed: readonly Topic[]): string | undefined {
  const { topic, messages, pushedOut = [] } = result;
  const parts: string[] = [];
  if (topic.expanded && messages && messages.length < topic.messageCount) {
    parts.push(`The next request carries ${messages.length} of the ${topic.messageCount} original ` +
      `messages of "${topic.title}" (its opening question first): no room for more.`);
  }
  if (pushedOut.length) {
    const titles = pushedOut.map((id) => `"${listed.find((t) => t.id === id)?.title ?? `topic ${id}`}"`);
    parts.push(`No room left in the next request for ${titles.join(', ')}.`);
  }
  return parts.length ? parts.join(' ') : undefined;
}

export class TopicCommands {
  constructor(private readonly connection: Connection, private readonly tree: TopicTreeProvider) {}

  register(): vscode.Disposable[] {
    const subs = Object.entries(TOPIC_ACTIONS).map(([id, action]) =>
      vscode.commands.registerCommand(id, (arg: TopicArg) => this.act(action.method, arg, action.extra)));
    subs.push(
      vscode.commands.registerCommand('topicForest.previewTopic', (arg: TopicArg) => this.preview(arg)),
      vscode.commands.registerCommand('topicForest.copySummary', (arg: TopicArg) => this.copySummary(arg)),
      vscode.commands.registerCommand('topicForest.refreshTopics', () => this.tree.refresh(0)),
    );
    return subs;
  }

  async act(method: TopicRequest, arg: TopicArg, extra?: { pinned: boolean }): Promise<Topic | undefined> {
    const topicId = topicIdOf(arg);
    if (topicId === undefined) return undefined;
    try {
      const threadId = this.tree.currentThread();
      const result = method === 'topicForest/expandTopic' || method === 'topicForest/pinTopic'
        ? await this.connection.request(method, { topicId, threadId, ...extra })
        : await this.connection.request(method, { topicId });
      const said = reshapeMessage(result, this.tree.snapshot?.topics ?? []);
      if (said) void vscode.window.showInformationMessage(said);
      return result.topic;
    } catch (error) {
      await this.showError(error);
      return undefined;
    } finally {
      this.tree.refresh(0);
    }
  }

  /** One topic, one preview tab: from the menu, a message row or a link alike. VS Code's own
   *  Markdown preview renders the read-only document (its model and user text stays fenced);
   *  where that preview is not available, the document itself is shown. */
  async preview(arg: TopicArg): Promise<void> {
    const topicId = topicIdOf(arg);
    if (topicId === undefined) return;
    try {
      const uri = this.previewUriOf(topicId, arg);
      const doc = await vscode.workspace.openTextDocument(uri);
      try {
        await vscode.commands.executeCommand('markdown.showPreview', uri);
      } catch {
        await vscode.window.showTextDocument(doc, { preview: true });
      }
    } catch (error) {
      await this.showError(error);
    }
  }

  /** The open preview of the topic if there is one (its title may have changed since), else
   *  one named after the topic's title, whichever way the preview was asked for. */
  private previewUriOf(topicId: number, arg: TopicArg): vscode.Uri {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === PREVIEW_SCHEME &&
      topicIdFromUri(d.uri) === topicId);
    if (open) return open.uri;
    const title = typeof arg === 'object' && arg.kind === 'topic' ? arg.topic.title
      : this.tree.snapshot?.topics.find((t) => t.id === topicId)?.title ?? '';
    return previewUri({ id: topicId, title });
  }

  async copySummary(arg: TopicArg): Promise<void> {
    const topicId = topicIdOf(arg);
    if (topicId === undefined) return;
    try {
      const { topic } = await this.connection.request('topicForest/previewTopic', { topicId });
      if (!topic.summary) {
        void vscode.window.showInformationMessage(
          `Topic "${topic.title}" has no summary yet; it is being written in the background.`);
        return;
      }
      await vscode.env.clipboard.writeText(topic.summary);
      vscode.window.setStatusBarMessage('Topic summary copied', 2000);
    } catch (error) {
      await this.showError(error);
    }
  }

  private async showError(error: unknown): Promise<void> {
    if (errorCode(error) === ErrorCodes.UnknownTopic) this.tree.refresh(0);
    const view = describeError(error);
    const picked = await vscode.window.showErrorMessage(`Topic Forest: ${view.message}. ${view.hint}`,
      ...view.actions.map((a) => a.label));
    const action = view.actions.find((a) => a.label === picked);
    if (action) await vscode.commands.executeCommand(ERROR_ACTION_COMMANDS[action.id]);
  }
}

export const ERROR_ACTION_COMMANDS = {
  openSettings: 'topicForest.openSettings',
  showLog: 'topicForest.showLog',
  restartServer: 'topicForest.restartServer',
  configureModel: 'topicForest.configureModel',
} as const;
