import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import { mocked } from 'jest-mock';
import * as vscode from 'vscode';
import { clearAllMocks, EventEmitter } from '../mocks/vscode';
import { ApiKeyStore } from '../../src/apiKeys';
import { listModels, ModelSetup, PROVIDERS, withModelEntry } from '../../src/modelSetup';
import type { TestModelResult } from '../../src/protocol';
import { FakeConnection, Memento } from './fakes';

class FakeSecrets {
  readonly values = new Map<string, string>();
  private readonly changed = new EventEmitter<{ key: string }>();
  readonly onDidChange = this.changed.event;
  get(key: string) { return Promise.resolve(this.values.get(key)); }
  store(key: string, value: string) { this.values.set(key, value); this.changed.fire({ key }); return Promise.resolve(); }
  delete(key: string) { this.values.delete(key); this.changed.fire({ key }); return Promise.resolve(); }
}

const provider = (label: string) => PROVIDERS.find((p) => p.label === label)!;
const OK: TestModelResult = { model: 'm', apiBase: null, ok: true, problem: null, message: 'm answered.', detail: '' };

function setup(test: TestModelResult = OK, listed: unknown = { data: [{ id: 'qwen2.5-coder-7b' }] }) {
  const conn = new FakeConnection((method) => (method === 'topicForest/testModel' ? test : { count: 1 }));
  const secrets = new FakeSecrets();
  const state = new Memento();
  const keys = new ApiKeyStore(secrets, state, conn);
  const settings = new Map<string, unknown>();
  const fetched: { url: string; headers: Record<string, string> }[] = [];
  const flow = new ModelSetup(conn, keys, () => ({
    get: (key) => settings.get(key),
    update: (key, value) => { settings.set(key, value); return Promise.resolve(); },
  }), (url, headers) => { fetched.push({ url, headers }); return Promise.resolve(listed); });
  return { conn, secrets, state, keys, settings, fetched, flow };
}

/** The user's answers: the provider's label, then each input box's and pick's value, in order. */
function answer(label: string, ...steps: (string | undefined)[]) {
  mocked(vscode.window.showQuickPick).mockImplementationOnce((items: unknown) =>
    Promise.resolve((items as { label: string }[]).find((i) => i.label === label)) as never);
  for (const step of steps) {
    if (step?.startsWith('pick:')) {
      mocked(vscode.window.showQuickPick).mockResolvedValueOnce(step.slice(5));
    } else {
      mocked(vscode.window.showInputBox).mockResolvedValueOnce(step);
    }
  }
}

describe('Configure Model', () => {
  beforeEach(() => clearAllMocks());

  it('a local server: its URL, an optional key, a model from its list, saved with its endpoint, tested', async () => {
    const { conn, secrets, settings, fetched, flow, state } = setup();
    settings.set('models', ['gpt-4o-mini', { model: 'openai/qwen2.5-coder-7b', apiBase: 'http://old/v1' }]);
    answer('LM Studio', 'http://127.0.0.1:1234/v1/', 'lm-key-123', 'pick:qwen2.5-coder-7b');
    expect(await flow.configure()).toBe(true);

    expect(fetched).toEqual([{ url: 'http://127.0.0.1:1234/v1/models', headers: { Authorization: 'Bearer lm-key-123' } }]);
    expect(settings.get('chatModel')).toBe('openai/qwen2.5-coder-7b');
    expect(settings.get('models')).toEqual(['gpt-4o-mini',
      { model: 'openai/qwen2.5-coder-7b', apiBase: 'http://127.0.0.1:1234/v1' }]);
    // the key: in the secret store and handed to the server, never in settings or the index
    expect([...secrets.values.values()]).toEqual(['lm-key-123']);
    expect(JSON.stringify([...settings.values()]) + JSON.stringify(state.get('topicForest.apiKeys')))
      .not.toContain('lm-key-123');
    expect(conn.sent.map((s) => [s.method, s.params])).toEqual([
      ['topicForest/setApiKeys', { keys: [{ provider: 'openai', apiBase: 'http://127.0.0.1:1234/v1', apiKey: 'lm-key-123' }] }],
      ['topicForest/testModel', { model: 'openai/qwen2.5-coder-7b', apiBase: 'http://127.0.0.1:1234/v1' }],
    ]);
    expect(mocked(vscode.window.showInformationMessage).mock.calls[0]?.[0]).toContain('m answered.');
  });

  it('a hosted provider: a password box, a built-in model, the provider\'s own endpoint', async () => {
    const { conn, settings, flow } = setup();
    answer('Anthropic', 'sk-ant-test-1234', 'pick:claude-3-5-haiku-latest');
    await flow.configure();
    expect(mocked(vscode.window.showInputBox).mock.calls[0]?.[0]).toMatchObject({ password: true });
    expect(settings.get('chatModel')).toBe('anthropic/claude-3-5-haiku-latest');
    expect(settings.get('models')).toEqual([{ model: 'anthropic/claude-3-5-haiku-latest', apiBase: null }]);
    expect(conn.sent.at(-1)).toMatchObject({ method: 'topicForest/testModel',
      params: { model: 'anthropic/claude-3-5-haiku-latest', apiBase: '' } });
  });

  it('a failed test says what is wrong in plain words and offers to configure again', async () => {
    const refused: TestModelResult = { model: 'gemini/gemini-2.0-flash', apiBase: null, ok: false,
      problem: 'keyRefused', message: 'The API key was refused for gemini/gemini-2.0-flash: check it.',
      detail: 'WorkerError: AuthenticationError: API key not valid ***' };
    const { flow } = setup(refused);
    answer('Google Gemini', 'bad-key-123456', 'pick:Type a model name…', 'gemini-2.0-flash');
    await flow.configure();
    const [message, action] = mocked(vscode.window.showErrorMessage).mock.calls[0] ?? [];
    expect(message).toBe('Topic Forest: The API key was refused for gemini/gemini-2.0-flash: check it. ' +
      '(WorkerError: AuthenticationError: API key not valid ***)');
    expect(action).toBe('Configure Model');
  });

  it('Escape at the key saves nothing and sends nothing', async () => {
    const { conn, settings, flow } = setup();
    answer('OpenAI', undefined);
    expect(await flow.configure()).toBe(false);
    expect(settings.size).toBe(0);
    expect(conn.sent).toEqual([]);
  });

  it('an unreachable server\'s list: the user types the name instead', async () => {
    const { flow, settings } = setup();
    (flow as unknown as { get: unknown }).get = () => Promise.reject(new Error('fetch failed'));
    answer('Ollama', 'http://127.0.0.1:11434', '', 'pick:Type a model name…', 'qwen2.5-coder:7b');
    await flow.configure();
    const pick = mocked(vscode.window.showQuickPick).mock.calls[1]?.[1] as { placeHolder: string };
    expect(pick.placeHolder).toContain('could not list the models at http://127.0.0.1:11434: fetch failed');
    expect(settings.get('chatModel')).toBe('ollama/qwen2.5-coder:7b');
  });
});

describe('model lists and entries', () => {
  it('reads Ollama\'s /api/tags and an OpenAI-compatible /models, ignoring junk', async () => {
    const tags = { models: [{ name: 'llama3.2:3b' }, { name: 7 }, null, { name: 'qwen2.5-coder:7b' }] };
    expect(await listModels(provider('Ollama'), 'http://h:11434/', undefined, (url, headers) => {
      expect([url, headers]).toEqual(['http://h:11434/api/tags', {}]);
      return Promise.resolve(tags);
    })).toEqual(['llama3.2:3b', 'qwen2.5-coder:7b']);
    expect(await listModels(provider('llama.cpp'), 'http://h/v1', undefined,
      () => Promise.resolve('not json'))).toEqual([]);
  });

  it('an entry for a model replaces its earlier one, keeping the others', () => {
    expect(withModelEntry(['a', { model: 'b', apiBase: 'http://x' }, 'b'], 'b', null))
      .toEqual(['a', { model: 'b', apiBase: null }]);
    expect(withModelEntry(undefined, 'c', 'http://y')).toEqual([{ model: 'c', apiBase: 'http://y' }]);
  });
});

describe('API key store', () => {
  it('keeps a key per provider and endpoint, forgets an emptied one, and sends only while running', async () => {
    const { conn, keys } = setup();
    await keys.set({ provider: 'anthropic', apiBase: null }, 'ant-key-123');
    await keys.set({ provider: 'openai', apiBase: 'http://h/v1' }, 'local-key-1');
    await keys.set({ provider: 'anthropic', apiBase: null }, '');
    expect(await keys.all()).toEqual([{ provider: 'openai', apiBase: 'http://h/v1', apiKey: 'local-key-1' }]);
    expect(conn.sent.at(-1)?.params).toEqual({ keys: await keys.all() });
    conn.setState('starting');
    expect(await keys.send()).toBe(false);
  });

  it('a refusal is reported without the key', async () => {
    const warnings: string[] = [];
    const conn = new FakeConnection(() => Promise.reject(new Error('keys[0].apiKey: must be printable')));
    const secrets = new FakeSecrets();
    const keys = new ApiKeyStore(secrets, new Memento(), conn,
      (m) => warnings.push(m));
    await keys.set({ provider: 'openai', apiBase: null }, 'secret-value-1');
    expect(warnings).toEqual(['could not hand the API keys to the server: keys[0].apiKey: must be printable']);
  });
});
