/**
 * CALC mode ("estimate bandwidth") read SRAM (`memory/read_buffer_estimate_bw.py`, docs/scalesim-model.md §7a).
 * Reads never stall; the buffer only counts DRAM traffic:
 * - addresses are grouped into sets of ips = floor(S/100) distinct words;
 * - an "epoch" ends when 50 sets are full (50*ips distinct words), its words are counted as
 *   prefetched from DRAM and the hit window restarts empty.
 * So DRAM reads = number of demand words not yet seen in the current epoch. We track "seen in
 * this epoch" with one stamp per address, O(1) per demanded word.
 *
 * DRAM timing (for the reports): the first epoch is fetched at 10 words/cycle ending 1 cycle
 * before the first demand; later epochs are spread over the cycles between epoch ends.
 */
import { indexOutOfRange } from '../../errors.js';
import { CALC_ACTIVE_SETS, CALC_READ_BANDWIDTH_WORDS, calcItemsPerSet } from './constants.js';
import type { ReadBufferStats } from './read-buffer-user.js';

export class CalcReadBuffer {
  private readonly sramWords: number;
  private readonly epochWords: number;
  private readonly seenEpoch: Int32Array;
  private epoch = 1;
  private wordsThisEpoch = 0;
  private reads = 0;
  private closedEpochs = 0;
  private lastCloseCycle = 0;
  private firstRequestCycle = -1;

  /** Lowest address that counts as SCALE-sim's first request (see LayerOperands.requestFloor). */
  private readonly requestFloor: number;

  constructor(sramWords: number, addressSpace: number, requestFloor = 0) {
    this.requestFloor = requestFloor;
    this.sramWords = sramWords;
    this.epochWords = calcEpochWords(sramWords);
    this.seenEpoch = new Int32Array(addressSpace);
  }

  /** The cycle of the first demand line that reads this operand (times the first epoch's fetch). */
  setFirstRequestCycle(cycle: number): void {
    this.firstRequestCycle = cycle;
  }

  /** Serves one demand line at `cycle` (never stalls). */
  serve(addrs: Int32Array, count: number, cycle: number): void {
    if (count === 0) return;
    if (this.firstRequestCycle < 0 && addrs.subarray(0, count).some((a) => a >= this.requestFloor)) this.firstRequestCycle = cycle;
    const seen = this.seenEpoch;
    for (let p = 0; p < count; p++) {
      const a = addrs[p] ?? indexOutOfRange(p);
      if (seen[a] === this.epoch) continue;
      seen[a] = this.epoch;
      this.reads++;
      if (++this.wordsThisEpoch === this.epochWords) this.closeEpoch(cycle);
    }
  }

  private closeEpoch(cycle: number): void {
    this.epoch++;
    this.wordsThisEpoch = 0;
    this.closedEpochs++;
    this.lastCloseCycle = cycle;
  }

  /**
   * Accounts for an operand served without walking it: `distinctWords` words, each read at least
   * once, never reaching an epoch's end (the caller checks distinctWords < epochWords).
   */
  serveFitting(distinctWords: number): void {
    this.reads = distinctWords;
    this.wordsThisEpoch = distinctWords;
  }

  stats(): ReadBufferStats {
    return calcReadStats({
      sramWords: this.sramWords,
      reads: this.reads,
      closedEpochs: this.closedEpochs,
      lastCloseCycle: this.lastCloseCycle,
      firstRequestCycle: Math.max(0, this.firstRequestCycle), // SCALE-sim's default if none was seen
      wordsLastEpoch: this.wordsThisEpoch,
    });
  }
}

/** Distinct words that end a CALC epoch (Infinity when S < 100: sets of 0 words never fill). */
export function calcEpochWords(sramWords: number): number {
  const itemsPerSet = calcItemsPerSet(sramWords);
  return itemsPerSet === 0 ? Infinity : CALC_ACTIVE_SETS * itemsPerSet;
}

export interface CalcReadCounters {
  sramWords: number;
  reads: number;
  closedEpochs: number;
  /** Cycle of the demand line that ended the last epoch. */
  lastCloseCycle: number;
  firstRequestCycle: number;
  /** Distinct words of the last, unfinished epoch. */
  wordsLastEpoch: number;
}

/** DRAM reads and SCALE-sim's DRAM start/stop cycles of a CALC read buffer. */
export function calcReadStats(c: CalcReadCounters): ReadBufferStats {
  const bw = CALC_READ_BANDWIDTH_WORDS;
  const ips = calcItemsPerSet(c.sramWords);
  if (c.closedEpochs > 0) {
    return {
      dramReads: c.reads,
      dramStartCycle: c.firstRequestCycle - Math.ceil((CALC_ACTIVE_SETS * ips) / bw),
      dramStopCycle: c.lastCloseCycle + 1,
    };
  }
  // One partial epoch, fetched entirely before cycle 0 (SCALE-sim crashes when S < 100 words).
  const sets = ips === 0 ? 0 : Math.ceil(c.wordsLastEpoch / ips);
  return { dramReads: c.reads, dramStartCycle: -Math.ceil((sets * ips) / bw), dramStopCycle: -1 };
}
