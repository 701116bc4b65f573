// Turns a failed request into a message plus what the user can do about it.
import { ErrorCodes } from './protocol';

export type ErrorAction = 'openSettings' | 'showLog' | 'restartServer';

export interface ErrorView {
  code: number | null;
  message: string;
  hint: string;
  actions: { id: ErrorAction; label: string }[];
}

const SETTINGS = { id: 'openSettings', label: 'Open Settings' } as const;
const LOG = { id: 'showLog', label: 'Show Log' } as const;
const RESTART = { id: 'restartServer', label: 'Restart Server' } as const;

export function errorCode(error: unknown): number | null {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const { code } = error;
    if (typeof code === 'number') return code;
  }
  return null;
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null && 'message' in error) {
    return String((error).message);
  }
  return String(error);
}

export function isCancellation(error: unknown): boolean {
  return errorCode(error) === ErrorCodes.RequestCancelled || (error instanceof Error &&
    error.name === 'Canceled');
}

export function describeError(error: unknown): ErrorView {
  const code = errorCode(error);
  const message = errorMessage(error);
  switch (code) {
    case ErrorCodes.ChatModelNotConfigured:
      return {
        code, message,
        hint: 'Set "topicForest.chatModel" to a litellm model string (for example "gpt-4o-mini", ' +
          '"ollama/llama3", or "openai/<name>" together with "topicForest.apiBase"), and put the ' +
          "provider's API key in the environment VS Code starts from (e.g. OPENAI_API_KEY).",
        actions: [SETTINGS],
      };
    case ErrorCodes.ProviderError:
      return {
        code, message,
        hint: 'The model provider failed. Check "topicForest.chatModel" and "topicForest.apiBase", ' +
          'that the API key is set in the environment, and that the provider is reachable.',
        actions: [SETTINGS, LOG],
      };
    case ErrorCodes.StoreError:
      return {
        code, message,
        hint: 'The memory database could not be used. Check that "topicForest.storePath" (or your ' +
          'user data directory) is writable; details are in the log.',
        actions: [SETTINGS, LOG],
      };
    case ErrorCodes.UnknownTopic:
      return { code, message, hint: 'The topic no longer exists (it may have been merged). The ' +
        'topic list has been refreshed.', actions: [] };
    case ErrorCodes.UnknownWorkspace:
      return { code, message, hint: 'Open a workspace folder, or restart the server.',
        actions: [RESTART] };
    case ErrorCodes.InvalidParams:
      return { code, message, hint: 'The server rejected the request; details are in the log.',
        actions: [LOG] };
    default:
      return {
        code, message,
        hint: 'The Topic Forest server is not answering. Restart it, or look at the log for the cause.',
        actions: [RESTART, LOG],
      };
  }
}
