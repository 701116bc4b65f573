// Turns a failed request into a message plus what the user can do about it.
import { ErrorCodes } from './protocol';

export type ErrorAction = 'openSettings' | 'showLog' | 'restartServer' | 'configureModel';

export interface ErrorView {
  code: number | null;
  message: string;
  hint: string;
  actions: { id: ErrorAction; label: string }[];
}

const SETTINGS = { id: 'openSettings', label: 'Open Settings' } as const;
const LOG = { id: 'showLog', label: 'Show Log' } as const;
const RESTART = { id: 'restartServer', label: 'Restart Server' } as const;
const MODEL = { id: 'configureModel', label: 'Configure Model' } as const;

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

/** The request never reached a running server. */
export class ServerNotRunningError extends Error {
  constructor() {
    super('The Topic Forest server is not running.');
    this.name = 'ServerNotRunningError';
  }
}

// vscode-jsonrpc's codes for a connection that closed (or could not write) under a request
const CONNECTION_LOST = new Set([-32099, -32097, -32096]);

/** The server went away under the request (a restart, a crash) or was not there. */
export function isConnectionLost(error: unknown): boolean {
  const code = errorCode(error);
  return error instanceof ServerNotRunningError || (code !== null && CONNECTION_LOST.has(code));
}

export function isCancellation(error: unknown): boolean {
  return errorCode(error) === ErrorCodes.RequestCancelled || (error instanceof Error &&
    error.name === 'Canceled');
}

type Advice = Pick<ErrorView, 'hint' | 'actions'>;

// What the user can do, per JSON-RPC error code the server sends.
const ADVICE: Partial<Record<number, Advice>> = {
  // The server's message already says how to set a model (as markdown): no second copy here.
  [ErrorCodes.ChatModelNotConfigured]: { hint: '', actions: [MODEL] },
  [ErrorCodes.ProviderError]: {
    hint: 'The model provider failed. Check "topicForest.chatModel" and "topicForest.apiBase", ' +
      'that the API key is set in the environment, and that the provider is reachable.',
    actions: [SETTINGS, LOG],
  },
  [ErrorCodes.StoreError]: {
    hint: 'The memory database could not be used. Check that "topicForest.storePath" (or your ' +
      'user data directory) is writable; details are in the log.',
    actions: [SETTINGS, LOG],
  },
  [ErrorCodes.UnknownTopic]: {
    hint: 'The topic no longer exists (it may have been merged). The topic list has been refreshed.',
    actions: [],
  },
  [ErrorCodes.UnknownWorkspace]: {
    hint: 'Open a workspace folder, or restart the server.',
    actions: [RESTART],
  },
  [ErrorCodes.InvalidParams]: {
    hint: 'The server rejected the request; details are in the log.',
    actions: [LOG],
  },
};

// Anything else (no code, a transport failure, an unknown code): the server is the suspect.
const NOT_ANSWERING: Advice = {
  hint: 'The Topic Forest server is not answering. Restart it, or look at the log for the cause.',
  actions: [RESTART, LOG],
};

export function describeError(error: unknown): ErrorView {
  const code = errorCode(error);
  const { hint, actions } = (code !== null && ADVICE[code]) || NOT_ANSWERING;
  return { code, message: errorMessage(error), hint, actions: [...actions] };
}
