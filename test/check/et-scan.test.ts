/**
 * The checker's wire reader against protobufjs's decoder of the same schema (decodeEtFile), on
 * random nodes: 64-bit ids, negative int32/int64 values, bool lists and non-ASCII names.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EtDecodeError, KNOWN_ATTRS, scanEtFile, decodeName } from '../../src/check/et-scan.js';
import { decodeEtFile, encodeEtFile, type EtAttr, type EtNode } from '../../src/writers/chakra-encoding.js';
import { present } from '../helpers/present.js';

const attrArb: fc.Arbitrary<EtAttr> = fc.record({
  name: fc.constantFrom(...KNOWN_ATTRS, 'other_attr'),
  value: fc.oneof(
    fc.record({ kind: fc.constant('int64_val' as const), value: fc.maxSafeInteger() }),
    fc.record({ kind: fc.constant('uint64_val' as const), value: fc.maxSafeNat() }),
    fc.record({ kind: fc.constant('int32_val' as const), value: fc.integer() }),
    fc.record({ kind: fc.constant('bool_val' as const), value: fc.boolean() }),
    fc.record({ kind: fc.constant('string_val' as const), value: fc.string({ unit: 'grapheme', maxLength: 40 }) }),
    fc.record({ kind: fc.constant('bool_list' as const), value: fc.array(fc.boolean(), { maxLength: 5 }) }),
  ),
});

const nodeArb: fc.Arbitrary<EtNode> = fc.record({
  id: fc.maxSafeNat(),
  name: fc.string({ unit: 'grapheme', maxLength: 50 }),
  type: fc.constantFrom('COMP_NODE', 'COMM_SEND_NODE', 'COMM_RECV_NODE', 'COMM_COLL_NODE'),
  dataDeps: fc.array(fc.maxSafeNat(), { maxLength: 4 }),
  durationMicros: fc.maxSafeNat(),
  attrs: fc.uniqueArray(attrArb, { selector: (a) => a.name, maxLength: 6 }),
});

const TYPE_VALUE: Record<string, number> = { COMP_NODE: 4, COMM_SEND_NODE: 5, COMM_RECV_NODE: 6, COMM_COLL_NODE: 7 };

describe('scanEtFile', () => {
  it('reads what protobufjs decodes', () => {
    fc.assert(
      fc.property(fc.array(nodeArb, { maxLength: 6 }), (nodes) => {
        const bytes = encodeEtFile(nodes);
        const reference = decodeEtFile(bytes).nodes;
        const seen: unknown[] = [];
        const count = scanEtFile(bytes, (v) => {
          const attrs: Record<string, unknown> = {};
          for (const name of KNOWN_ATTRS) {
            const a = v.attrs[name];
            if (a.kind !== undefined) attrs[name] = { kind: a.kind, value: a.kind === 'string_val' ? a.text : a.kind === 'bool_list' ? a.bools : a.kind === 'bool_val' ? a.num === 1 : a.num };
          }
          seen.push({ id: v.id, name: decodeName(bytes, v.nameStart, v.nameEnd), type: v.type, deps: v.deps.slice(0, v.depCount), duration: v.durationMicros, attrs });
        });
        expect(count).toBe(nodes.length);
        const expected = reference.map((n) => ({
          id: n.id,
          name: n.name,
          type: TYPE_VALUE[n.type],
          deps: n.data_deps,
          duration: n.duration_micros,
          attrs: Object.fromEntries(
            n.attr
              .filter((a) => (KNOWN_ATTRS as readonly string[]).includes(String(a['name'])))
              .map((a) => {
                const kind = String(a['value']);
                const raw = a[kind];
                return [a['name'], { kind, value: kind === 'bool_list' ? (raw as { values: boolean[] }).values : typeof raw === 'object' && raw !== null ? Number(String(raw)) : raw }];
              }),
          ),
        }));
        expect(seen).toEqual(expected);
      }),
      { numRuns: 100 },
    );
  });

  it('refuses truncated files', () => {
    const bytes = encodeEtFile([{ id: 1, name: 'n', type: 'COMP_NODE', dataDeps: [], durationMicros: 3, attrs: [] }]);
    const metadataEnd = 1 + present(bytes[0], 'metadata length byte'); // a file of metadata alone is a valid trace of no nodes
    expect(scanEtFile(bytes.subarray(0, metadataEnd), () => {})).toBe(0);
    for (let cut = 0; cut < bytes.length; cut++) {
      if (cut === metadataEnd) continue;
      expect(() => scanEtFile(bytes.subarray(0, cut), () => {}), `cut at ${cut}`).toThrow(EtDecodeError);
    }
  });
});
