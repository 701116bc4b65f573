import { describe, it } from 'node:test';
import { expect } from 'expect';
import { planApply } from '../../src/merge';
import { outline } from '../../src/outline';

const RUST = `use std::fs;
use std::path::Path;

/// The settings read from disk.
pub struct Config {
    pub name: String,
    pub retries: u32,
}

impl Config {
    pub fn load(path: &Path) -> std::io::Result<Config> {
        let text = fs::read_to_string(path)?;
        Ok(Config { name: text.trim().to_string(), retries: 3 })
    }

    pub fn describe(&self) -> String {
        format!("{} ({})", self.name, self.retries)
    }
}

pub fn default_path<'a>() -> &'a str {
    "config.toml"
}
`;

const PYTHON = `import re

TOKEN = re.compile(r"\\w+|[^\\w\\s]")


class Lexer:
    """Splits text into tokens."""

    def __init__(self, text):
        self.text = text

    def tokens(self):
        return TOKEN.findall(self.text)


@cache
def tokenize(text):
    return Lexer(text).tokens()


if __name__ == "__main__":
    print(tokenize("a b"))
`;

describe('the outline of a file', () => {
  it('finds Rust items, impl blocks and methods, with their doc comments', () => {
    const units = outline(RUST.split('\n'), 'src/config.rs');
    const summary = units.map((u) => [u.name, u.start, u.head, u.end, u.parent?.name ?? null]);
    expect(summary).toEqual([
      ['Config', 3, 4, 8, null],
      ['impl Config', 9, 9, 19, null],
      ['load', 10, 10, 14, 'impl Config'],
      ['describe', 15, 15, 18, 'impl Config'],
      ['default_path', 20, 20, 23, null],
    ]);
  });

  it('finds Python classes, methods, decorated functions and constants; strings do not count', () => {
    const units = outline(PYTHON.split('\n'), 'lexer.py');
    expect(units.map((u) => [u.name, u.start, u.end, u.parent?.name ?? null])).toEqual([
      ['TOKEN', 2, 3, null],
      ['Lexer', 5, 13, null],
      ['__init__', 8, 10, 'Lexer'],
      ['tokens', 11, 13, 'Lexer'],
      ['tokenize', 15, 18, null],
    ]);
  });

  it('reads TypeScript functions, arrow constants, classes, methods and regions; calls are not definitions', () => {
    const ts = [
      '// #region helpers',
      'export const twice = (n: number): number => {',
      '  return n * 2;',
      '};',
      '// #endregion',
      'export class Store {',
      '  private items: string[] = [];',
      '  async add(item: string): Promise<void> {',
      '    if (item) {',
      '      this.items.push(`${item} {`);',
      '    }',
      '  }',
      '}',
      'describe(\'x\', () => {',
      '  it(\'y\', () => {});',
      '});',
    ];
    const units = outline(ts, 'a.ts');
    expect(units.map((u) => [u.name, u.head, u.end])).toEqual([
      ['region helpers', 0, 5], ['twice', 1, 4], ['Store', 5, 13], ['add', 7, 12],
    ]);
  });
});

describe('Apply merges a block into its file', () => {
  it('a function-only block replaces that function and keeps the imports, the struct and the rest', () => {
    const block = 'pub fn default_path<\'a>() -> &\'a str {\n    "settings.toml"\n}\n';
    const plan = planApply(RUST, block, 'src/config.rs');
    expect(plan.kind).toBe('merge');
    if (plan.kind !== 'merge') return;
    expect(plan.replaced).toEqual(['default_path']);
    expect(plan.text).toBe(RUST.replace('"config.toml"', '"settings.toml"'));
  });

  it('a method shown without its impl replaces just that method, at the impl\'s indentation', () => {
    const block = 'fn describe(&self) -> String {\n    format!("{}", self.name)\n}';
    const plan = planApply(RUST, block, 'src/config.rs');
    expect(plan.kind).toBe('merge');
    expect(plan.kind === 'merge' && plan.text).toBe(RUST.replace(
      '    pub fn describe(&self) -> String {\n        format!("{} ({})", self.name, self.retries)\n    }',
      '    fn describe(&self) -> String {\n        format!("{}", self.name)\n    }'));
  });

  it('a class shown with one of its methods merges member by member, and a new method is added to it', () => {
    const block = [
      'class Lexer:',
      '    def tokens(self):',
      '        return [t.lower() for t in TOKEN.findall(self.text)]',
      '',
      '    def count(self):',
      '        return len(self.tokens())',
    ].join('\n');
    const plan = planApply(PYTHON, block, 'src/lexer.py');
    expect(plan.kind).toBe('merge');
    if (plan.kind !== 'merge') return;
    expect(plan.replaced).toEqual(['tokens']);
    expect(plan.added).toEqual(['count']);
    expect(plan.text).toContain('    def __init__(self, text):\n        self.text = text\n');
    expect(plan.text).toContain('        return [t.lower() for t in TOKEN.findall(self.text)]\n\n' +
      '    def count(self):\n        return len(self.tokens())\n\n\n@cache\ndef tokenize');
    expect(plan.text).toContain('if __name__ == "__main__":');
  });

  it('a new import in the block joins the imports; a decorator the block omits stays', () => {
    const block = 'import functools\n\ndef tokenize(text):\n    return functools.reduce(list.__add__, [[text]])\n';
    const plan = planApply(PYTHON, block, 'lexer.py');
    expect(plan.kind).toBe('merge');
    if (plan.kind !== 'merge') return;
    expect(plan.text.startsWith('import re\nimport functools\n\nTOKEN')).toBe(true);
    expect(plan.text).toContain('@cache\ndef tokenize(text):\n    return functools.reduce');
    expect(plan.text).toContain('class Lexer:');
  });

  it('the whole file, a new version of it, replaces it; so does a block for an empty file', () => {
    const whole = PYTHON.replace('a b', 'c d');
    expect(planApply(PYTHON, whole, 'lexer.py')).toEqual({ kind: 'whole', text: whole });
    expect(planApply('', 'x = 1\n', 'new.py')).toEqual({ kind: 'whole', text: 'x = 1\n' });
    const json = '{\n  "name": "a",\n  "version": "2.0.0",\n  "private": true\n}\n';
    expect(planApply('{\n  "name": "a",\n  "version": "1.0.0",\n  "private": true\n}\n', json, 'package.json').kind)
      .toBe('whole');
  });

  it('says so, rather than deleting the rest, when nothing matches', () => {
    const snippet = planApply(PYTHON, 'x = tokenize(text)\nprint(x)\n', 'lexer.py');
    expect(snippet.kind).toBe('none');
    const unknown = planApply(PYTHON, 'def parse(tokens):\n    return tokens\n', 'lexer.py');
    expect(unknown).toMatchObject({ kind: 'none', reason: 'nothing in the file is named "parse"' });
    expect(unknown.kind === 'none' && unknown.append).toBe(`${PYTHON}\ndef parse(tokens):\n    return tokens\n`);
    const json = '{\n  "a": 1,\n  "b": 2,\n  "c": 3\n}\n';
    expect(planApply(json, '"b": 5', 'x.json').kind).toBe('none');
    expect(planApply(json, '{ "b": 5 }', 'x.json').kind).toBe('none'); // valid JSON, but not all of it
    expect(planApply(json, '{ "a": 1, "b": 5, "c": 3 }', 'x.json').kind).toBe('whole');
    expect(planApply('{}\n', '{ "tasks": [] }', 'tasks.json').kind).toBe('whole');
    const twice = 'def f():\n    pass\n\n\nclass A:\n    def f(self):\n        pass\n\n\nclass B:\n    def f(self):\n        pass\n';
    expect(planApply(twice, '    def f(self):\n        return 1\n', 'two.py')).toMatchObject({ kind: 'merge' });
    const ambiguous = planApply(twice.replace('def f():\n    pass\n', 'def g():\n    pass\n'),
      'def f(self):\n    return 1\n', 'two.py');
    expect(ambiguous).toMatchObject({ kind: 'none', reason: expect.stringContaining('defined 2 times') });
  });

  it('a #region block replaces that region and nothing else', () => {
    const file = ['import { a } from "./a";', '', '// #region limits', 'export const MAX = 10;', 'export const MIN = 1;',
      '// #endregion', '', 'export function clamp(x: number): number {', '  return Math.min(MAX, Math.max(MIN, x));', '}', ''].join('\n');
    const block = '// #region limits\nexport const MAX = 99;\nexport const MIN = 0;\n// #endregion\n';
    const plan = planApply(file, block, 'src/limits.ts');
    expect(plan).toMatchObject({ kind: 'merge', replaced: ['region limits'] });
    expect(plan.kind === 'merge' && plan.text).toBe(file.replace('MAX = 10', 'MAX = 99').replace('MIN = 1;', 'MIN = 0;'));
  });

  it('keeps the file\'s CRLF line ends', () => {
    const file = 'import os\r\n\r\ndef a():\r\n    return 1\r\n\r\ndef b():\r\n    return 2\r\n';
    const plan = planApply(file, 'def a():\n    return 10\n', 'm.py');
    expect(plan.kind === 'merge' && plan.text).toBe(file.replace('return 1', 'return 10'));
  });
});
