/**
 * Number formatting of SCALE-sim's reports, which are Python `str()` of ints and floats:
 * ints plainly; floats as the shortest round-trip repr, always with a '.', in scientific notation
 * below 1e-4 or from 1e16 ("1e-05", "1.5e+16").
 */

export function pyInt(x: number): string {
  return Number.isInteger(x) ? String(x) : pyFloat(x);
}

export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  // toExponential() without an argument gives the shortest round-trip digits, as repr() does.
  const [mantissa = '', expText = ''] = x.toExponential().split('e');
  const exp = Number(expText);
  if (mantissa === '' || !Number.isInteger(exp)) throw new Error(`internal error: toExponential() gave '${x.toExponential()}'`);
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = x < 0 ? '-' : '';
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const intDigits = exp + 1;
  if (digits.length <= intDigits) return `${sign}${digits.padEnd(intDigits, '0')}.0`;
  return `${sign}${digits.slice(0, intDigits)}.${digits.slice(intDigits)}`;
}
