/**
 * Classes of non-GEMM work on the vector unit. Named here, below every stage that uses them: the
 * op table (shape/rules/) gives each op its class, layers/ builds vector layers of that class and
 * cost/vector.ts prices a class per element (README, "Non-GEMM work").
 */
export const VECTOR_OP_CLASSES = ['elementwise', 'transcendental', 'gelu', 'softmax', 'layernorm', 'pool', 'reduce'] as const;
export type VectorOpClass = (typeof VECTOR_OP_CLASSES)[number];
