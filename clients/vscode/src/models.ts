// The chat header's model picker: `topicForest.chatModel` plus the `topicForest.models` list
// (strings, or objects with their own endpoint: the server knows which); the choice is
// remembered per workspace and sent as `model` with each turn.
import type * as vscode from 'vscode';
import { type ConfigReader, modelEntries } from './settings';

const CHOICE_KEY = 'topicForest.model';

/** chatModel first, then the list; blanks and repeats dropped. */
export function modelChoices(config: ConfigReader): string[] {
  const listed = modelEntries(config.get<unknown>('models'))
    .map((entry) => (typeof entry === 'string' ? entry : entry.model));
  const all = [config.get<unknown>('chatModel'), ...listed];
  const names = all.filter((m): m is string => typeof m === 'string' && m.trim() !== '')
    .map((m) => m.trim());
  return [...new Set(names)];
}

export class ModelChoice {
  constructor(private readonly state: vscode.Memento, private readonly config: () => ConfigReader) {}

  get models(): string[] {
    return modelChoices(this.config());
  }

  /** The remembered choice while it is still offered, else the first (chatModel); null: none. */
  get current(): string | null {
    const models = this.models;
    const chosen = this.state.get<string>(CHOICE_KEY);
    return chosen !== undefined && models.includes(chosen) ? chosen : models[0] ?? null;
  }

  async choose(model: string): Promise<void> {
    if (this.models.includes(model)) await this.state.update(CHOICE_KEY, model);
  }
}
