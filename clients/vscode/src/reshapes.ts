// How new messages reshaped a topic (listTopics' `reshapes`, newest first), in words: the tree
// shows a recent split or merge on the row and every change in the tooltip, so that no
// reshuffle of the memory is silent.
import { formatTime } from './format';
import type { Reshape, Topic } from './protocol';

/** A split or merge this recent is marked on the row (moves only in the tooltip). */
export const RECENT_SECONDS = 60 * 60;

function named(note: Reshape): string {
  return note.otherTitle ? `"${note.otherTitle}"` : `topic ${note.otherId}`;
}

function messages(n: number): string {
  return `${n} message${n === 1 ? '' : 's'}`;
}

export function reshapeText(note: Reshape): string {
  switch (note.kind) {
    case 'splitOff': return `Split off ${named(note)} (${messages(note.messages)}).`;
    case 'split': return `${messages(note.messages)} of it were split off into ${named(note)}.`;
    case 'merged': return `${named(note)} was merged into it.`;
    case 'movedIn': return `${messages(note.messages)} moved in from ${named(note)}.`;
    case 'movedOut': return `${messages(note.messages)} moved to ${named(note)}.`;
  }
}

/** A server older than `reshapes` sends none: nothing to show rather than a failure. */
function notes(topic: Pick<Topic, 'reshapes'>): Reshape[] {
  return (topic as Partial<Pick<Topic, 'reshapes'>>).reshapes ?? [];
}

/** The tooltip's lines: each change with its time. */
export function reshapeLines(topic: Pick<Topic, 'reshapes'>): string[] {
  return notes(topic).map((note) => `${formatTime(note.at)}: ${reshapeText(note)}`);
}

/** The row's mark: "split" or "merged" while the newest such change is recent, else ''. */
export function reshapeMark(topic: Pick<Topic, 'reshapes'>, now: number = Date.now() / 1000): string {
  const note = notes(topic).find((n) => n.kind === 'splitOff' || n.kind === 'merged');
  if (!note || now - note.at > RECENT_SECONDS) return '';
  return note.kind === 'merged' ? 'merged' : 'split';
}
