import { describe, it } from 'node:test';
import { expect } from 'expect';
import { serverSettings, SERVER_SETTING_KEYS } from '../../src/settings';
import pkg from '../../package.json';

const reader = (values: Record<string, unknown>) => ({
  get: <T>(key: string) => values[key] as T | undefined,
});

describe('settings mapping', () => {
  it('defaults: no model, summaries by the chat model (none: offline), auto budget', () => {
    expect(serverSettings(reader({}))).toEqual({
      chatModel: null, models: [], summaryModels: null, apiBase: null, historyBudget: 'auto', attachmentBudget: 4096,
      mergeThreshold: 0.15, maxTopics: 16, storePath: null, storeUrl: null, user: null,
    });
  });

  it('an empty summaryModels is sent as such: summaries stay offline', () => {
    expect(serverSettings(reader({ summaryModels: [] })).summaryModels).toEqual([]);
  });

  it('passes set values, trims strings, drops empty models', () => {
    expect(serverSettings(reader({
      chatModel: ' openai/stub ', summaryModels: ['openai/stub', '', 3], apiBase: 'http://127.0.0.1:9/v1',
      historyBudget: 1024, attachmentBudget: 2000, mergeThreshold: 0.3, maxTopics: 5, storePath: '/tmp/tf',
      storeUrl: ' postgresql://ann@db:5432/tf ', user: ' ann ', python: '/x/python',
      models: [' gpt-4o ', '', { model: 'openai/qwen', apiBase: 'http://127.0.0.1:1234/v1' },
        { model: 'anthropic/claude', apiBase: '' }, { apiBase: 'http://x' }, 5],
    }))).toEqual({
      chatModel: 'openai/stub', summaryModels: ['openai/stub'], apiBase: 'http://127.0.0.1:9/v1',
      models: ['gpt-4o', { model: 'openai/qwen', apiBase: 'http://127.0.0.1:1234/v1' },
        { model: 'anthropic/claude', apiBase: null }],
      historyBudget: 1024, attachmentBudget: 2000, mergeThreshold: 0.3, maxTopics: 5, storePath: '/tmp/tf',
      storeUrl: 'postgresql://ann@db:5432/tf', user: 'ann',
    });
  });

  it('the storeUrl pattern takes team URLs and refuses one with a password', () => {
    const prop = (pkg.contributes.configuration.properties as Record<string, { pattern?: string }>)[
      'topicForest.storeUrl'];
    const pattern = new RegExp(prop?.pattern ?? '(?!)');
    const accepted = ['', 'postgresql://ann@db.internal:5432/topicforest?sslmode=verify-full',
      'postgres://db/tf', 'postgresql://127.0.0.1:5432/tf'];
    const refused = ['postgresql://ann:secret@db/tf', 'mysql://ann@db/tf', 'db/tf'];
    expect(accepted.filter((url) => !pattern.test(url))).toEqual([]);
    expect(refused.filter((url) => pattern.test(url))).toEqual([]);
  });

  it('accepts a numeric string budget, falls back to auto for nonsense', () => {
    expect(serverSettings(reader({ historyBudget: '2048' })).historyBudget).toBe(2048);
    expect(serverSettings(reader({ historyBudget: '' })).historyBudget).toBe('auto');
    expect(serverSettings(reader({ historyBudget: 'lots' })).historyBudget).toBe('auto');
  });

  it('every server setting is contributed with a description and the same default', () => {
    const props = pkg.contributes.configuration.properties as Record<string,
      { default: unknown; markdownDescription?: string }>;
    const defaults = serverSettings(reader({}));
    for (const key of SERVER_SETTING_KEYS) {
      const prop = props[`topicForest.${key}`];
      expect({ key, described: (prop?.markdownDescription?.length ?? 0) > 20 }).toEqual({ key, described: true });
      const mapped = serverSettings(reader({ [key]: prop?.default }))[key];
      expect({ key, mapped }).toEqual({ key, mapped: defaults[key] });
    }
    expect(props['topicForest.python']).toBeDefined();
    expect(props['topicForest.storeUrl']?.markdownDescription).toMatch(/password.*pgpass.*PGPASSWORD/is);
    expect(Object.keys(props).filter((k) => /key|secret|password|token$/i.test(k))).toEqual([]);
  });
});
