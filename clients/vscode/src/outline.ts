// The functions, classes and regions of a source text, by line (pure: merge.ts uses it on both the
// file and the reply's block). A small lexer keeps strings and comments out of the bracket count;
// Python-like files end a definition by indentation, the others by brackets.

export interface Unit {
  name: string;
  /** The header line (`def f(`, `fn f(`, `class A {`, `// #region x`). */
  head: number;
  /** First line: decorators, attributes and doc comments just above the header belong to it. */
  start: number;
  /** One past its last line. */
  end: number;
  indent: string;
  parent?: Unit;
  children: Unit[];
}

interface Syntax {
  indentation: boolean;
  lineComments: string[];
  blockComments: boolean;
  tripleQuotes: boolean;
  /** Backtick strings may span lines (JS templates, Go raw strings). */
  backticks: boolean;
  /** Rust: a quote is a char literal only when it closes right away ('a' is a lifetime). */
  charLiterals: boolean;
}

const C_LIKE: Syntax = { indentation: false, lineComments: ['//'], blockComments: true, tripleQuotes: false,
  backticks: false, charLiterals: false };
const SYNTAX: Record<string, Syntax> = {
  py: { indentation: true, lineComments: ['#'], blockComments: false, tripleQuotes: true, backticks: false,
    charLiterals: false },
  js: { ...C_LIKE, backticks: true },
  rs: { ...C_LIKE, charLiterals: true },
  go: { ...C_LIKE, backticks: true },
  php: { ...C_LIKE, lineComments: ['//', '#'] },
  c: C_LIKE,
};
const EXTENSIONS: Record<string, string> = {
  py: 'py', pyi: 'py', pyw: 'py',
  js: 'js', jsx: 'js', mjs: 'js', cjs: 'js', ts: 'js', tsx: 'js', mts: 'js', cts: 'js', vue: 'js', svelte: 'js',
  rs: 'rs', go: 'go', php: 'php',
  c: 'c', h: 'c', cc: 'c', cpp: 'c', cxx: 'c', hpp: 'c', hh: 'c', java: 'c', kt: 'c', kts: 'c', scala: 'c',
  cs: 'c', swift: 'c', dart: 'c', groovy: 'c', gradle: 'c',
};

/** How a file of this path is read; undefined for files without definitions (JSON, Markdown…). */
export function syntaxOf(path: string): Syntax | undefined {
  const key = EXTENSIONS[path.slice(path.lastIndexOf('.') + 1).toLowerCase()];
  return key ? SYNTAX[key] : undefined;
}

interface Scan {
  /** The line starts inside a string or a comment that began on an earlier line. */
  quoted: boolean[];
  /** Bracket depth at the start of each line, and at its end. */
  depthIn: number[];
  depthOut: number[];
  /** Each line without its strings and comments (structure only). */
  code: string[];
}

function scan(lines: string[], syntax: Syntax | undefined): Scan {
  const result: Scan = { quoted: [], depthIn: [], depthOut: [], code: [] };
  let depth = 0;
  let open: string | undefined; // the closing delimiter of a string or comment carried over
  for (const line of lines) {
    result.quoted.push(open !== undefined);
    result.depthIn.push(depth);
    let code = '';
    let i = 0;
    while (i < line.length) {
      if (open !== undefined) {
        const close = line.indexOf(open, i);
        if (close < 0) break;
        i = close + open.length;
        open = undefined;
        continue;
      }
      const rest = line.slice(i);
      if (!syntax) break;
      if (syntax.lineComments.some((c) => rest.startsWith(c))) break;
      if (syntax.blockComments && rest.startsWith('/*')) {
        open = '*/';
        i += 2;
        continue;
      }
      if (syntax.tripleQuotes && (rest.startsWith('"""') || rest.startsWith("'''"))) {
        open = rest.slice(0, 3);
        i += 3;
        continue;
      }
      const ch = line[i] as string;
      if (ch === '`' && syntax.backticks) {
        open = '`';
        i += 1;
        continue;
      }
      if (ch === '"' || ch === "'" || ch === '`') {
        if (ch === "'" && syntax.charLiterals) {
          const literal = /^'(?:\\.[^']*|[^'\\])'/.exec(rest);
          if (!literal) {
            code += ch;
            i += 1;
            continue;
          }
          i += literal[0].length;
          continue;
        }
        let j = i + 1;
        while (j < line.length && line[j] !== ch) j += line[j] === '\\' ? 2 : 1;
        i = j + 1; // an unclosed quote ends with its line
        code += ' ';
        continue;
      }
      if ('([{'.includes(ch)) depth += 1;
      else if (')]}'.includes(ch)) depth = Math.max(0, depth - 1);
      code += ch;
      i += 1;
    }
    if (open === '`' && !syntax?.backticks) open = undefined;
    result.depthOut.push(depth);
    result.code.push(code);
  }
  return result;
}

// VS Code's folding markers: `// #region name`, `#region name`, `# region name`, `<!-- #region -->`
const REGION = /^\s*(?:(?:\/\/|--|<!--|\/\*)\s*#|#\s*)region\b[ \t]*(.*?)\s*(?:-->|\*\/)?\s*$/i;
const END_REGION = /^\s*(?:(?:\/\/|--|<!--|\/\*)\s*#|#\s*)endregion\b/i;
const PY_DEF = /^\s*(?:async\s+)?(?:def|class)\s+(\w+)/;
const PY_ASSIGN = /^([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)/;
const MODIFIERS = String.raw`(?:(?:export|default|declare|pub(?:\([^)]*\))?|public|private|protected|internal|static|` +
  String.raw`async|unsafe|extern(?:\s+"[^"]*")?|abstract|final|override|virtual|inline|open|sealed|data|` +
  String.raw`readonly|suspend|partial|const(?=\s+fn))\s+)*`;
const KEYWORD_DEF = new RegExp(String.raw`^\s*${MODIFIERS}(?:function\*?|fn|func|fun|class|struct|enum|trait|` +
  String.raw`interface|type|mod|namespace|object|record|union|protocol|module)\s+(\w+)`);
const GO_METHOD = /^\s*func\s+\([^)]*\)\s*(\w+)/;
const IMPL = /^\s*(?:unsafe\s+)?impl(?:<[^>]*>)?\s+([^{]+?)\s*(?:\bwhere\b.*)?\{?\s*$/;
const VARIABLE = new RegExp(String.raw`^\s*${MODIFIERS}(?:const|let|var|static)\s+(?:mut\s+)?(\w+)`);
// name(params) [: type | -> type | throws X] { — a method, or a C/Java function after its types
const CALLABLE = /^\s*(?:[\w<>[\],.*&:?]+\s+)*?[*&]*(~?\w+)\s*(?:<[^>]*>)?\s*\([^;{}]*\)\s*[^;{}=]*\{/;
const CONTROL = new Set(('if for while switch catch return else do new throw await yield case typeof sizeof ' +
  'delete match loop when try with foreach using lock synchronized function').split(' '));
const CONTINUES = /(?:[,(=+\-*/.?:|&]|=>|->)\s*$/;
const CONTINUED = /^\s*(?:[{.?:)\]]|=>|->|where\b|throws\b|extends\b|implements\b|else\b)/;

function headerName(lines: string[], i: number, s: Scan, syntax: Syntax): string | undefined {
  const line = lines[i] as string;
  if ((s.code[i] as string).trim() === '') return undefined; // a comment, or inside a string
  if (syntax.indentation) {
    const def = PY_DEF.exec(line);
    if (def) return def[1];
    return s.depthIn[i] === 0 ? PY_ASSIGN.exec(line)?.[1] : undefined;
  }
  const keyword = GO_METHOD.exec(line) ?? KEYWORD_DEF.exec(line);
  if (keyword) return keyword[1];
  const impl = IMPL.exec(line);
  if (impl) return `impl ${(impl[1] as string).replace(/\s+/g, ' ')}`;
  const variable = VARIABLE.exec(line);
  if (variable) return s.depthIn[i] === 0 ? variable[1] : undefined; // not a function's local
  // a callable's header may wrap: read on to its `{` (or a `;`, which makes it no definition)
  let joined = '';
  for (let j = i; j < Math.min(lines.length, i + 8); j += 1) {
    const code = s.code[j] as string;
    joined += ` ${code}`;
    if (/[{;]/.test(code)) break;
  }
  const callable = CALLABLE.exec(joined);
  return callable && !CONTROL.has(callable[1] as string) && !/^\s*(?:\w+\s*)?=/.test(joined)
    ? callable[1] : undefined;
}

const indentOf = (line: string): string => /^\s*/.exec(line)?.[0] ?? '';
const blank = (line: string): boolean => line.trim() === '';

function extent(lines: string[], head: number, s: Scan, syntax: Syntax): number {
  const indent = indentOf(lines[head] as string).length;
  if (syntax.indentation) {
    let last = head;
    for (let j = head + 1; j < lines.length; j += 1) {
      const line = lines[j] as string;
      if (blank(line)) continue;
      if (!s.quoted[j] && (s.depthIn[j] ?? 0) === 0 && indentOf(line).length <= indent &&
        !/^\s*[)\]}]/.test(line)) break;
      last = j;
    }
    return last + 1;
  }
  const base = s.depthIn[head] ?? 0;
  for (let j = head; j < lines.length; j += 1) {
    const code = s.code[j] as string;
    if ((s.depthOut[j] ?? 0) > base) continue;
    if (s.quoted[j + 1]) continue;
    let next = j + 1;
    while (next < lines.length && blank(lines[next] as string)) next += 1;
    if (CONTINUES.test(code) && !/[;}]\s*$/.test(code)) continue;
    if (next < lines.length && CONTINUED.test(s.code[next] as string)) continue;
    return j + 1;
  }
  return lines.length;
}

function regionEnd(lines: string[], head: number): number {
  let depth = 0;
  for (let j = head + 1; j < lines.length; j += 1) {
    if (REGION.test(lines[j] as string)) depth += 1;
    else if (END_REGION.test(lines[j] as string) && depth-- === 0) return j + 1;
  }
  return lines.length;
}

// decorators, attributes and comments; `#` is a comment only where it is one (not C's #include)
const ATTACHED = { hash: /^\s*(?:@\w|#|\/\/|\/\*|\*)/, other: /^\s*(?:@\w|#\[|\/\/|\/\*|\*|--)/ };

/** Every definition and region in `lines`, outermost first, with parents and children linked. */
export function outline(lines: string[], path: string): Unit[] {
  const syntax = syntaxOf(path);
  const s = scan(lines, syntax);
  const attached = syntax?.lineComments.includes('#') ? ATTACHED.hash : ATTACHED.other;
  const units: Unit[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] as string;
    if (blank(line) || s.quoted[i]) continue;
    const region = REGION.exec(line);
    let name: string | undefined;
    let end: number;
    if (region) {
      name = `region ${region[1] ?? ''}`.trim();
      end = regionEnd(lines, i);
    } else {
      if (!syntax) continue;
      name = headerName(lines, i, s, syntax);
      if (!name) continue;
      end = extent(lines, i, s, syntax);
    }
    const indent = indentOf(line);
    let start = i;
    while (start > 0 && indentOf(lines[start - 1] as string) === indent && attached.test(lines[start - 1] as string) &&
      !REGION.test(lines[start - 1] as string) && !END_REGION.test(lines[start - 1] as string)) start -= 1;
    units.push({ name, head: i, start, end, indent, children: [] });
  }
  for (const unit of units) {
    const parent = units.filter((u) => u !== unit && u.head < unit.head && unit.end <= u.end)
      .reduce<Unit | undefined>((inner, u) => (!inner || u.head > inner.head ? u : inner), undefined);
    if (parent) {
      unit.parent = parent;
      parent.children.push(unit);
    }
  }
  return units;
}
