// The memory's MCP server offered to VS Code's agent (src/mcpServer.ts).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { expect } from 'expect';
import * as vscode from 'vscode';
import pkg from '../../package.json';
import { MCP_SDK, mcpArgs, type McpApi, McpServerOffer, PROVIDER_ID } from '../../src/mcpServer';
import type { Exec } from '../../src/python';
import { clearAllMocks, configuration, Uri, window, workspace } from '../mocks/vscode';

const made: Definition[] = [];
class Definition {
  cwd?: vscode.Uri;
  constructor(readonly label: string, readonly command: string, readonly args: string[] = [],
    readonly env: Record<string, string | number | null> = {}, readonly version?: string) {
    made.push(this);
  }
}

const registered: { id: string; provider: unknown }[] = [];
const api: McpApi = {
  McpStdioServerDefinition: Definition,
  lm: { registerMcpServerDefinitionProvider: (id, provider) => {
    registered.push({ id, provider });
    return new vscode.Disposable(() => undefined);
  } },
};
const REPO_PYTHON = join(process.cwd(), '../../.venv/bin/python');
const exec = (code: number): Exec => () => Promise.resolve({ code, stdout: '', stderr: '' });

describe('the MCP server offered to VS Code', () => {
  afterEach(() => {
    configuration.clear();
    workspace.workspaceFolders = undefined;
    registered.length = 0;
    made.length = 0;
    clearAllMocks();
  });

  it('registers the provider package.json contributes; nothing, and no failure, without the API', () => {
    const warnings: string[] = [];
    const warn = (message: string): void => { warnings.push(message); };
    new McpServerOffer('0.1.0', undefined, api).register(warn);
    expect(registered.map((r) => r.id)).toEqual([PROVIDER_ID]);
    for (const contributed of [pkg.contributes.mcpServerDefinitionProviders,
      pkg.contributes.modelContextServerCollections] as { id: string }[][]) {
      expect(contributed.map((p) => p.id)).toEqual([PROVIDER_ID]);
    }
    expect(() => { new McpServerOffer('0.1.0', undefined, {}).register(warn).dispose(); }).not.toThrow();
    // a VS Code whose API refuses the provider: activation goes on, the log says why
    const refusing: McpApi = { lm: { registerMcpServerDefinitionProvider: () => { throw new Error('no'); } } };
    expect(() => { new McpServerOffer('0.1.0', undefined, refusing).register(warn).dispose(); }).not.toThrow();
    expect(warnings).toEqual([expect.stringContaining('not offered')]);
  });

  it('offers nothing until the setting is on and the server has an interpreter', () => {
    workspace.workspaceFolders = [{ uri: Uri.file('/ws') }];
    const offer = new McpServerOffer('0.1.0', undefined, api);
    expect(offer.provideMcpServerDefinitions()).toEqual([]);
    configuration.set('topicForest.mcpServer', true);
    expect(offer.provideMcpServerDefinitions()).toEqual([]); // no interpreter yet
    expect(pkg.contributes.configuration.properties['topicForest.mcpServer'].default).toBe(false);
  });

  it('runs topicforest mcp on the server\'s interpreter, isolated, outside the workspace', () => {
    workspace.workspaceFolders = [{ uri: Uri.file('/ws') }];
    configuration.set('topicForest.mcpServer', true);
    configuration.set('topicForest.storeUrl', ' postgresql://ann@db:5432/tf ');
    configuration.set('topicForest.user', 'ann');
    const offer = new McpServerOffer('0.1.0', undefined, api);
    let changes = 0;
    offer.onDidChangeMcpServerDefinitions(() => changes++);
    offer.launched('/env/bin/python');
    offer.launched('/env/bin/python');
    expect(changes).toBe(1);
    expect(offer.provideMcpServerDefinitions()).toHaveLength(1);
    const definition = made.at(-1);
    expect(definition).toMatchObject({ command: '/env/bin/python', version: '0.1.0', args: [
      '-I', '-m', 'topicforest', 'mcp', '--workspace', '/ws', '--store-url', 'postgresql://ann@db:5432/tf',
      '--user', 'ann'] });
    expect(definition?.cwd?.fsPath ?? definition?.cwd?.path).toBe(os.tmpdir());
    expect(mcpArgs({ folder: '/ws', storePath: '/m' })).toEqual(
      ['-I', '-m', 'topicforest', 'mcp', '--workspace', '/ws', '--store-path', '/m']);
  });

  it('offers a definition that starts as a real MCP server the official client lists the tools of', {
    skip: !existsSync(REPO_PYTHON) && 'no .venv (make venv)', timeout: 600_000,
  }, () => {
    const folder = mkdtempSync(join(os.tmpdir(), 'tf-mcp-ws-'));
    workspace.workspaceFolders = [{ uri: Uri.file(folder) }];
    configuration.set('topicForest.mcpServer', true);
    configuration.set('topicForest.storePath', join(folder, '.store'));
    const offer = new McpServerOffer('0.1.0', undefined, api);
    offer.launched(REPO_PYTHON); // the repo venv has topicforest[mcp], as the lock installs it
    const [offered] = offer.provideMcpServerDefinitions();
    const definition = made.at(-1);
    expect(offered).toBe(definition);
    // exactly what VS Code would start: command, args, env, cwd
    const { command, args, env } = definition ?? new Definition('', '');
    const input = JSON.stringify({ command, args, env, cwd: definition?.cwd?.fsPath });
    const client = spawnSync(REPO_PYTHON, ['-I', 'test/python/mcp_list_tools.py'],
      { input, encoding: 'utf8', timeout: 540_000 });
    expect(client.stderr).toBe('');
    expect(client.stdout.trim().split('\n').sort()).toEqual(
      ['list_topics', 'read_topic', 'recall', 'search_topics']);
  });

  it('says how to install the SDK instead of starting a server that cannot run', async () => {
    const server = new Definition('x', 'y');
    const missing = new McpServerOffer('0.1.0', '/ext/bundled/constraints.txt', api, exec(1));
    missing.launched('/env/bin/python');
    expect(await missing.resolveMcpServerDefinition(server)).toBeUndefined();  // not installed
    expect(String(window.showWarningMessage.mock.calls[0]?.[0])).toContain(`pip install '${MCP_SDK}'`);
    const present = new McpServerOffer('0.1.0', undefined, api, exec(0));
    present.launched('/env/bin/python');
    expect(await present.resolveMcpServerDefinition(server)).toBe(server);
  });

  it('installs the SDK, pinned like the rest, when the user asks, then starts the server', async () => {
    const server = new Definition('x', 'y');
    const calls: string[][] = [];
    let installed = false;
    const pip: Exec = (_file, args) => {
      calls.push(args);
      if (args.includes('install')) installed = true;
      return Promise.resolve({ code: args[0] === '-c' && !installed ? 1 : 0, stdout: '', stderr: '' });
    };
    window.showWarningMessage.mockImplementationOnce(() => Promise.resolve('Install the MCP SDK'));
    const offer = new McpServerOffer('0.1.0', '/ext/bundled/constraints.txt', api, pip);
    offer.launched('/env/bin/python');
    expect(await offer.resolveMcpServerDefinition(server)).toBe(server);
    expect(calls).toEqual([
      ['-c', 'import mcp.server'],
      ['-m', 'pip', 'install', '--disable-pip-version-check', '-c', '/ext/bundled/constraints.txt', MCP_SDK],
      ['-c', 'import mcp.server'],
    ]);
  });

  it('says why an install failed and starts nothing', async () => {
    const failing: Exec = () => Promise.resolve({ code: 1, stdout: '', stderr: 'x\nERROR: No matching distribution' });
    window.showWarningMessage.mockImplementationOnce(() => Promise.resolve('Install the MCP SDK'));
    const offer = new McpServerOffer('0.1.0', undefined, api, failing);
    offer.launched('/env/bin/python');
    expect(await offer.resolveMcpServerDefinition(new Definition('x', 'y'))).toBeUndefined();
    expect(String(window.showErrorMessage.mock.calls[0]?.[0])).toContain('failed: ERROR: No matching distribution');
  });

  it('pins the SDK in the bundled constraints (make lock installs the wheel with its mcp extra)', () => {
    const constraints = readFileSync('../../server/constraints.txt', 'utf8');
    expect(constraints.split('\n')).toContain(MCP_SDK);
  });

  it('pins the SDK pyproject.toml\'s mcp extra pins', () => {
    const pyproject = readFileSync('../../pyproject.toml', 'utf8');
    expect(/^mcp = \["([^"]+)"\]/m.exec(pyproject)?.[1]).toBe(MCP_SDK);
  });
});
