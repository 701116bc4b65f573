// Which file a code block in a reply is meant for (pure: the page uses it, unit tests check it).
// The fence line may name it (```python path=src/app.py, ```src/app.py, ```python src/app.py), or
// the paragraph just before the block may end with it (`src/app.py`: / In src/app.py:), or the
// block's first line may be a comment naming it (// src/cli.rs). A path that climbs out, is
// absolute or starts at ~ is kept as named: the extension's path policy refuses it (with a word),
// where dropping it here would send the block to the active editor's file instead.

const PATH = /^(?:[\w.@-]+\/)*[\w@-][\w.@-]*\.[A-Za-z0-9]+$/;
// A bare word is a file only with a source-like extension: `re.finditer:` or `os.path:` are not.
const EXTENSIONS = new Set(('py pyi ts tsx js jsx mjs cjs json jsonc md rst txt toml yaml yml ini cfg ' +
  'conf sh bash zsh ps1 css scss less html htm xml svg go rs java kt kts c h cc cpp cxx hpp cs rb ' +
  'php swift sql vue svelte lua r dart scala ex exs erl proto gradle mk cmake env lock tf hcl ' +
  'ipynb csv').split(' '));

function asPath(token: string): string | undefined {
  const named = /^(?:path|file|filename|title)=/.test(token);
  const bare = token.replace(/^(?:path|file|filename|title)=/, '').replace(/^["'`]|["'`:]$/g, '')
    .replace(/^\.\//, '');
  if (!PATH.test(bare.replace(/^(?:~|[A-Za-z]:)?\//, ''))) return undefined;
  const extension = bare.slice(bare.lastIndexOf('.') + 1).toLowerCase();
  return named || EXTENSIONS.has(extension) ? bare : undefined;
}

/** The language word of a fence's info string (`python path=x.py` -> `python`). */
export function fenceLanguage(info: string): string {
  const first = info.trim().split(/\s+/)[0] ?? '';
  return asPath(first) || first.includes('=') ? '' : first;
}

/** The workspace-relative path a block names, if any. */
export function blockTarget(info: string, before: string): string | undefined {
  for (const token of info.trim().split(/\s+/)) {
    const path = asPath(token);
    if (path) return path;
  }
  const last = before.trim().split('\n').at(-1)?.trim() ?? '';
  if (!last.endsWith(':')) return undefined;
  const words = last.slice(0, -1).trim().split(/\s+/);
  return asPath(words.at(-1) ?? '');
}

// `// src/cli.rs`, `# file: app.py`, `/* path: a.c */`, `<!-- index.html -->`, `-- db/schema.sql`
const PATH_COMMENT = /^\s*(?:\/\/|#|--|\/\*|<!--|;)\s*(?:(?:file(?:name|path)?|path)\s*:\s*)?(\S+?)\s*(?:\*\/|-->)?\s*$/i;

/** The path a block's first line names in a comment, if it is nothing but that. */
export function commentTarget(code: string): string | undefined {
  const first = PATH_COMMENT.exec(code.split('\n', 1)[0] ?? '');
  return first ? asPath(first[1] as string) : undefined;
}

/** The block's file: its label, else its first-line comment. */
export function codeTarget(info: string, before: string, code: string): string | undefined {
  return blockTarget(info, before) ?? commentTarget(code);
}

/** The block without a first line that only names `path` (it is a label, not the file's code). */
export function withoutPathComment(code: string, path: string): string {
  return commentTarget(code) === path ? code.slice(code.indexOf('\n') + 1) : code;
}
