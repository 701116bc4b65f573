// Wires the server, the chat view, the topic tree, commands and the status bar together.
import * as vscode from 'vscode';
import { ApiKeyStore } from './apiKeys';
import { attachable } from './attachments';
import { ChatController } from './chatView';
import { ChatViewProvider } from './chatViewProvider';
import { CodeBlockActions, EditorTracker, PROPOSAL_SCHEME, ProposalProvider } from './codeBlocks';
import { TopicCommands } from './commands';
import { CONTEXT_SCHEME, ContextViewProvider } from './contextView';
import { findBundle, ManagedEnvironment } from './environment';
import { PREVIEW_SCHEME, PreviewProvider } from './preview';
import { languageClientFactory } from './languageClient';
import { McpServerOffer } from './mcpServer';
import { ModelSetup } from './modelSetup';
import { modelChoices } from './models';
import { ServerManager } from './server';
import { BudgetStatus } from './statusBar';
import { TopicTreeProvider } from './topicTree';
import { TopicsViewState } from './topicsView';

let server: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Topic Forest', { log: true });
  const bundle = findBundle(context.extensionPath);
  const version = (context.extension.packageJSON as { version?: string }).version;
  const mcp = new McpServerOffer(version, bundle?.constraints); // for VS Code's agent, same Python
  const createClient = languageClientFactory(log);
  server = new ServerManager(log, {
    create: (launch) => {
      mcp.launched(launch.python);
      return createClient(launch);
    },
    environment: bundle && new ManagedEnvironment(context.globalStorageUri.fsPath, bundle),
    extensionVersion: version,
  });
  // the tree and the budget describe the next request of the chat's current thread
  const tree = new TopicTreeProvider(server, () => chat.threadId, log);
  const view = vscode.window.createTreeView('topicForest.topics', { treeDataProvider: tree,
    showCollapseAll: true });
  const status = new BudgetStatus();
  const topicsView = new TopicsViewState(view, status);
  const preview = new PreviewProvider(server);
  const contextView = new ContextViewProvider(server);
  const editors = new EditorTracker();
  const proposals = new ProposalProvider();
  const editor = () => editors.editor;
  const chat = new ChatController(server, context.workspaceState, () => tree.refresh(),
    { editor, codeBlocks: new CodeBlockActions(proposals, editor), onAttachments: (n) => status.attachments(n) });
  const focusChat = async (): Promise<void> => {
    await vscode.commands.executeCommand('topicForest.chat.focus');
    chat.focusInput();
  };
  const keys = new ApiKeyStore(context.secrets, context.globalState, server, (m) => log.warn(m));
  const modelSetup = new ModelSetup(server, keys, () => {
    const config = vscode.workspace.getConfiguration('topicForest');
    return { get: (key) => config.get(key),
      update: (key, value) => config.update(key, value, vscode.ConfigurationTarget.Global) };
  });
  const hasModel = () => modelChoices(vscode.workspace.getConfiguration('topicForest')).length > 0;
  topicsView.hasModel(hasModel());

  tree.onDidLoad((result) => {
    topicsView.loaded(result);
    contextView.refreshOpen();
  });
  server.onDidChangeState((state) => {
    topicsView.serverState(state);
    // running: load topics; failed: clear the stale ones so the welcome content shows
    if (state === 'running' || state === 'failed') tree.refresh(0);
    if (state === 'running') {
      void keys.send(); // before the first turn: requests are answered in order
      chat.serverStarted();
    }
  });

  context.subscriptions.push(
    log, server, tree, view, status, chat, editors, mcp, keys.watch(), mcp.register((message) => log.warn(message)),
    vscode.window.registerWebviewViewProvider('topicForest.chat', new ChatViewProvider(
      context.extensionUri, chat), { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, preview),
    contextView,
    vscode.workspace.registerTextDocumentContentProvider(CONTEXT_SCHEME, contextView),
    vscode.commands.registerCommand('topicForest.showContext', () => contextView.show(chat.threadId)),
    vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, proposals),
    server.onNotification('topicForest/topicsChanged', () => {
      tree.refresh();
      preview.refreshOpen();
    }),
    ...new TopicCommands(server, tree).register(),
    vscode.commands.registerCommand('topicForest.restartServer', async () => {
      log.info('restart requested');
      await server?.restart();
    }),
    vscode.commands.registerCommand('topicForest.showLog', () => log.show()),
    vscode.commands.registerCommand('topicForest.openSettings', () =>
      vscode.commands.executeCommand('workbench.action.openSettings', '@ext:topicforest.topic-forest')),
    vscode.commands.registerCommand('topicForest.newThread', () => chat.newThread()),
    vscode.commands.registerCommand('topicForest.chatThreads', () => chat.threads.show()),
    vscode.commands.registerCommand('topicForest.focusChat', focusChat),
    vscode.commands.registerCommand('topicForest.askTopicForest', async () => {
      chat.pending.addSelection();
      await focusChat();
    }),
    vscode.commands.registerCommand('topicForest.addSelectionToChat', async () => {
      if (!chat.pending.addSelection()) {
        const from = editor();
        void vscode.window.showInformationMessage(from && !attachable(from)
          ? 'Topic Forest: only a selection in a file or an untitled editor can be attached (this ' +
            `editor shows a ${from.document.uri.scheme}: document, not a file).`
          : 'Topic Forest: select some code first (or it is attached already).');
        return;
      }
      await focusChat();
    }),
    vscode.commands.registerCommand('topicForest.configureModel', () => modelSetup.configure()),
    vscode.commands.registerCommand('topicForest.testModel', () => modelSetup.test()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      mcp.configurationChanged(event);
      if (event.affectsConfiguration('topicForest.chatModel') ||
        event.affectsConfiguration('topicForest.models')) {
        chat.configurationChanged();
        topicsView.hasModel(hasModel());
      }
      return server?.configurationChanged(event);
    }),
    // Restricted Mode refused the workspace's own interpreter (server.ts); trust lifts that
    vscode.workspace.onDidGrantWorkspaceTrust(() => server?.restart()),
    vscode.window.onDidChangeActiveTextEditor((editor) => {
      const uri = editor?.document.uri;
      if (!uri || uri.scheme === 'file') server?.notify('topicForest/activeFileChanged', { uri: uri?.toString() ?? null });
    }),
  );
  void server.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
