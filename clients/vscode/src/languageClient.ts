// The one place that touches vscode-languageclient: a ServerProcess over stdio.
import type * as vscode from 'vscode';
import { LanguageClient, State } from 'vscode-languageclient/node';
import { SERVE_ARGS } from './python';
import type { Launch, ServerProcess } from './server';
import { serverOutput } from './serverOutput';

export function languageClientFactory(log: vscode.LogOutputChannel): (launch: Launch) => ServerProcess {
  return (launch) => {
    const client = new LanguageClient('topicForest', 'Topic Forest', {
      command: launch.python,
      args: SERVE_ARGS,
      options: { cwd: launch.cwd, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    }, {
      outputChannel: serverOutput(log),
      initializationOptions: launch.initializationOptions,
      // The chat memory has no documents to sync; an empty selector keeps didOpen/didChange off.
      documentSelector: [],
      initializationFailedHandler: (error) => {
        log.error(`server failed to initialize: ${String(error)}`);
        return false;
      },
    });
    return {
      start: () => client.start(),
      stop: async (timeoutMs) => {
        await client.stop(timeoutMs);
        await client.dispose().catch(() => undefined);
      },
      isRunning: () => client.isRunning(),
      sendRequest: (method, params, token) =>
        token ? client.sendRequest(method, params, token) : client.sendRequest(method, params),
      sendNotification: (method, params) => client.sendNotification(method, params),
      onNotification: (method, handler) => client.onNotification(method, handler),
      onDidChangeRunning: (listener) => client.onDidChangeState((event) => {
        if (event.newState === State.Running) listener(true);
        else if (event.newState === State.Stopped) listener(false);
      }),
    };
  };
}
