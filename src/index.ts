/**
 * modtrans as a library: the stages a user composes (README, "Library") and their types.
 * analyse: analyseModel (readModel, inferShapes, lowerToLayers); cost: loadHardwareProfile,
 * createCostModel; plan: planOf; schedule: scheduleOf; write: writeAstraText (workloadOf's table),
 * scheduleTraceFiles and commGroupsJson (Chakra); check: checkTraceSet; memory: planMemory.
 */
export { readModel, type LoadedModel } from './onnx/reader.js';
export { inferShapes, type InferredModel } from './shape/infer.js';
export { lowerToLayers } from './layers/lower.js';
export type { Gemm, GemmWork, Layer, LayerKind, LayerPasses } from './layers/types.js';
export { loadHardwareProfile, parseHardwareProfile } from './cost/hardware.js';
export { idealCostModel } from './cost/ideal.js';
export type { CostModel, GemmCost, HardwareProfile, LayerCost } from './cost/types.js';
export type { Collective, ParallelConfig, Parallelism } from './plan/legacy.js';
export type { LayerTable, LayerTableRow, LayerTable as Workload, LayerTableRow as WorkloadLayer } from './schedule/types.js';
export { writeAstraText } from './writers/astra-text.js';
export { commGroupsJson, scheduleTraceFiles, type ScheduleTraceOptions } from './writers/chakra-schedule.js';
export type { BatchPlan, ParallelPlan, WorldShape } from './plan/types.js';
export type { PlanOptions } from './plan/build.js';
export type { StepSchedule } from './schedule/types.js';
export { analyseModel, createCostModel, inferModel, planOf, scheduleOf, workloadOf, workloadOf as buildWorkload, type AnalysedModel } from './pipeline.js';
export { InputError } from './errors.js';
export { Sym, type Dim } from './ir/dim.js';
export { checkTraces, checkTraceSet, findTraceFiles, type CheckOptions, type TraceFile } from './check/check-traces.js';
export { formatFinding, type Finding } from './check/findings.js';
export { predictFreeNetwork, predictionSummary, type PredictionSummary, type StagePrediction, type StepPrediction } from './predict/free-network.js';
export { timelineSvg, type TimelineInput } from './writers/timeline-svg.js';
export { timelineRows, type TimelineRow } from './writers/timeline-data.js';
export { checkMemoryLimit, memoryReport, optimizerBytesPerParam, planMemory, type MemoryOptions, type MemoryReport, type RankMemory, type StageMemoryInput } from './memory/report.js';
export { activationBytesPerMicroBatch } from './memory/activations.js';
export { inFlightMicroBatches, stageMicroBatchesHeld } from './memory/in-flight.js';
export type { PipelineScheduleKind, PipelineScheduleKind as PipelineSchedule, RecomputeMode } from './plan/types.js';
