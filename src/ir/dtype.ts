/** ONNX TensorProto.DataType: names, and element sizes in bits (sub-byte types exist). */

const DTYPE_NAMES: readonly string[] = [
  'UNDEFINED', 'FLOAT', 'UINT8', 'INT8', 'UINT16', 'INT16', 'INT32', 'INT64', 'STRING', 'BOOL',
  'FLOAT16', 'DOUBLE', 'UINT32', 'UINT64', 'COMPLEX64', 'COMPLEX128', 'BFLOAT16', 'FLOAT8E4M3FN',
  'FLOAT8E4M3FNUZ', 'FLOAT8E5M2', 'FLOAT8E5M2FNUZ', 'UINT4', 'INT4', 'FLOAT4E2M1',
];

export const DType = {
  UNDEFINED: 0, FLOAT: 1, UINT8: 2, INT8: 3, UINT16: 4, INT16: 5, INT32: 6, INT64: 7, STRING: 8,
  BOOL: 9, FLOAT16: 10, DOUBLE: 11, UINT32: 12, UINT64: 13, COMPLEX64: 14, COMPLEX128: 15,
  BFLOAT16: 16, FLOAT8E4M3FN: 17, FLOAT8E4M3FNUZ: 18, FLOAT8E5M2: 19, FLOAT8E5M2FNUZ: 20,
  UINT4: 21, INT4: 22, FLOAT4E2M1: 23,
} as const;

export type DTypeCode = number;

const BITS: Record<number, number> = {
  1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 8: 0, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64,
  14: 64, 15: 128, 16: 16, 17: 8, 18: 8, 19: 8, 20: 8, 21: 4, 22: 4, 23: 4,
};

export function dtypeName(code: DTypeCode): string {
  return DTYPE_NAMES[code] ?? `DTYPE_${code}`;
}

/** Storage bits per element (0 for STRING, whose size is not fixed). */
export function dtypeBits(code: DTypeCode): number {
  return BITS[code] ?? 0;
}

/** Bytes of `count` elements, rounding sub-byte types up to whole bytes. */
export function dtypeBytes(code: DTypeCode, count: number): number {
  return Math.ceil((dtypeBits(code) * count) / 8);
}

export function isIntegerDType(code: DTypeCode): boolean {
  return [2, 3, 4, 5, 6, 7, 9, 12, 13, 21, 22].includes(code);
}

export function isFloatDType(code: DTypeCode): boolean {
  return [1, 10, 11, 16, 17, 18, 19, 20, 23].includes(code);
}
