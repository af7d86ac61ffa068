/** A Comparison as the input of the SVG figure (writers/chart-svg.ts). */
import { comparisonChartSvg, type ChartInput } from '../writers/chart-svg.js';
import { describeSplit, type Comparison } from './compare.js';

export function chartInput(c: Comparison): ChartInput {
  return {
    title: `${c.model}: one training step on each hardware profile`,
    subtitle: `${c.layers.length} layers; forward, input-gradient and weight-gradient GEMMs on ${describeSplit(c.split)}; cost model ${[...new Set(c.profiles.map((p) => p.costModel))].join('/')}; times through each profile's clock`,
    profiles: c.profiles.map((p) => p.name),
    profileDetails: c.profiles.map((p) => `${p.processingElements.toLocaleString('en-US')} PEs, ${p.clockMHz} MHz`),
    passNs: {
      fwd: c.totals.map((t) => t.fwd.ns),
      ig: c.totals.map((t) => t.ig.ns),
      wg: c.totals.map((t) => t.wg.ns),
    },
    layers: c.layers.map((l) => ({ name: l.name, ns: l.perProfile.map((f) => f.totalNs) })),
  };
}

export function comparisonChart(c: Comparison): string {
  return comparisonChartSvg(chartInput(c));
}
