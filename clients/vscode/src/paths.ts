// The one path policy for the user's files that the extension writes for a reply (Apply): inside a
// workspace folder once links are resolved, never git's own files, and a flag for files that
// configure what the editor or CI runs (they need the user's explicit go-ahead).
import * as fs from 'node:fs/promises';
import * as nodePath from 'node:path';
import * as vscode from 'vscode';

export type Checked =
  | { uri: vscode.Uri; relative: string; executes: boolean }
  | { refused: string };

// Files whose contents make VS Code, a task runner, a hook or CI run commands.
const EXECUTES = [
  /^\.vscode\/(?:settings|tasks|launch|extensions)\.json$/,
  /\.code-workspace$/,
  /^\.github\/(?:workflows|actions)\//,
  /^\.gitlab-ci\.ya?ml$/, /^\.circleci\//, /^\.travis\.ya?ml$/, /^azure-pipelines\.ya?ml$/, /^Jenkinsfile$/,
  /^\.buildkite\//, /^bitbucket-pipelines\.yml$/, /^\.pre-commit-config\.ya?ml$/, /^\.devcontainer\//,
  /^\.envrc$/, /^\.husky\//,
];

/** Whether the workspace-relative `relative` configures command execution. */
export function configuresExecution(relative: string): boolean {
  return EXECUTES.some((pattern) => pattern.test(relative));
}

const inside = (root: string, target: string): string | undefined => {
  const relative = nodePath.relative(root, target);
  return relative === '' || relative.startsWith('..') || nodePath.isAbsolute(relative) ? undefined
    : relative.split(nodePath.sep).join('/');
};

/** `target` with every link resolved; a path not there yet is resolved up to its nearest existing
 * folder. Undefined for a link whose target is missing (a write would create it, wherever it is). */
async function resolved(target: string): Promise<string | undefined> {
  const tail: string[] = [];
  let at = target;
  for (;;) {
    try {
      return nodePath.join(await fs.realpath(at), ...tail.reverse());
    } catch {
      const link = await fs.lstat(at).then((s) => s.isSymbolicLink(), () => false);
      if (link) return undefined;
      const parent = nodePath.dirname(at);
      if (parent === at) return target;
      tail.push(nodePath.basename(at));
      at = parent;
    }
  }
}

/** Checks a path a reply names (workspace-relative, or absolute) or a file the user picked. */
export async function checkWorkspacePath(path: string | vscode.Uri): Promise<Checked> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  const shown = typeof path === 'string' ? path : path.fsPath;
  const refused = (why: string): Checked => ({ refused: `"${shown}" ${why}; nothing was applied.` });
  if (!folders.length) return refused('is not in a workspace folder (no folder is open)');
  let uri: vscode.Uri;
  if (typeof path !== 'string') uri = path;
  else if (path.startsWith('~') || (/^[A-Za-z]:[\\/]/.test(path) && nodePath.sep === '/')) {
    return refused('is outside this workspace');
  } else if (nodePath.isAbsolute(path)) uri = vscode.Uri.file(path);
  else uri = vscode.Uri.joinPath((folders[0] as vscode.WorkspaceFolder).uri, ...path.split(/[\\/]/).filter(Boolean));
  for (const folder of folders) {
    if (folder.uri.scheme !== uri.scheme) continue;
    let relative = inside(folder.uri.fsPath, nodePath.normalize(uri.fsPath));
    if (relative === undefined) continue;
    if (uri.scheme === 'file') {
      const [root, real] = [await resolved(folder.uri.fsPath), await resolved(uri.fsPath)];
      if (real === undefined) return refused('is a link to a file that does not exist');
      relative = inside(root ?? folder.uri.fsPath, real);
      if (relative === undefined) return refused('leads outside this workspace through a link');
      uri = vscode.Uri.file(real);
    }
    if (/^\.git(?:\/|$)/.test(relative)) return refused('is inside .git (git runs its hooks and reads its config)');
    return { uri, relative, executes: configuresExecution(relative) };
  }
  return refused('is outside this workspace');
}

/** Whether a file found in the workspace is a link (or inside a linked folder) that leads out of
 *  every workspace folder: attaching it would read outside what the user opened. */
export async function leadsOutThroughLink(uri: vscode.Uri): Promise<boolean> {
  if (uri.scheme !== 'file') return false;
  const real = await resolved(uri.fsPath);
  if (real === undefined) return true;
  if (real === nodePath.normalize(uri.fsPath)) return false;
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    if (inside((await resolved(folder.uri.fsPath)) ?? folder.uri.fsPath, real) !== undefined) return false;
  }
  return true;
}
