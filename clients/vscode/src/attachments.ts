// Code into the conversation: the selection, a workspace file, the active file's problems, as
// `attachments` of the next chat turn (wire: docs/protocol.md). The chat keeps them pending
// (chips above the input) until the message is sent; file text is read then, unsaved edits first.
import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';
import type { Chip, MentionItem } from './chatMessages';
import type { Attachment, AttachmentRef } from './protocol';
import { estimateTokens } from './format';
import { leadsOutThroughLink } from './paths';

/** Per file, what is sent at most (the server then fits it into its own budget). */
export const MAX_FILE_BYTES = 200_000;
/** The wire's limit per turn. */
export const MAX_ATTACHMENTS = 20;
const MAX_LISTED_FILES = 5000;
const MAX_MENTIONS = 50;
const LIST_TTL_MS = 30_000;

/** Never offered by `@`: dependencies, VCS data, environments and caches. */
export const DEFAULT_EXCLUDES = ['**/node_modules/**', '**/.git/**', '**/.venv/**', '**/venv/**',
  '**/__pycache__/**', '**/*.pyc', '**/.mypy_cache/**', '**/.pytest_cache/**', '**/.ruff_cache/**',
  '**/.DS_Store'];

/** One glob for findFiles: the defaults plus every `files.exclude` pattern that is on
 *  (a pattern with its own braces cannot sit inside the group and is left out). */
export function excludeGlob(filesExclude: Record<string, unknown> | undefined): string {
  const patterns = new Set(DEFAULT_EXCLUDES);
  for (const [pattern, on] of Object.entries(filesExclude ?? {})) {
    if (on === true && !/[{},]/.test(pattern)) patterns.add(pattern);
  }
  return `{${[...patterns].join(',')}}`;
}

/** `@` completion: basename prefix first, then basename, then path matches; at most 50. */
export function rankPaths(paths: readonly string[], query: string, limit = MAX_MENTIONS): string[] {
  const q = query.toLowerCase();
  const score = (path: string): number => {
    const lower = path.toLowerCase();
    const base = lower.slice(lower.lastIndexOf('/') + 1);
    if (base.startsWith(q)) return 0;
    if (base.includes(q)) return 1;
    return lower.includes(q) ? 2 : -1;
  };
  return paths.map((path) => ({ path, s: score(path) })).filter((p) => p.s >= 0)
    .sort((a, b) => a.s - b.s || a.path.length - b.path.length || a.path.localeCompare(b.path))
    .slice(0, limit).map((p) => p.path);
}

const SEVERITY = ['error', 'warning', 'info', 'hint'];

/** The active file's diagnostics as text lines: `path:line:col severity message` (1-based). */
export function formatProblems(path: string, diagnostics: readonly vscode.Diagnostic[]): string {
  return diagnostics.map((d) => {
    const source = d.source ? ` [${d.source}]` : '';
    return `${path}:${d.range.start.line + 1}:${d.range.start.character + 1} ` +
      `${SEVERITY[d.severity] ?? 'error'} ${d.message.replace(/\s*\n\s*/g, ' ')}${source}`;
  }).join('\n');
}

/** At most MAX_FILE_BYTES of UTF-8, cut at a line end, with a line saying what was left out. */
export function capText(text: string, path: string): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= MAX_FILE_BYTES) return text;
  const head = bytes.subarray(0, MAX_FILE_BYTES).toString('utf8').replace(/\uFFFD$/, '');
  const kept = head.slice(0, Math.max(head.lastIndexOf('\n'), 0));
  const total = text.split('\n').length;
  const shown = kept.split('\n').length;
  return `${kept}\n… [truncated by the editor: lines ${shown + 1}–${total} of ${path} not sent ` +
    `(over ${MAX_FILE_BYTES / 1000} KB)]`;
}

const relative = (uri: vscode.Uri): string => vscode.workspace.asRelativePath(uri, false);

/** Where code is attached from: files and untitled buffers. Not from a read-only view (a topic
 *  preview, What the Model Sees, a proposal in a diff, an output channel, a git revision): its
 *  text is not the user's code, and its path names no file the model or an Apply could use.
 *  (package.json's "Add Selection to Chat" menu entry lists the same schemes.) */
export const ATTACHABLE_SCHEMES: readonly string[] = ['file', 'untitled'];

export const attachable = (editor: vscode.TextEditor | undefined): boolean =>
  editor !== undefined && ATTACHABLE_SCHEMES.includes(editor.document.uri.scheme);

/** The text of a file: the open document (unsaved edits included), else the disk. */
export async function readText(uri: vscode.Uri): Promise<{ text: string; language?: string }> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open) return { text: open.getText(), language: open.languageId };
  const bytes = await vscode.workspace.fs.readFile(uri);
  return { text: Buffer.from(bytes).toString('utf8') };
}

/** The editor's selection (whole lines of the range); undefined when nothing is selected. */
export function selectionAttachment(editor: vscode.TextEditor | undefined): Attachment | undefined {
  const selection = editor?.selection;
  if (!editor || !selection || selection.isEmpty) return undefined;
  const { start, end } = selection;
  const endLine = end.character === 0 && end.line > start.line ? end.line - 1 : end.line;
  return { kind: 'selection', path: relative(editor.document.uri),
    range: { startLine: start.line, endLine }, language: editor.document.languageId,
    text: editor.document.getText(selection) };
}

export function problemsAttachment(editor: vscode.TextEditor | undefined): Attachment | undefined {
  if (!editor) return undefined;
  const path = relative(editor.document.uri);
  const text = formatProblems(path, vscode.languages.getDiagnostics(editor.document.uri));
  return { kind: 'problems', path, text: text || `${path}: no problems reported` };
}

interface Pending {
  chip: Chip & { id: string };
  /** the attachment as sent, read when the message goes out */
  read: () => Promise<Attachment>;
}

const same = (a: Chip, b: Chip): boolean => a.kind === b.kind && a.path === b.path &&
  a.range?.startLine === b.range?.startLine && a.range?.endLine === b.range?.endLine;

/** The chip of an attachment (sent now) or of a stored reference (in the history). */
export const chipOf = (a: Attachment | AttachmentRef): Chip => ({ kind: a.kind, path: a.path,
  ...(a.range ? { range: a.range } : {}), ...('truncated' in a && a.truncated ? { truncated: true } : {}) });

/** What the next message carries; the chat view shows it as chips. */
export class PendingAttachments {
  private items: Pending[] = [];
  private files: { at: number; uris: Promise<Map<string, vscode.Uri>> } | undefined;

  /** `editor`: the last text editor the user was in (the chat has the focus meanwhile). */
  constructor(private readonly editor: () => vscode.TextEditor | undefined,
    private readonly changed: () => void) {}

  get chips(): Chip[] {
    return this.items.map((p) => p.chip);
  }

  get size(): number {
    return this.items.length;
  }

  /** Adds one attachment (false when it is there already or the turn is full); its chip shows
   *  its cost once `read` has told (a file is read at once, and again when the message goes out). */
  private add(chip: Chip, read: () => Promise<Attachment>): boolean {
    if (this.items.length >= MAX_ATTACHMENTS || this.items.some((p) => same(p.chip, chip))) return false;
    const item = { chip: { ...chip, id: randomUUID() }, read };
    this.items.push(item);
    this.changed();
    void read().then((a) => {
      if (!this.items.includes(item)) return;
      item.chip = { ...item.chip, tokens: estimateTokens(a.text) };
      this.changed();
    });
    return true;
  }

  /** The estimated tokens the pending attachments add to the next request. */
  get tokens(): number {
    return this.items.reduce((sum, p) => sum + (p.chip.tokens ?? 0), 0);
  }

  addAttachment(attachment: Attachment): boolean {
    return this.add(chipOf(attachment), () => Promise.resolve(attachment));
  }

  addFile(uri: vscode.Uri): boolean {
    const path = relative(uri);
    return this.add({ kind: 'file', path }, async () => {
      try {
        const { text, language } = await readText(uri);
        return { kind: 'file', path, text: capText(text, path), ...(language ? { language } : {}) };
      } catch (error) { // deleted or unreadable since it was picked: the model is told so
        return { kind: 'file', path, text: `[could not read ${path}: ${String(error)}]` };
      }
    });
  }

  addSelection(): boolean {
    const attachment = selectionAttachment(this.source());
    return attachment ? this.addAttachment(attachment) : false;
  }

  /** From the `@` list: a workspace-relative path (its listed file: multi-root folders too),
   *  `@selection` or `@problems`. Only a file the list offers: the path comes from the webview,
   *  and a path it names beside the list (`../../etc/passwd`, an excluded `.env`) is refused. */
  async addMention(item: MentionItem): Promise<boolean> {
    if (item.kind === 'selection') return this.addSelection();
    if (item.kind === 'problems') {
      const attachment = problemsAttachment(this.source());
      return attachment ? this.addAttachment(attachment) : false;
    }
    const uri = (await this.workspaceFiles()).get(item.path);
    if (!uri || await leadsOutThroughLink(uri)) return false; // a listed link may point anywhere
    return this.addFile(uri);
  }

  /** The last editor, if code can be attached from it. */
  private source(): vscode.TextEditor | undefined {
    const editor = this.editor();
    return attachable(editor) ? editor : undefined;
  }

  remove(id: string): void {
    this.items = this.items.filter((p) => p.chip.id !== id);
    this.changed();
  }

  /** Reads every pending attachment and empties the list. */
  async take(): Promise<{ attachments: Attachment[]; chips: Chip[] }> {
    const items = this.items;
    const attachments = await Promise.all(items.map((p) => p.read()));
    this.items = [];
    if (items.length) this.changed();
    return { attachments, chips: attachments.map(chipOf) };
  }

  /** The `@` list for `query`: @selection / @problems of the last editor (a file's), then files. */
  async mentions(query: string): Promise<MentionItem[]> {
    const editor = this.source();
    const items: MentionItem[] = [];
    if (editor) {
      const path = relative(editor.document.uri);
      const selection = selectionAttachment(editor);
      if (selection?.range && 'selection'.startsWith(query.toLowerCase())) {
        items.push({ kind: 'selection', path,
          detail: `lines ${selection.range.startLine + 1}–${selection.range.endLine + 1} of ${path}` });
      }
      if ('problems'.startsWith(query.toLowerCase())) {
        const count = vscode.languages.getDiagnostics(editor.document.uri).length;
        items.push({ kind: 'problems', path, detail: `${count} problem${count === 1 ? '' : 's'} in ${path}` });
      }
    }
    const paths = rankPaths([...(await this.workspaceFiles()).keys()], query, MAX_MENTIONS - items.length);
    return [...items, ...paths.map((path): MentionItem => ({ kind: 'file', path }))];
  }

  /** Workspace files (cached for 30 s), without files.exclude, dependencies and caches. */
  private workspaceFiles(): Promise<Map<string, vscode.Uri>> {
    const now = Date.now();
    if (!this.files || now - this.files.at > LIST_TTL_MS) {
      const exclude = excludeGlob(vscode.workspace.getConfiguration('files')
        .get<Record<string, unknown>>('exclude'));
      this.files = { at: now, uris: Promise.resolve(vscode.workspace.findFiles('**/*', exclude,
        MAX_LISTED_FILES)).then((uris) => new Map(uris.map((u) => [relative(u), u] as const)
        .sort(([a], [b]) => a.localeCompare(b)))) };
    }
    return this.files.uris;
  }
}
