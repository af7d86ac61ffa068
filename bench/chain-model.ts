/**
 * A generated graph-only ONNX model of `nodes` nodes in one chain (MatMul with a K x K weight,
 * then Relu, repeated), to measure how reading, shape inference, lowering and costing scale
 * with the node count. Written with protobufjs's Writer (field numbers of onnx.proto3).
 */
import protobuf from 'protobufjs/minimal.js';

const FLOAT = 1;

type W = protobuf.Writer;

function message(w: W, field: number, body: (w: W) => void): void {
  w.uint32((field << 3) | 2).fork();
  body(w);
  w.ldelim();
}

function valueInfo(w: W, field: number, name: string, dims: number[]): void {
  message(w, field, (v) => {
    v.uint32(10).string(name);
    message(v, 2, (type) => message(type, 1, (tensor) => {
      tensor.uint32(8).int32(FLOAT);
      message(tensor, 2, (shape) => {
        for (const d of dims) message(shape, 1, (dim) => dim.uint32(8).int64(d));
      });
    }));
  });
}

/** The model's bytes: x[batch, width] -> (MatMul, Relu) x nodes/2 -> y. */
export function chainModel(nodes: number, width = 64, batch = 8): Uint8Array {
  const w = protobuf.Writer.create();
  w.uint32(8).int64(7); // ir_version
  w.uint32(18).string('modtrans-bench');
  message(w, 7, (g) => {
    let value = 'x';
    for (let i = 0; i < nodes; i++) {
      const out = i === nodes - 1 ? 'y' : `v${i}`;
      const isMatMul = i % 2 === 0;
      message(g, 1, (n) => {
        n.uint32(10).string(value);
        if (isMatMul) n.uint32(10).string(`fc${i}.weight`);
        n.uint32(18).string(out);
        n.uint32(26).string(isMatMul ? `/fc${i}/MatMul` : `/act${i}/Relu`);
        n.uint32(34).string(isMatMul ? 'MatMul' : 'Relu');
      });
      value = out;
    }
    g.uint32(18).string('chain');
    for (let i = 0; i < nodes; i += 2) {
      message(g, 5, (t) => {
        t.uint32(8).int64(width).uint32(8).int64(width);
        t.uint32(16).int32(FLOAT);
        t.uint32(66).string(`fc${i}.weight`);
      });
    }
    valueInfo(g, 11, 'x', [batch, width]);
    valueInfo(g, 12, 'y', [batch, width]);
  });
  message(w, 8, (o) => o.uint32(10).string('').uint32(16).int64(13));
  return w.finish();
}
