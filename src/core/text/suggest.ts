/** Optimal string alignment distance: edits, with a swap of two neighbours counted as one ("isntall"). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({length: a.length + 1}, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known word a typo most likely meant: the closest within 1 edit for short words, 2 for
 * longer ones (as git's and cargo's "did you mean"), or a word the typo is a prefix of
 * ("uninst"). Undefined when nothing is close or two are equally close.
 */
export function closest(typed: string, known: string[]): string | undefined {
  const word = typed.toLowerCase();
  const limit = word.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = Infinity;
  let tie = false;
  for (const k of new Set(known)) {
    const distance = editDistance(word, k);
    if (distance < bestDistance) {
      best = k;
      bestDistance = distance;
      tie = false;
    } else if (distance === bestDistance) {
      tie = true;
    }
  }
  if (best !== undefined && bestDistance <= limit && !tie) return best;
  const prefixed = known.filter((k) => word.length >= 3 && k.startsWith(word));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}
