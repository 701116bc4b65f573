// "Configure Model": pick a provider, give its key (SecretStorage, never settings), pick a model
// from its list, and Test it with one tiny request whose failure is said in plain words. The
// server does the work editor-neutrally (setApiKeys, testModel); this is the VS Code face.
import * as vscode from 'vscode';
import type { ApiKeyStore } from './apiKeys';
import type { Connection } from './connection';
import { errorMessage } from './errors';
import type { TestModelResult } from './protocol';

export interface Provider {
  label: string;
  detail: string;
  provider: string; // litellm's name: what a key belongs to
  prefix: string; // of the model strings
  key: 'required' | 'optional';
  keyVariable?: string; // the environment variable that works too
  endpoint?: string; // a local server's usual URL (asked, prefilled)
  list?: 'ollama' | 'openai'; // how its server lists its models
  models: string[]; // suggestions, beside "type a model name"
}

export const PROVIDERS: Provider[] = [
  { label: 'OpenAI', detail: 'GPT models, with an OpenAI API key', provider: 'openai', prefix: '',
    key: 'required', keyVariable: 'OPENAI_API_KEY', models: ['gpt-4o-mini', 'gpt-4.1-mini', 'gpt-4.1', 'gpt-4o'] },
  { label: 'Anthropic', detail: 'Claude models, with an Anthropic API key', provider: 'anthropic',
    prefix: 'anthropic/', key: 'required', keyVariable: 'ANTHROPIC_API_KEY',
    models: ['claude-3-5-haiku-latest', 'claude-3-7-sonnet-latest', 'claude-sonnet-4-20250514'] },
  { label: 'Google Gemini', detail: 'Gemini models, with a Google AI Studio key', provider: 'gemini',
    prefix: 'gemini/', key: 'required', keyVariable: 'GEMINI_API_KEY',
    models: ['gemini-2.0-flash', 'gemini-2.5-flash', 'gemini-2.5-pro'] },
  { label: 'OpenRouter', detail: 'Many providers behind one OpenRouter key', provider: 'openrouter',
    prefix: 'openrouter/', key: 'required', keyVariable: 'OPENROUTER_API_KEY',
    models: ['openai/gpt-4o-mini', 'anthropic/claude-3.5-haiku', 'meta-llama/llama-3.3-70b-instruct'] },
  { label: 'Ollama', detail: 'Local models served by `ollama serve`', provider: 'ollama',
    prefix: 'ollama/', key: 'optional', endpoint: 'http://127.0.0.1:11434', list: 'ollama', models: [] },
  { label: 'LM Studio', detail: 'Its local server (Developer → Start Server)', provider: 'openai',
    prefix: 'openai/', key: 'optional', endpoint: 'http://127.0.0.1:1234/v1', list: 'openai', models: [] },
  { label: 'llama.cpp', detail: 'llama-server, OpenAI-compatible', provider: 'openai', prefix: 'openai/',
    key: 'optional', endpoint: 'http://127.0.0.1:8080/v1', list: 'openai', models: [] },
  { label: 'Other OpenAI-compatible server', detail: 'vLLM, LocalAI, a proxy… (its /v1 URL)',
    provider: 'openai', prefix: 'openai/', key: 'optional', endpoint: 'http://127.0.0.1:8000/v1',
    list: 'openai', models: [] },
];

const TYPE_NAME = 'Type a model name…';
const LIST_SECONDS = 5;

/** The settings the flow reads and writes (`topicForest.*`, user settings). */
export interface ModelSettings {
  get(key: 'chatModel' | 'models'): unknown;
  update(key: 'chatModel' | 'models', value: unknown): Thenable<void>;
}

export type FetchJson = (url: string, headers: Record<string, string>) => Promise<unknown>;

export const fetchJson: FetchJson = async (url, headers) => {
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(LIST_SECONDS * 1000) });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return response.json();
};

/** The models a local server has: Ollama's `/api/tags`, an OpenAI-compatible `/models`. */
export async function listModels(provider: Provider, base: string, key: string | undefined,
  get: FetchJson = fetchJson): Promise<string[]> {
  if (!provider.list) return provider.models;
  const root = base.replace(/\/+$/, '');
  const headers: Record<string, string> = key ? { Authorization: `Bearer ${key}` } : {};
  const body = await get(provider.list === 'ollama' ? `${root}/api/tags` : `${root}/models`, headers);
  const items = (body as { models?: unknown; data?: unknown } | null) ?? {};
  const list = provider.list === 'ollama' ? items.models : items.data;
  const field = provider.list === 'ollama' ? 'name' : 'id';
  return (Array.isArray(list) ? list : [])
    .map((m) => (m as Record<string, unknown> | null)?.[field])
    .filter((name): name is string => typeof name === 'string' && name !== '');
}

/** `models` with this model's entry (its own endpoint) in place of any earlier one. */
export function withModelEntry(models: unknown, model: string, apiBase: string | null): unknown[] {
  const list = Array.isArray(models) ? models as unknown[] : [];
  const named = (entry: unknown) => (typeof entry === 'string' ? entry
    : (entry as { model?: unknown } | null)?.model);
  return [...list.filter((entry) => named(entry) !== model), { model, apiBase }];
}

export function describe(result: TestModelResult): string {
  return result.ok ? `${result.model} answered.`
    : result.detail ? `${result.message} (${result.detail})` : result.message;
}

export class ModelSetup {
  constructor(
    private readonly server: Connection,
    private readonly keys: ApiKeyStore,
    private readonly settings: () => ModelSettings,
    private readonly get: FetchJson = fetchJson,
  ) {}

  /** The whole flow; false if the user left it (Escape) before a model was saved. */
  async configure(): Promise<boolean> {
    const picked = await vscode.window.showQuickPick(
      PROVIDERS.map((p) => ({ label: p.label, detail: p.detail, provider: p })),
      { title: 'Topic Forest: Configure Model (1/3): provider', ignoreFocusOut: true });
    if (!picked) return false;
    const provider = picked.provider;
    const base = provider.endpoint === undefined ? null : await this.askEndpoint(provider);
    if (base === undefined) return false;
    const key = await this.askKey(provider, base);
    if (key === undefined) return false;
    const model = await this.askModel(provider, base, key);
    if (model === undefined) return false;
    const settings = this.settings();
    await settings.update('models', withModelEntry(settings.get('models'), model, base));
    await settings.update('chatModel', model);
    await this.test(model, base ?? '');
    return true;
  }

  /** Test a model (default: the chat model) and say how it went. */
  async test(model?: string, apiBase?: string): Promise<TestModelResult | undefined> {
    if (this.server.state !== 'running') {
      void vscode.window.showWarningMessage('Topic Forest: the server is not running, so the model ' +
        'cannot be tested yet.');
      return undefined;
    }
    let result: TestModelResult;
    try {
      result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Topic Forest: testing ${model ?? 'the chat model'}…` },
        () => this.server.request('topicForest/testModel', { model: model ?? null, apiBase: apiBase ?? null }));
    } catch (error) {
      void vscode.window.showErrorMessage(`Topic Forest: ${errorMessage(error)}`);
      return undefined;
    }
    if (result.ok) {
      void vscode.window.showInformationMessage(`Topic Forest: ${describe(result)} It is the chat model now.`);
    } else {
      void vscode.window.showErrorMessage(`Topic Forest: ${describe(result)}`, 'Configure Model')
        .then((choice) => choice && vscode.commands.executeCommand('topicForest.configureModel'));
    }
    return result;
  }

  private async askEndpoint(provider: Provider): Promise<string | undefined> {
    const url = await vscode.window.showInputBox({
      title: `Topic Forest: ${provider.label}: the server's URL`, value: provider.endpoint,
      ignoreFocusOut: true, prompt: 'Where the server listens (http:// or https://)',
      validateInput: (value) => (/^https?:\/\/[^\s/]+/.test(value.trim()) ? undefined
        : 'An http:// or https:// URL, such as http://127.0.0.1:8080/v1'),
    });
    return url?.trim().replace(/\/+$/, '');
  }

  /** The key to use (stored now), '' for none; undefined if the user left. */
  private async askKey(provider: Provider, base: string | null): Promise<string | undefined> {
    const scope = { provider: provider.provider, apiBase: base };
    const stored = await this.keys.get(scope);
    const keep = stored ? 'Empty: keep the stored key.' : provider.key === 'optional'
      ? 'Empty: none (most local servers need none).'
      : `Empty: use ${provider.keyVariable ?? 'the provider\'s key variable'} from the environment.`;
    const key = await vscode.window.showInputBox({
      title: `Topic Forest: Configure Model (2/3): ${provider.label} API key`, password: true,
      ignoreFocusOut: true, prompt: `Kept in VS Code's secret storage, never in settings. ${keep}`,
      validateInput: (value) => (/\s/.test(value.trim()) ? 'A key has no spaces or line breaks' : undefined),
    });
    if (key === undefined) return undefined;
    if (key.trim() !== '') await this.keys.set(scope, key.trim());
    return key.trim() || stored || '';
  }

  private async askModel(provider: Provider, base: string | null, key: string): Promise<string | undefined> {
    let names = provider.models;
    let trouble = '';
    if (base !== null) {
      try {
        names = await listModels(provider, base, key || undefined, this.get);
        if (names.length === 0) trouble = `${base} lists no models`;
      } catch (error) {
        trouble = `could not list the models at ${base}: ${errorMessage(error)}`;
      }
    }
    const picked = await vscode.window.showQuickPick([...names, TYPE_NAME], {
      title: 'Topic Forest: Configure Model (3/3): model', ignoreFocusOut: true,
      placeHolder: trouble ? `${trouble}; type a model name instead` : 'The chat model',
    });
    if (picked === undefined) return undefined;
    const name = picked === TYPE_NAME ? (await vscode.window.showInputBox({
      title: `Topic Forest: ${provider.label} model name`, ignoreFocusOut: true,
      prompt: provider.prefix ? `Without the "${provider.prefix}" prefix` : 'As the provider names it',
      validateInput: (value) => (value.trim() ? undefined : 'A model name'),
    }))?.trim() : picked;
    return name ? provider.prefix + name : undefined; // its own server's name, prefixed
  }
}
