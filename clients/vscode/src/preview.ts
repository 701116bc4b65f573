// Read-only markdown documents for topic previews (a TextDocumentContentProvider's documents
// cannot be edited or saved).
import * as vscode from 'vscode';
import type { Connection } from './connection';
import { fence, formatTime, plainMarkdown, quoteText } from './format';
import type { Message, Topic } from './protocol';
import { reshapeLines } from './reshapes';
import { displayPath, topicStates } from './topicTree';

export const PREVIEW_SCHEME = 'topicforest-preview';

export function previewUri(topic: Pick<Topic, 'id' | 'title'>): vscode.Uri {
  const name = topic.title.replace(/[^\w .-]+/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 60);
  // the tab shows the file name: the topic's title, as the tree does (the id is in the query)
  return vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${name || `Topic ${topic.id}`}.md`,
    query: `id=${topic.id}` });
}

export function topicIdFromUri(uri: vscode.Uri): number {
  const match = /(?:^|&)id=(\d+)/.exec(uri.query);
  if (!match) throw new Error(`not a topic preview: ${uri.toString()}`);
  return Number(match[1]);
}

/** Rendered by VS Code's Markdown preview: the summary as an escaped quote, messages inside
 *  fences, so model and user text cannot forge headings, links or HTML. */
export function previewMarkdown(topic: Topic, messages: Message[]): string {
  const states = topicStates(topic);
  const lines = [
    `# ${topic.title.replace(/[\s#]+/g, ' ').trim()}`,
    '',
    `${topic.messageCount} messages · ${topic.sourceTokens} source tokens · ` +
      `${topic.summaryTokens} summary tokens${states.length ? ` · ${states.join(', ')}` : ''}`,
    '',
    '## Summary',
    '',
    topic.summary ? quoteText(topic.summary) : '_No summary yet: it is being written in the background._',
    '',
  ];
  const changes = reshapeLines(topic);
  if (changes.length) lines.push('Reshaped by new messages:', '', ...changes.map((c) => `- ${plainMarkdown(c)}`), '');
  if (topic.files.length) lines.push(`Files: ${topic.files.map((f) => `\`${displayPath(f).replace(/`/g, '')}\``).join(', ')}`, '');
  lines.push(`## Source messages (${messages.length})`, '');
  for (const m of messages) {
    lines.push(`### ${m.role === 'user' ? 'User' : 'Assistant'} · ${formatTime(m.timestamp)} · ` +
      `${m.tokens} tokens${m.cancelled ? ' · cancelled' : ''}`, '', fence(m.content, 'markdown'), '');
  }
  return lines.join('\n');
}

export class PreviewProvider implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly connection: Connection) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const { topic, messages } = await this.connection.request('topicForest/previewTopic',
      { topicId: topicIdFromUri(uri) });
    return previewMarkdown(topic, messages);
  }

  /** Re-reads open previews (after topicsChanged). */
  refreshOpen(): void {
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme === PREVIEW_SCHEME) this.changed.fire(doc.uri);
    }
  }
}
