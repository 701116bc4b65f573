// Settings under `topicForest.*` -> the server's camelCase options (initializationOptions and
// workspace/didChangeConfiguration). `python` is the client's own; secrets never live here (a
// team memory's password comes from ~/.pgpass or PGPASSWORD, never `storeUrl`).

/** Settings that choose which memory a workspace opens: changing one restarts the server. */
export const MEMORY_SETTING_KEYS = ['storePath', 'storeUrl', 'user'] as const;

/** The part of vscode.WorkspaceConfiguration we read (keeps this module free of `vscode`). */
export interface ConfigReader {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- mirrors vscode's
  get<T>(key: string): T | undefined;
}

/** A `models` entry: a model string (shares apiBase), or one with its own endpoint. */
export type ModelEntry = string | { model: string; apiBase: string | null };

export interface ServerSettings {
  chatModel: string | null;
  models: ModelEntry[];
  summaryModels: string[] | null;  // null (unset): the chat model writes summaries
  apiBase: string | null;
  historyBudget: number | 'auto';
  attachmentBudget: number;
  mergeThreshold: number;
  maxTopics: number;
  storePath: string | null;
  storeUrl: string | null;
  user: string | null;
}

export const SERVER_SETTING_KEYS = [
  'chatModel', 'models', 'summaryModels', 'apiBase', 'historyBudget', 'attachmentBudget', 'mergeThreshold',
  'maxTopics', 'storePath', 'storeUrl', 'user',
] as const satisfies readonly (keyof ServerSettings)[];

const optionalString = (value: unknown): string | null =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : null;

/** `models` entries as the server takes them; anything else is dropped. */
export function modelEntries(value: unknown): ModelEntry[] {
  if (!Array.isArray(value)) return [];
  return (value as unknown[]).flatMap((entry): ModelEntry[] => {
    if (typeof entry === 'string') return entry.trim() ? [entry.trim()] : [];
    const { model, apiBase } = (entry ?? {}) as { model?: unknown; apiBase?: unknown };
    if (typeof model !== 'string' || !model.trim()) return [];
    return [{ model: model.trim(), apiBase: optionalString(apiBase) }];
  });
}

/** Empty strings mean "not set" (null); numbers pass through so the server validates them. */
export function serverSettings(config: ConfigReader): ServerSettings {
  const budget = config.get<unknown>('historyBudget');
  const models = config.get<unknown>('summaryModels');
  return {
    chatModel: optionalString(config.get('chatModel')),
    models: modelEntries(config.get('models')),
    summaryModels: Array.isArray(models)
      ? models.filter((m): m is string => typeof m === 'string' && m.trim() !== '')
      : null,
    apiBase: optionalString(config.get('apiBase')),
    historyBudget:
      typeof budget === 'number' ? budget
        : typeof budget !== 'string' || budget.trim() === '' || budget === 'auto' ? 'auto'
          : Number.isFinite(Number(budget)) ? Number(budget) : 'auto',
    attachmentBudget: config.get<number>('attachmentBudget') ?? 4096,
    mergeThreshold: config.get<number>('mergeThreshold') ?? 0.15,
    maxTopics: config.get<number>('maxTopics') ?? 16,
    storePath: optionalString(config.get('storePath')),
    storeUrl: optionalString(config.get('storeUrl')),
    user: optionalString(config.get('user')),
  };
}
