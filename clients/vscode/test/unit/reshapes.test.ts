import { describe, it } from 'node:test';
import { expect } from 'expect';
import { MarkdownString } from 'vscode';
import type { Reshape } from '../../src/protocol';
import { RECENT_SECONDS, reshapeLines, reshapeMark, reshapeText } from '../../src/reshapes';
import { topicItem, type Placement } from '../../src/topicTree';
import { makeTopic } from './fakes';

const SENT: Placement = { kind: 'sent', mode: 'summary', tokens: 120, rank: 1 };
const AT = 1_700_000_000;

function note(overrides: Partial<Reshape>): Reshape {
  return { kind: 'splitOff', otherId: 3, otherTitle: 'Stripe webhooks', messages: 6, at: AT, ...overrides };
}

describe('reshapes in words', () => {
  it('says each kind of change with the other topic by its title, else its id', () => {
    expect(reshapeText(note({}))).toBe('Split off "Stripe webhooks" (6 messages).');
    expect(reshapeText(note({ kind: 'split', otherTitle: null, otherId: 9 })))
      .toBe('6 messages of it were split off into topic 9.');
    expect(reshapeText(note({ kind: 'merged' }))).toBe('"Stripe webhooks" was merged into it.');
    expect(reshapeText(note({ kind: 'movedIn', messages: 1 }))).toBe('1 message moved in from "Stripe webhooks".');
    expect(reshapeText(note({ kind: 'movedOut', messages: 2 }))).toBe('2 messages moved to "Stripe webhooks".');
  });

  it('marks a recent split or merge on the row, not a move, not an old one', () => {
    expect(reshapeMark(makeTopic({ reshapes: [note({})] }), AT + 60)).toBe('split');
    expect(reshapeMark(makeTopic({ reshapes: [note({ kind: 'movedIn' }), note({ kind: 'merged' })] }), AT))
      .toBe('merged');
    expect(reshapeMark(makeTopic({ reshapes: [note({ kind: 'movedIn' })] }), AT)).toBe('');
    expect(reshapeMark(makeTopic({ reshapes: [note({})] }), AT + RECENT_SECONDS + 1)).toBe('');
    expect(reshapeMark(makeTopic({ reshapes: [] }), AT)).toBe('');
  });

  it('puts the mark beside the figure and every change in the tooltip, as text', () => {
    const topic = makeTopic({ reshapes: [note({ otherTitle: '[x](command:evil)' }), note({ kind: 'movedIn' })] });
    const item = topicItem(topic, SENT, [], AT + 5);
    expect(item.description).toBe('split · 120 tok');
    const tooltip = (item.tooltip as MarkdownString).value;
    expect(tooltip).toContain('Reshaped by new messages');
    for (const line of reshapeLines(topic)) expect(tooltip).toContain(new MarkdownString().appendText(line).value);
    expect(tooltip).not.toContain('](command:evil)');
    expect(item.accessibilityInformation?.label).toContain('Recently split off another topic.');
    expect(topicItem(makeTopic(), SENT, [], AT).description).toBe('120 tok');
  });
});
