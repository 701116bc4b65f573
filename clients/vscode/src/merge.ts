// What Apply does with a reply's code block and a file (pure: unit tests check it). A block that is
// the whole file replaces it; a block of functions, classes or regions replaces those (matched by
// name, at the file's indentation) and keeps the rest; anything less certain is refused with its
// reason — never a diff that deletes the rest of the file.
import { outline, type Unit } from './outline';

export type Plan =
  | { kind: 'whole'; text: string }
  | { kind: 'merge'; text: string; replaced: string[]; added: string[] }
  /** `append`: the file with the block at its end, offered (after review) when nothing matched. */
  | { kind: 'none'; reason: string; append?: string };

const IMPORT = /^\s*(?:import\s|from\s+\S+\s+import\s|use\s|#include\s|using\s|require\b|package\s|const\s+\w+\s*=\s*require\()/;
// `...`, `// ... existing code ...`, `# rest unchanged`: the block's way of saying "keep the rest"
const ELLIPSIS = /^\s*(?:(?:\/\/|#|--|\/\*)\s*)?(?:\.\.\.|…)/;
const COMMENT = /^\s*(?:\/\/|#(?!include)|--|\/\*|\*|<!--)/;

const linesOf = (text: string): string[] => text.replace(/\r\n/g, '\n').replace(/\n$/, '').split('\n');
const covered = (units: Unit[], line: number): boolean => units.some((u) => u.start <= line && line < u.end);
const significant = (line: string): boolean => line.trim() !== '' && !ELLIPSIS.test(line) && !COMMENT.test(line);

/** The lines of `unit` (from `from`), moved from the block's indentation to `indent`. */
function reindent(lines: string[], from: number, unit: Unit, indent: string): string[] {
  return lines.slice(from, unit.end).map((line) => {
    if (line.trim() === '') return '';
    return line.startsWith(unit.indent) ? indent + line.slice(unit.indent.length) : indent + line.trimStart();
  });
}

/** A JSON block holding every top-level key the JSON file has is a new version of the file. */
function wholeJson(file: string, block: string, path: string): boolean {
  if (!/\.json$/i.test(path)) return false;
  try {
    const [ours, theirs] = [JSON.parse(file) as unknown, JSON.parse(block) as unknown];
    const keys = (v: unknown): string[] => (v && typeof v === 'object' ? Object.keys(v) : []);
    return Array.isArray(ours) === Array.isArray(theirs) && keys(ours).every((k) => keys(theirs).includes(k));
  } catch {
    return false; // JSON with comments, or a fragment: the line overlap decides
  }
}

/** The share of the file's distinct code lines that the block has too. */
function overlap(file: string[], block: string[]): number {
  const ours = new Set(file.filter(significant).map((l) => l.trim()));
  if (ours.size === 0) return 0;
  const theirs = new Set(block.map((l) => l.trim()));
  return [...ours].filter((l) => theirs.has(l)).length / ours.size;
}

interface Edit { from: number; to: number; lines: string[] }

class Refusal extends Error {}

interface Place { at: number; indent: string }

/** Matches the block's units into `scope` (the file's units that may hold them); fills `edits`.
 * A unit the file lacks goes after the last one matched, else at `inside` (a matched class's end). */
function mergeUnits(blockUnits: Unit[], scope: Unit[], block: string[], file: string[], edits: Edit[],
  done: { replaced: string[]; added: string[] }, inside?: Place): void {
  let anchor: Unit | undefined;
  const added: Unit[] = [];
  for (const unit of blockUnits) {
    const named = scope.filter((u) => u.name === unit.name);
    const outer = named.filter((u) => !scope.includes(u.parent as Unit));
    const match = outer.length === 1 ? outer[0] : named.length === 1 ? named[0] : undefined;
    if (named.length > 1 && !match) {
      throw new Refusal(`"${unit.name}" is defined ${named.length} times in the file, and the block does not ` +
        'say which one it replaces');
    }
    if (!match) {
      added.push(unit);
      continue;
    }
    anchor = match;
    if (partial(unit, match, block)) {
      const closed = /^\s*[}\]]/.test(file[match.end - 1] as string) ? 1 : 0;
      mergeUnits(unit.children, descendants(match), block, file, edits, done,
        { at: match.end - closed, indent: match.children[0]?.indent ?? match.indent });
      continue;
    }
    // the block's own decorators and doc comment replace the file's; without them the file's stay
    const from = unit.start < unit.head ? match.start : match.head;
    edits.push({ from, to: match.end, lines: reindent(block, unit.start < unit.head ? unit.start : unit.head, unit,
      match.indent) });
    done.replaced.push(unit.name);
  }
  if (!added.length) return;
  const place = anchor ? { at: anchor.end, indent: anchor.indent } : inside;
  if (!place) throw new Refusal(`nothing in the file is named ${added.map((u) => `"${u.name}"`).join(', ')}`);
  const { at, indent } = place;
  edits.push({ from: at, to: at, lines: added.flatMap((u) => ['', ...reindent(block, u.start, u, indent)]) });
  done.added.push(...added.map((u) => u.name));
}

function descendants(unit: Unit): Unit[] {
  return unit.children.flatMap((c) => [c, ...descendants(c)]);
}

/** A class in the block that shows only some of the file's members: merge member by member. */
function partial(unit: Unit, match: Unit, block: string[]): boolean {
  if (!unit.children.length || !match.children.length) return false;
  const names = new Set(unit.children.map((c) => c.name));
  if (match.children.every((c) => names.has(c.name))) return false;
  // its body holds nothing but members (and blank lines, comments, `...`): no fields we would lose
  for (let line = unit.head + 1; line < unit.end - 1; line += 1) {
    if (!covered(unit.children, line) && significant(block[line] as string) &&
      !/^\s*[{}]\s*;?\s*$/.test(block[line] as string)) return false;
  }
  return true;
}

/** Where `block` goes in `file` (a file at `path`, whose extension says how to read it). */
export function planApply(file: string, block: string, path: string): Plan {
  const eol = file.includes('\r\n') ? '\r\n' : '\n';
  const finish = (lines: string[]): string => lines.join(eol) + (lines.length ? eol : '');
  const blockLines = linesOf(block);
  if (file.trim() === '') return { kind: 'whole', text: finish(blockLines) };
  const fileLines = linesOf(file);
  const fileUnits = outline(fileLines, path);
  const blockUnits = outline(blockLines, path);
  const fileTop = fileUnits.filter((u) => !u.parent);
  const blockTop = blockUnits.filter((u) => !u.parent);
  const blockRest = blockLines.filter((l, i) => !covered(blockTop, i) && significant(l));
  const fileRest = fileLines.filter((l, i) => !covered(fileTop, i) && significant(l));
  const names = new Set(blockTop.map((u) => u.name));
  const name = path.slice(path.lastIndexOf('/') + 1);

  // the whole file: every definition the file has, with the lines around them (or the file has none)
  if (fileTop.length && blockTop.length && fileTop.every((u) => names.has(u.name)) &&
    (blockRest.length || !fileRest.length)) return { kind: 'whole', text: finish(blockLines) };
  if (!blockTop.length) {
    if (wholeJson(file, block, path) || overlap(fileLines, blockLines) >= 0.5) return { kind: 'whole', text: finish(blockLines) };
    return { kind: 'none', reason: `the block is not the whole of ${name} and holds no function, class or region ` +
      'to find in it', append: finish([...fileLines, '', ...blockLines]) };
  }

  const edits: Edit[] = [];
  const done = { replaced: [] as string[], added: [] as string[] };
  try {
    mergeUnits(blockTop, fileUnits, blockLines, fileLines, edits, done);
    const present = new Set(fileLines.map((l) => l.trim()));
    const missing = blockRest.filter((l) => !present.has(l.trim()));
    const stray = missing.find((l) => !IMPORT.test(l));
    if (stray) throw new Refusal(`the block's line "${stray.trim()}" has no place in ${name}`);
    if (missing.length) {
      const imports = fileLines.map((l, i) => (IMPORT.test(l) && !covered(fileTop, i) ? i : -1)).filter((i) => i >= 0);
      const at = imports.length ? (imports.at(-1) as number) + 1 : (fileTop[0]?.start ?? 0);
      edits.push({ from: at, to: at, lines: [...missing.map((l) => l.trim()), ...(imports.length ? [] : [''])] });
      done.added.push(...missing.map((l) => l.trim()));
    }
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    return { kind: 'none', reason: error.message, append: finish([...fileLines, '', ...blockLines]) };
  }
  const merged = [...fileLines];
  for (const edit of edits.sort((a, b) => b.from - a.from)) merged.splice(edit.from, edit.to - edit.from, ...edit.lines);
  return { kind: 'merge', text: finish(merged), replaced: done.replaced, added: done.added };
}
