/**
 * Independent re-statements of the two readers of ASTRA-sim's text workload
 * (docs/astra-sim-formats.md, A.1-A.5): ASTRA-sim 1.0's whitespace-token parser and
 * Chakra's line-based text converter. Tests feed our writer's output to both.
 */
export interface ParsedLayer {
  name: string;
  reserved: number;
  fwdCompute: number;
  fwdType: string;
  fwdSize: number;
  igCompute: number;
  igType: string;
  igSize: number;
  wgCompute: number;
  wgType: string;
  wgSize: number;
  update: number;
}

const PORTABLE = new Set(['DATA', 'MODEL', 'HYBRID_DATA_MODEL', 'HYBRID_MODEL_DATA', 'MICRO']);
const COMM = new Set(['ALLREDUCE', 'ALLGATHER', 'REDUCESCATTER', 'ALLTOALL', 'NONE']);

function int(token: string | undefined, what: string): number {
  if (token === undefined || !/^-?\d+$/.test(token)) throw new Error(`${what}: '${token}' is not an integer`);
  return Number(token);
}

function word(token: string | undefined, what: string): string {
  if (token === undefined) throw new Error(`${what}: missing`);
  return token;
}

/** ASTRA-sim 1.0: a token stream; keyword, count, then exactly 12 tokens per layer. */
export function parseLikeAstra1(text: string): { keyword: string; layers: ParsedLayer[] } {
  const tokens = text.split(/\s+/).filter((t) => t !== '');
  const keyword = tokens.shift() ?? '';
  if (!PORTABLE.has(keyword)) throw new Error(`unknown keyword ${keyword}`);
  const count = int(tokens.shift(), 'count');
  const layers: ParsedLayer[] = [];
  for (let i = 0; i < count; i++) {
    const t = tokens.splice(0, 12);
    if (t.length < 12) throw new Error(`layer ${i}: only ${t.length} tokens`);
    layers.push({
      name: word(t[0], 'name'), reserved: int(t[1], 'reserved'), fwdCompute: int(t[2], 'fwd'), fwdType: word(t[3], 'fwd type'), fwdSize: int(t[4], 'fwd size'),
      igCompute: int(t[5], 'ig'), igType: word(t[6], 'ig type'), igSize: int(t[7], 'ig size'), wgCompute: int(t[8], 'wg'), wgType: word(t[9], 'wg type'),
      wgSize: int(t[10], 'wg size'), update: int(t[11], 'update'),
    });
  }
  return { keyword, layers };
}

/** Chakra's converter: line based; every line after the second is a layer; no blank lines. */
export function parseLikeChakraConverter(text: string): { keyword: string; count: number; layers: string[][] } {
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  const keyword = (lines[0] ?? '').trim().split(/\s+/)[0] ?? '';
  const countLine = (lines[1] ?? '').trim();
  if (!/^\d+$/.test(countLine)) throw new Error(`line 2 must hold only the layer count, got '${countLine}'`);
  const layers = lines.slice(2).map((line, i) => {
    if (line.trim() === '') throw new Error(`Cannot parse the following layer (line ${i + 3} is blank)`);
    const cols = line.trim().split(/\s+/);
    if (cols.length < 12) throw new Error(`line ${i + 3}: ${cols.length} columns`);
    for (const c of [1, 2, 4, 5, 7, 8, 10]) int(cols[c], `line ${i + 3} col ${c}`);
    return cols;
  });
  return { keyword, count: Number(countLine), layers };
}

/** The writer rules of docs/astra-sim-formats.md A.5, checked line by line. */
export function checkWriterRules(text: string): string[] {
  const problems: string[] = [];
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  if (text.includes('\r')) problems.push('CR found (LF endings expected)');
  const first = lines[0] ?? '';
  if (first !== first.trim() || first.split(/\s+/).length !== 1) problems.push('line 1 must hold only the keyword');
  if (!/^\d+$/.test(lines[1] ?? '')) problems.push('line 2 must be the bare count');
  if (Number(lines[1]) !== lines.length - 2) problems.push(`count ${lines[1]} != ${lines.length - 2} layer lines`);
  lines.slice(2).forEach((line, i) => {
    const cols = line.split('\t');
    if (cols.length !== 12) problems.push(`layer line ${i}: ${cols.length} TAB-separated columns`);
    if (line !== line.trim()) problems.push(`layer line ${i}: surrounding whitespace`);
    if (!/^[A-Za-z0-9_.-]+$/.test(cols[0] ?? '')) problems.push(`layer line ${i}: bad name '${cols[0]}'`);
    if (cols[1] !== '-1') problems.push(`layer line ${i}: reserved column is '${cols[1]}'`);
    for (const c of [2, 4, 5, 7, 8, 10, 11]) if (!/^\d+$/.test(cols[c] ?? '')) problems.push(`layer line ${i}: column ${c} '${cols[c]}' is not a plain non-negative integer`);
    for (const c of [3, 6, 9]) if (!COMM.has(cols[c] ?? '')) problems.push(`layer line ${i}: comm type '${cols[c]}'`);
    for (const c of [3, 6, 9]) if (cols[c] === 'NONE' && cols[c + 1] !== '0') problems.push(`layer line ${i}: NONE with size ${cols[c + 1]}`);
  });
  return problems;
}
