/**
 * The end of a run of lines (or folds) in the USER walk: the largest n in [1, max] for which a
 * monotone test holds (true up to some n, false after), given that it holds for 1. Searched from
 * a guess (the walk extrapolates a line's words per cycle, which is exact on a tile's plateau):
 * two tests when the guess is right, then galloping and bisection, so the answer is exact
 * whatever the guess.
 */
export function longestRun(max: number, guess: number, holds: (n: number) => boolean): number {
  if (max <= 1) return max;
  const start = guess >= max ? max : guess >= 1 ? Math.floor(guess) : 1;
  let good: number;
  let bad: number;
  if (start === 1 || holds(start)) {
    good = start;
    let step = 1;
    for (;;) {
      if (good === max) return max;
      const next = Math.min(max, good + step);
      if (!holds(next)) {
        bad = next;
        break;
      }
      good = next;
      step *= 2;
    }
  } else {
    bad = start;
    let step = 1;
    for (;;) {
      const next = Math.max(1, bad - step);
      if (next === 1 || holds(next)) {
        good = next;
        break;
      }
      bad = next;
      step *= 2;
    }
  }
  while (bad - good > 1) {
    const mid = (good + bad) >> 1;
    if (holds(mid)) good = mid;
    else bad = mid;
  }
  return good;
}
