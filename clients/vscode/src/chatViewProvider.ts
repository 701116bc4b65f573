// The chat's WebviewView: its page, its messages to the controller, and whether it is visible
// (a context key: what offers to open the chat is hidden while the chat is open).
import * as vscode from 'vscode';
import { chatHtml, makeNonce } from './chatHtml';
import type { FromWebview } from './chatMessages';
import type { ChatController } from './chatView';
import { CONTEXT_KEYS, setContext } from './topicsView';

export class ChatViewProvider implements vscode.WebviewViewProvider {
  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: Pick<ChatController, 'attach' | 'handle' | 'reportError'>,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    const root = vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview');
    view.webview.options = { enableScripts: true, localResourceRoots: [root] };
    view.webview.html = chatHtml({
      cspSource: view.webview.cspSource,
      nonce: makeNonce(),
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(root, 'chat.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(root, 'chat.css')).toString(),
    });
    this.controller.attach(view.webview);
    view.webview.onDidReceiveMessage((m: FromWebview) => {
      this.controller.handle(m).catch((error: unknown) => this.controller.reportError(error));
    });
    setContext(CONTEXT_KEYS.chatVisible, view.visible);
    view.onDidChangeVisibility(() => setContext(CONTEXT_KEYS.chatVisible, view.visible));
    view.onDidDispose(() => {
      setContext(CONTEXT_KEYS.chatVisible, false);
      this.controller.attach(undefined);
    });
  }
}
