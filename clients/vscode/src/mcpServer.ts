// Offers `topicforest mcp` (the workspace's topic memory as read-only MCP tools, docs/mcp.md) to
// VS Code's own agent through its MCP server definition provider API (VS Code 1.101+; absent in
// 1.100, where nothing is offered), when `topicForest.mcpServer` is on. It runs on the
// interpreter the language server was started with, isolated (-I) in a neutral directory, like
// every interpreter the extension starts (python.ts).
import * as vscode from 'vscode';
import { type Exec, execProgram, ISOLATED, neutralDirectory } from './python';

export const PROVIDER_ID = 'topicForest.memory';
export const MCP_LABEL = 'Topic Forest memory';
/** pyproject.toml's `mcp` extra (test/unit/mcpServer.test.ts keeps the two equal). */
export const MCP_SDK = 'mcp==2.3.0';
const SETTINGS = ['mcpServer', 'storePath', 'storeUrl', 'user'].map((key) => `topicForest.${key}`);

export interface McpLaunch {
  folder: string;
  storePath?: string | null;
  storeUrl?: string | null;
  user?: string | null;
}

/** `python <these>` starts the MCP server for a workspace's memory. */
export function mcpArgs(launch: McpLaunch): string[] {
  const args = [ISOLATED, '-m', 'topicforest', 'mcp', '--workspace', launch.folder];
  if (launch.storePath) args.push('--store-path', launch.storePath);
  if (launch.storeUrl) args.push('--store-url', launch.storeUrl);
  if (launch.user) args.push('--user', launch.user);
  return args;
}

/** The slice of the 1.101 API we use (typed here: the extension builds against 1.100's types). */
export interface McpStdioDefinition { cwd?: vscode.Uri }
export interface McpProvider {
  onDidChangeMcpServerDefinitions: vscode.Event<void>;
  provideMcpServerDefinitions(): McpStdioDefinition[];
  resolveMcpServerDefinition(server: McpStdioDefinition): Promise<McpStdioDefinition | undefined>;
}
export interface McpApi {
  McpStdioServerDefinition?: new (label: string, command: string, args?: string[],
    env?: Record<string, string | number | null>, version?: string) => McpStdioDefinition;
  lm?: { registerMcpServerDefinitionProvider?: (id: string, provider: McpProvider) => vscode.Disposable };
}

const vscodeMcpApi = (): McpApi => vscode as unknown as McpApi;

export class McpServerOffer implements McpProvider, vscode.Disposable {
  private python: string | undefined;
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeMcpServerDefinitions = this.changed.event;

  /** `constraints`: the bundled pins (environment.ts: Bundle), which also pin the SDK's. */
  constructor(private readonly version: string | undefined, private readonly constraints?: string,
    private readonly api = vscodeMcpApi(), private readonly exec: Exec = execProgram) {}

  /** Offers the server to VS Code. package.json contributes the provider under both names the
   *  API has had (`modelContextServerCollections` in 1.100, `mcpServerDefinitionProviders` from
   *  1.101); where the API is missing or refuses, nothing is offered and the rest works on. */
  register(warn: (message: string) => void): vscode.Disposable {
    const register = this.api.lm?.registerMcpServerDefinitionProvider;
    try {
      if (register) return register(PROVIDER_ID, this);
    } catch (error) {
      warn(`the memory's MCP server is not offered to VS Code's agent: ${String(error)}`);
    }
    return new vscode.Disposable(() => undefined);
  }

  /** The language server was started with `python` (the MCP server runs on the same one). */
  launched(python: string): void {
    if (python === this.python) return;
    this.python = python;
    this.changed.fire();
  }

  configurationChanged(event: vscode.ConfigurationChangeEvent): void {
    if (SETTINGS.some((key) => event.affectsConfiguration(key))) this.changed.fire();
  }

  provideMcpServerDefinitions(): McpStdioDefinition[] {
    const config = vscode.workspace.getConfiguration('topicForest');
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const Definition = this.api.McpStdioServerDefinition;
    if (config.get<boolean>('mcpServer') !== true || !this.python || !folder || !Definition) return [];
    const text = (key: string): string | null => config.get<string>(key)?.trim() || null;
    const args = mcpArgs({ folder, storePath: text('storePath'), storeUrl: text('storeUrl'), user: text('user') });
    const definition = new Definition(MCP_LABEL, this.python, args, {}, this.version);
    definition.cwd = vscode.Uri.file(neutralDirectory()); // never the workspace (python.ts: ISOLATED)
    return [definition];
  }

  /** Before VS Code starts it: the SDK is an extra (`topicforest[mcp]`) that the extension's
   *  own environment does not install up front (most users never turn the server on); without
   *  it, offer to install it there, pinned like the rest, instead of starting a server that
   *  cannot run. */
  async resolveMcpServerDefinition(server: McpStdioDefinition): Promise<McpStdioDefinition | undefined> {
    const python = this.python;
    if (!python) return undefined;
    if (await this.hasSdk(python)) return server;
    const install = 'Install the MCP SDK';
    const choice = await vscode.window.showWarningMessage(`Topic Forest: the memory's MCP server ` +
      `needs the MCP SDK (${MCP_SDK}) in ${python}; or run  ${python} -m pip install '${MCP_SDK}'  ` +
      '(or turn topicForest.mcpServer off).', install);
    if (choice !== install) return undefined;
    const pins = this.constraints ? ['-c', this.constraints] : [];
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Topic Forest: installing ${MCP_SDK}` },
      () => this.exec(python, ['-m', 'pip', 'install', '--disable-pip-version-check', ...pins, MCP_SDK],
        { timeoutMs: 600_000 }));
    if (result.code === 0 && await this.hasSdk(python)) return server;
    const why = (result.stderr || result.stdout).trim().split('\n').at(-1) ?? '';
    void vscode.window.showErrorMessage(`Topic Forest: installing ${MCP_SDK} into ${python} failed` +
      `${why ? `: ${why}` : ''}.`);
    return undefined;
  }

  private async hasSdk(python: string): Promise<boolean> {
    return (await this.exec(python, ['-c', 'import mcp.server'], { timeoutMs: 60_000 })).code === 0;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
