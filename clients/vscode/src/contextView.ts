// "What the Model Sees": a read-only markdown document with exactly the messages
// topicForest/renderContext {threadId} returns for the current thread — the history the next
// chat request carries — with its token total and the topics sent and left out.
import * as vscode from 'vscode';
import type { Connection } from './connection';
import { fence } from './format';
import type { RenderContextResult, Topic } from './protocol';
import { modeMeaning } from './topicTree';

export const CONTEXT_SCHEME = 'topicforest-context';

export function contextUri(threadId: string): vscode.Uri {
  return vscode.Uri.from({ scheme: CONTEXT_SCHEME, path: '/What the Model Sees.md',
    query: `thread=${encodeURIComponent(threadId)}` });
}

export function threadIdFromUri(uri: vscode.Uri): string {
  const thread = /(?:^|&)thread=([^&]+)/.exec(uri.query)?.[1];
  if (!thread) throw new Error(`not a context view: ${uri.toString()}`);
  return decodeURIComponent(thread);
}

/** A title on one line, with nothing that could make a heading or a link of it. */
function plain(text: string): string {
  return text.replace(/[\s#`[\]]+/g, ' ').trim();
}

function topicLine(id: number, titles: Map<number, string>, extra = ''): string {
  return `- Topic ${id} · ${plain(titles.get(id) ?? '(not listed)')}${extra}`;
}

/** Model and user text goes inside fences so it cannot forge headings or structure. */
export function contextMarkdown(thread: string, render: RenderContextResult, topics: Topic[]): string {
  const titles = new Map(topics.map((t) => [t.id, t.title]));
  const dropped = topics.filter((t) => t.dropped).map((t) => t.id);
  const pct = render.budget > 0 ? Math.round((100 * render.tokens) / render.budget) : 0;
  const lines = [
    '# What the model sees',
    '',
    `The history the next chat request of the thread \`${thread.replace(/[`\r\n\u2028\u2029]/g, ' ')}\` carries: ` +
      `**${render.tokens} of ${render.budget} tokens** (${pct}%), ${render.messages.length} messages. ` +
      'Your next message and any attachments come after it; the message also ranks the topics, ' +
      'so the ones sent may change with it.',
    '',
  ];
  if (render.fallback) lines.push('_The topics did not fit: a flat summary of the earlier conversation stands in for them._', '');
  lines.push(`## Topics sent (${render.topics.length})`, '');
  if (render.topics.length === 0) lines.push('_None._');
  for (const t of render.topics) lines.push(topicLine(t.id, titles, ` — ${modeMeaning(t.mode)}, ${t.tokens} tokens`));
  lines.push('', `## Not sent: no room (${render.omittedTopics.length})`, '');
  if (render.omittedTopics.length === 0) lines.push('_None._');
  for (const id of render.omittedTopics) lines.push(topicLine(id, titles));
  if (dropped.length) {
    lines.push('', `## Dropped (${dropped.length})`, '');
    for (const id of dropped) lines.push(topicLine(id, titles));
  }
  lines.push('', `## Messages (${render.messages.length})`, '');
  for (const [i, m] of render.messages.entries()) {
    lines.push(`### ${i + 1} · ${plain(m.role)}`, '', fence(m.content, 'text'), '');
  }
  return lines.join('\n');
}

export class ContextViewProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly connection: Connection) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const threadId = threadIdFromUri(uri);
    const [render, { topics }, { threads }] = await Promise.all([
      this.connection.request('topicForest/renderContext', { threadId }),
      this.connection.request('topicForest/listTopics', { threadId }),
      this.connection.request('topicForest/listThreads', {}),
    ]);
    // named as the chat's header names it (its title; a thread with no message yet is new)
    const title = threads.find((t) => t.threadId === threadId)?.title || 'New thread';
    return contextMarkdown(title, render, topics);
  }

  /** Opens the current thread's view (beside the chat, read-only). */
  async show(threadId: string): Promise<void> {
    const uri = contextUri(threadId);
    this.changed.fire(uri); // already open: read it again
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  /** Re-reads open views (after a turn, a thread switch or topicsChanged). */
  refreshOpen(): void {
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme === CONTEXT_SCHEME) this.changed.fire(doc.uri);
    }
  }

  dispose(): void {
    this.changed.dispose();
  }
}
