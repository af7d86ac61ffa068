/** modtrans as a library: the pipeline stages and their types. */
export { readModel, type LoadedModel } from './onnx/reader.js';
export { inferShapes, type InferredModel } from './shape/infer.js';
export { lowerToLayers } from './layers/lower.js';
export type { Layer, LayerKind, LayerPasses } from './layers/types.js';
export { loadHardwareProfile, parseHardwareProfile } from './cost/hardware.js';
export { idealCostModel } from './cost/ideal.js';
export type { CostModel, Gemm, GemmCost, GemmWork, HardwareProfile, LayerCost } from './cost/types.js';
export { buildWorkload } from './workload/build.js';
export type { Collective, ParallelConfig, Parallelism, Workload, WorkloadLayer } from './workload/types.js';
export { writeAstraText } from './writers/astra-text.js';
export { analyseModel, createCostModel, inferModel, workloadOf, type AnalysedModel } from './pipeline.js';
export { InputError } from './errors.js';
export { Sym, type Dim } from './ir/dim.js';
export { checkTraces, checkTraceSet, findTraceFiles, type CheckOptions, type TraceFile } from './check/check-traces.js';
export { formatFinding, type Finding } from './check/findings.js';
export { checkMemoryLimit, memoryReport, optimizerBytesPerParam, type MemoryOptions, type MemoryReport, type RankMemory, type StageMemoryInput } from './memory/report.js';
export { activationBytesPerMicroBatch, type RecomputeMode } from './memory/activations.js';
export { inFlightMicroBatches, stageMicroBatchesHeld, type PipelineSchedule } from './memory/in-flight.js';
