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
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}:${this.path}${this.query ? `?${this.query}` : ''}`;
  }
}

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

export const window = {
  withProgress: fn(<T>(options: { title?: string },
    task: (progress: { report: (v: { message?: string; increment?: number }) => void }) => Promise<T>) =>
    task({ report: (v) => progressReports.push({ title: options.title, ...v }) })),
  activeTextEditor: undefined as undefined | { document: { uri: Uri } },
  createStatusBarItem: fn((id: string): FakeStatusBarItem => {
    const item: FakeStatusBarItem = { id, text: '', show: fn(), dispose: fn() };
    statusBarItems.push(item);
    return item;
  }),
  showErrorMessage: fn((..._args: unknown[]): Promise<string | undefined> => Promise.resolve(undefined)),
  showInformationMessage: fn((..._args: unknown[]): Promise<string | undefined> => Promise.resolve(undefined)),
  setStatusBarMessage: fn(),
  showTextDocument: fn((doc: unknown) => Promise.resolve(doc)),
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
  textDocuments: [] as { uri: Uri }[],
  openTextDocument: fn((uri: Uri) => Promise.resolve({ uri })),
  asRelativePath: fn((uri: Uri) => uri.path.replace(/^\/ws\//, '')),
};

export const extensions = { getExtension: fn(() => undefined) };
