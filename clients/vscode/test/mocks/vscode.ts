// A small stand-in for the `vscode` module: just the API surface the extension's units use,
// recording calls so tests can assert on them.
import { ModuleMocker } from 'jest-mock';

const mocker = new ModuleMocker(globalThis);
const fn = mocker.fn.bind(mocker);
/** Resets the recorded calls of every mock below. */
export const clearAllMocks = (): void => mocker.clearAllMocks();

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: ((e: T) => void)[] = [];
  event = (listener: (e: T) => void): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== listener)));
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export enum TreeItemCollapsibleState { None = 0, Collapsed = 1, Expanded = 2 }
export enum StatusBarAlignment { Left = 1, Right = 2 }

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class ThemeIcon {
  constructor(readonly id: string, readonly color?: ThemeColor) {}
}

export class MarkdownString {
  value = '';
  appendText(text: string): this {
    this.value += text.replace(/[\\`*_{}[\]()#+\-.!<>]/g, '\\$&');
    return this;
  }
  appendMarkdown(text: string): this {
    this.value += text;
    return this;
  }
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: string | MarkdownString;
  iconPath?: ThemeIcon;
  contextValue?: string;
  accessibilityInformation?: { label: string; role?: string };
  command?: { command: string; title: string; arguments?: unknown[] };
  constructor(public label: string, public collapsibleState = TreeItemCollapsibleState.None) {}
}

export class Uri {
  private constructor(readonly scheme: string, readonly path: string, readonly query: string) {}
  static from(c: { scheme: string; path?: string; query?: string }): Uri {
    return new Uri(c.scheme, c.path ?? '', c.query ?? '');
  }
  static parse(value: string): Uri {
    const u = new URL(value);
    return new Uri(u.protocol.replace(/:$/, ''), u.pathname, u.search.replace(/^\?/, ''));
  }
  static file(p: string): Uri {
    return new Uri('file', p, '');
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.path.replace(/\/$/, ''), ...parts].join('/'), '');
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}:${this.path}${this.query ? `?${this.query}` : ''}`;
  }
}

export class Position {
  constructor(readonly line: number, readonly character: number) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: number | Position, b: number | Position, c?: number, d?: number) {
    this.start = typeof a === 'number' ? new Position(a, b as number) : a;
    this.end = typeof a === 'number' ? new Position(c ?? 0, d ?? 0) : b as Position;
  }
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

export class Selection extends Range {}

export enum DiagnosticSeverity { Error = 0, Warning = 1, Information = 2, Hint = 3 }

export class Diagnostic {
  source?: string;
  constructor(readonly range: Range, readonly message: string,
    readonly severity: DiagnosticSeverity = DiagnosticSeverity.Error) {}
}

/** Records the replacements; workspace.applyEdit applies them to the fake documents. */
export class WorkspaceEdit {
  readonly edits: { uri: Uri; range: Range; text: string }[] = [];
  replace(uri: Uri, range: Range, text: string): void {
    this.edits.push({ uri, range, text });
  }
}

/** A text document over a string: enough for getText, ranges, edits and save. */
export class FakeDocument {
  saved = false;
  version = 1;
  constructor(readonly uri: Uri, public text: string, readonly languageId = 'plaintext') {}
  get lineCount(): number {
    return this.text.split('\n').length;
  }
  private offset(p: Position): number {
    const lines = this.text.split('\n');
    let at = 0;
    for (let i = 0; i < Math.min(p.line, lines.length); i += 1) at += (lines[i]?.length ?? 0) + 1;
    return Math.min(at + (p.line < lines.length ? p.character : 0), this.text.length);
  }
  getText(range?: Range): string {
    return range ? this.text.slice(this.offset(range.start), this.offset(range.end)) : this.text;
  }
  validateRange(range: Range): Range {
    return range;
  }
  replace(range: Range, text: string): void {
    this.version += 1;
    this.text = this.text.slice(0, this.offset(range.start)) + text + this.text.slice(this.offset(range.end));
  }
  save(): Promise<boolean> {
    this.saved = true;
    return Promise.resolve(true);
  }
}

/** A text editor on a FakeDocument; edit() replaces what the builder asks for. */
export class FakeEditor {
  viewColumn = 1;
  constructor(readonly document: FakeDocument, public selections: Selection[] = [new Selection(0, 0, 0, 0)]) {}
  get selection(): Selection {
    return this.selections[0] as Selection;
  }
  edit(build: (b: { replace: (r: Range, text: string) => void }) => void): Promise<boolean> {
    const edits: { range: Range; text: string }[] = [];
    build({ replace: (range, text) => edits.push({ range, text }) });
    for (const e of edits.reverse()) this.document.replace(e.range, e.text);
    return Promise.resolve(true);
  }
}

/** A QuickPick tests can drive: accept(), pressButton(). */
export class FakeQuickPick<T> {
  items: T[] = [];
  selectedItems: T[] = [];
  title = '';
  placeholder = '';
  busy = false;
  matchOnDescription = false;
  shown = false;
  private readonly accepted = new EventEmitter<undefined>();
  private readonly buttons = new EventEmitter<{ item: T; button: unknown }>();
  private readonly hidden = new EventEmitter<undefined>();
  onDidAccept = this.accepted.event;
  onDidTriggerItemButton = this.buttons.event;
  onDidHide = this.hidden.event;
  show(): void {
    this.shown = true;
  }
  hide(): void {
    this.shown = false;
    this.hidden.fire(undefined);
  }
  dispose(): void {
    this.shown = false;
  }
  accept(item: T): void {
    this.selectedItems = [item];
    this.accepted.fire(undefined);
  }
  pressButton(item: T, index: number): void {
    const buttons = (item as { buttons?: unknown[] }).buttons ?? [];
    this.buttons.fire({ item, button: buttons[index] });
  }
}
export const quickPicks: FakeQuickPick<unknown>[] = [];

export interface CancellationToken {
  readonly isCancellationRequested: boolean;
  onCancellationRequested: (listener: (e: undefined) => void) => Disposable;
}

export class CancellationTokenSource {
  private cancelled = false;
  private readonly emitter = new EventEmitter<undefined>();
  readonly token = Object.defineProperty({ onCancellationRequested: this.emitter.event },
    'isCancellationRequested', { get: () => this.cancelled, enumerable: true }) as CancellationToken;
  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.emitter.fire(undefined);
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

export interface FakeStatusBarItem {
  id: string; text: string; tooltip?: string; command?: string; name?: string;
  backgroundColor?: ThemeColor; show: () => void; dispose: () => void;
}

export const statusBarItems: FakeStatusBarItem[] = [];
export const registeredCommands = new Map<string, (...args: unknown[]) => unknown>();

export enum ProgressLocation { SourceControl = 1, Window = 10, Notification = 15 }

/** Every progress report made under window.withProgress, in order. */
export const progressReports: { title?: string; message?: string; increment?: number }[] = [];

export class TabInputTextDiff {
  constructor(readonly original: Uri, readonly modified: Uri) {}
}
export interface FakeTab { label: string; input: unknown }
/** The open editor tabs (one group); close() removes them. */
export const tabGroups = {
  all: [{ tabs: [] as FakeTab[] }],
  close: fn((tabs: FakeTab[]) => {
    const group = tabGroups.all[0] as { tabs: FakeTab[] };
    group.tabs = group.tabs.filter((t) => !tabs.includes(t));
    return Promise.resolve(true);
  }),
};

export const window = {
  tabGroups,
  showQuickPick: fn((_items: unknown[], _options?: unknown): Promise<unknown> => Promise.resolve(undefined)),
  withProgress: fn(<T>(options: { title?: string },
    task: (progress: { report: (v: { message?: string; increment?: number }) => void }) => Promise<T>) =>
    task({ report: (v) => progressReports.push({ title: options.title, ...v }) })),
  activeTextEditor: undefined as undefined | { document: { uri: Uri } } | FakeEditor,
  visibleTextEditors: [] as FakeEditor[],
  onDidChangeActiveTextEditor: fn((_listener: (e: unknown) => void) => new Disposable()),
  showWarningMessage: fn((..._args: unknown[]): Promise<string | undefined> => Promise.resolve(undefined)),
  showInputBox: fn((_options: unknown): Promise<string | undefined> => Promise.resolve(undefined)),
  createQuickPick: fn(() => {
    const picker = new FakeQuickPick<unknown>();
    quickPicks.push(picker);
    return picker;
  }),
  createStatusBarItem: fn((id: string): FakeStatusBarItem => {
    const item: FakeStatusBarItem = { id, text: '', show: fn(), dispose: fn() };
    statusBarItems.push(item);
    return item;
  }),
  showErrorMessage: fn((..._args: unknown[]): Promise<string | undefined> => Promise.resolve(undefined)),
  showInformationMessage: fn((..._args: unknown[]): Promise<string | undefined> => Promise.resolve(undefined)),
  setStatusBarMessage: fn(),
  showTextDocument: fn((doc: unknown, _column?: unknown) => Promise.resolve(doc)),
  createTerminal: fn((name: string) => {
    const sent: string[] = [];
    const terminal = { name, sent, show: fn(), sendText: (t: string) => sent.push(t) };
    terminals.push(terminal);
    return terminal;
  }),
};

export const commands = {
  registerCommand: fn((id: string, fn: (...args: unknown[]) => unknown) => {
    registeredCommands.set(id, fn);
    return new Disposable(() => registeredCommands.delete(id));
  }),
  executeCommand: fn((..._args: unknown[]): Promise<unknown> => Promise.resolve(undefined)),
};

export const env = {
  remoteName: undefined as string | undefined,
  clipboard: { writeText: fn((_text: string) => Promise.resolve()) },
  openExternal: fn((_uri: Uri) => Promise.resolve(true)),
};

/** Settings returned by workspace.getConfiguration(section): keys are `section.key`. */
export const configuration = new Map<string, unknown>();
export const terminals: { name: string; sent: string[]; show: () => void; sendText: (t: string) => void }[] = [];

export const workspace = {
  workspaceFolders: undefined as undefined | { uri: Uri }[],
  isTrusted: true,
  getConfiguration: (section: string) => ({
    get: <T>(key: string): T | undefined => configuration.get(`${section}.${key}`) as T | undefined,
  }),
  textDocuments: [] as ({ uri: Uri } | FakeDocument)[],
  openTextDocument: fn((uri: Uri): Promise<unknown> => Promise.resolve(
    workspace.textDocuments.find((d) => d.uri.toString() === uri.toString()) ?? { uri })),
  findFiles: fn((_include: string, _exclude?: string, _max?: number) => Promise.resolve(files.map((f) => Uri.file(`/ws/${f}`)))),
  applyEdit: fn((edit: WorkspaceEdit) => {
    for (const e of edit.edits) {
      const doc = workspace.textDocuments.find((d) => d.uri.toString() === e.uri.toString());
      if (!(doc instanceof FakeDocument)) return Promise.resolve(false);
      doc.replace(e.range, e.text);
    }
    return Promise.resolve(true);
  }),
  fs: {
    readFile: fn((uri: Uri) => {
      const text = disk.get(uri.path);
      return text === undefined ? Promise.reject(new Error(`ENOENT ${uri.path}`))
        : Promise.resolve(new TextEncoder().encode(text));
    }),
    writeFile: fn((uri: Uri, bytes: Uint8Array) => {
      disk.set(uri.path, new TextDecoder().decode(bytes));
      return Promise.resolve();
    }),
    stat: fn((uri: Uri) => (disk.has(uri.path) || workspace.textDocuments.some((d) => d.uri.path === uri.path)
      ? Promise.resolve({}) : Promise.reject(new Error(`ENOENT ${uri.path}`)))),
  },
  asRelativePath: fn((uri: Uri) => uri.path.replace(/^\/ws\//, '')),
};

export const extensions = { getExtension: fn(() => undefined) };

/** Workspace files findFiles lists (relative to /ws), and file contents on "disk" by path. */
export const files: string[] = [];
export const disk = new Map<string, string>();
export const diagnostics = new Map<string, Diagnostic[]>();

export const languages = {
  getDiagnostics: fn((uri: Uri) => diagnostics.get(uri.path) ?? []),
};
