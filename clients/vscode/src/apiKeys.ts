// API keys in VS Code's SecretStorage, handed to the server (`topicForest/setApiKeys`) whenever
// it starts and whenever a key changes (in any window): never in settings, never logged. A key
// belongs to a provider (litellm's name) and, for a self-hosted server, to its endpoint URL.
import type * as vscode from 'vscode';
import type { Connection } from './connection';
import type { ApiKey } from './protocol';

/** globalState: which keys are stored (provider and endpoint only, never a value). */
const INDEX = 'topicForest.apiKeys';
const PREFIX = 'topicForest.apiKey:';

export interface KeyScope {
  provider: string;
  apiBase: string | null; // null: the provider's own endpoint
}

const secretId = (scope: KeyScope): string => `${PREFIX}${scope.provider}@${scope.apiBase ?? ''}`;
const sameScope = (a: KeyScope, b: KeyScope): boolean =>
  a.provider === b.provider && a.apiBase === b.apiBase;

export class ApiKeyStore {
  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly state: vscode.Memento,
    private readonly server: Connection,
    private readonly warn: (message: string) => void = () => undefined,
  ) {}

  /** Send the keys again when another window changed one. */
  watch(): vscode.Disposable {
    return this.secrets.onDidChange((event) => {
      if (event.key.startsWith(PREFIX)) void this.send();
    });
  }

  get(scope: KeyScope): Thenable<string | undefined> {
    return this.secrets.get(secretId(scope));
  }

  /** Store `key` for `scope` (empty: forget it) and hand the keys to the server. */
  async set(scope: KeyScope, key: string): Promise<void> {
    const others = this.scopes().filter((s) => !sameScope(s, scope));
    if (key === '') {
      await this.secrets.delete(secretId(scope));
      await this.state.update(INDEX, others);
    } else {
      await this.secrets.store(secretId(scope), key);
      await this.state.update(INDEX, [...others, scope]);
    }
    await this.send();
  }

  async all(): Promise<ApiKey[]> {
    const keys: ApiKey[] = [];
    for (const scope of this.scopes()) {
      const apiKey = await this.secrets.get(secretId(scope));
      if (apiKey) keys.push({ provider: scope.provider, apiBase: scope.apiBase, apiKey });
    }
    return keys;
  }

  /** Hand every stored key to the running server (it keeps them in memory only). */
  async send(): Promise<boolean> {
    if (this.server.state !== 'running') return false; // sent when it starts
    try {
      await this.server.request('topicForest/setApiKeys', { keys: await this.all() });
      return true;
    } catch (error) {
      // the server's refusal names the field, never the key
      this.warn(`could not hand the API keys to the server: ${(error as Error).message}`);
      return false;
    }
  }

  private scopes(): KeyScope[] {
    const stored = this.state.get<unknown>(INDEX);
    return Array.isArray(stored) ? stored.filter(isScope) : [];
  }
}

function isScope(value: unknown): value is KeyScope {
  const scope = value as Partial<KeyScope> | null;
  return typeof scope?.provider === 'string' &&
    (scope.apiBase === null || typeof scope.apiBase === 'string');
}
