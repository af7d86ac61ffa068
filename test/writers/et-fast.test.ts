/** The direct node encoder writes exactly what the protobufjs encoder writes, on every node kind. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeEtFile, type EtAttr, type EtNode } from '../../src/writers/chakra-encoding.js';
import { ByteSink, appendMetadata, appendNode, appendNodeBody, nodeBodySize } from '../../src/writers/et-fast.js';
import { expectSameBytes } from '../helpers/bytes.js';

const attr = fc.oneof(
  fc.record({ kind: fc.constant('bool_val' as const), value: fc.boolean() }),
  fc.record({ kind: fc.constant('int32_val' as const), value: fc.integer({ min: 0, max: 2 ** 31 - 1 }) }),
  fc.record({ kind: fc.constant('int64_val' as const), value: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }) }),
  fc.record({ kind: fc.constant('uint64_val' as const), value: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }) }),
  fc.record({ kind: fc.constant('string_val' as const), value: fc.string() }),
  fc.record({ kind: fc.constant('bool_list' as const), value: fc.array(fc.boolean(), { maxLength: 4 }) }),
);
const node: fc.Arbitrary<EtNode> = fc.record({
  id: fc.integer({ min: 0, max: 2 ** 40 }),
  name: fc.string(),
  type: fc.constantFrom('COMP_NODE' as const, 'COMM_COLL_NODE' as const, 'COMM_SEND_NODE' as const, 'COMM_RECV_NODE' as const),
  dataDeps: fc.array(fc.integer({ min: 0, max: 2 ** 35 }), { maxLength: 5 }),
  durationMicros: fc.integer({ min: 0, max: 2 ** 40 }),
  attrs: fc.array(fc.record({ name: fc.string({ minLength: 1 }), value: attr }) as fc.Arbitrary<EtAttr>, { maxLength: 5 }),
});

describe('et-fast', () => {
  it('is byte-identical to protobufjs on random nodes', () => {
    fc.assert(fc.property(fc.array(node, { maxLength: 6 }), (nodes) => {
      const sink = new ByteSink();
      appendMetadata(sink, '0.0.4');
      for (const n of nodes) appendNode(sink, n);
      expectSameBytes(sink.view(), encodeEtFile(nodes));
    }), { numRuns: 300 });
  });

  it('sizes a node body as the bytes appendNodeBody writes', () => {
    fc.assert(fc.property(node, (n) => {
      const sink = new ByteSink(1);
      appendNodeBody(sink, n);
      expect(nodeBodySize(n)).toBe(sink.length);
    }), { numRuns: 300 });
  });
});

describe('scheduleTraceFiles', () => {
  it('writes, for every rank, the bytes protobufjs writes for that rank\'s nodes', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const { gptModel } = await import('../../bench/models/gpt-graph.js');
    const { analyseModel, planOf, scheduleOf } = await import('../../src/pipeline.js');
    const { idealCostModel } = await import('../../src/cost/ideal.js');
    const { loadHardwareProfile } = await import('../../src/cost/hardware.js');
    const { scheduleEtNodes, scheduleTraceFiles } = await import('../../src/writers/chakra-schedule.js');
    const file = join(mkdtempSync(join(tmpdir(), 'modtrans-etfast-')), 'g.onnx');
    writeFileSync(file, gptModel({ layers: 2, hidden: 64, heads: 4, seq: 16, batch: 2, vocab: 100 }));
    const plan = planOf(analyseModel(file), { world: { tp: 2, dp: 2, pp: 1 }, batch: { globalBatch: 8, microBatch: 2, microBatches: 2 }, sequenceParallel: true, zero: 1, dtype: 'bf16', dpBucketMiB: 25 });
    const schedule = scheduleOf(plan, idealCostModel(await loadHardwareProfile('tpu-256'), { optimizer: 'adam' }));
    // Data-parallel replicas of a 1-D world write the same bytes (the writer reuses the previous rank's).
    const replicas = scheduleOf(planOf(analyseModel(file), { world: { tp: 1, dp: 3, pp: 1 }, batch: { globalBatch: 6, microBatch: 2, microBatches: 1 }, sequenceParallel: false, zero: 0, dtype: 'bf16' }), idealCostModel(await loadHardwareProfile('tpu-256'), { optimizer: 'adam' }));
    const replicaFiles = [...scheduleTraceFiles(replicas, 'y', { timing: 'replay' })];
    expect(replicaFiles.map((f) => f.path)).toEqual(['y.0.et', 'y.1.et', 'y.2.et']);
    for (const [rank, f] of replicaFiles.entries()) expectSameBytes(f.bytes, encodeEtFile(scheduleEtNodes(replicas, rank, { timing: 'replay' })), f.path);
    for (const timing of ['replay', 'roofline'] as const) {
      const written = [...scheduleTraceFiles(schedule, 'x', { timing })];
      expect(written.map((f) => f.path)).toEqual(['x.0.et', 'x.1.et', 'x.2.et', 'x.3.et']);
      for (const [rank, f] of written.entries()) expectSameBytes(f.bytes, encodeEtFile(scheduleEtNodes(schedule, rank, { timing })), `${f.path} (${timing})`);
    }
  });
});
