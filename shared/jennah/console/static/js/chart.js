// A stacked bar chart in SVG, drawn here (no chart library): one bar per period, one
// stacked part per group. Series classes (series-0…) take their colours from console.css.
import { h, svg } from "./dom.js";

const WIDTH = 600;
const HEIGHT = 240;
const LEFT = 48;
const BOTTOM = 28;
const TOP = 10;

// periods: [{label, parts: {group: value}}]; groups: the groups in legend order.
export function barChart(title, periods, groups) {
  const totals = periods.map((p) => groups.reduce((sum, g) => sum + (p.parts[g] || 0), 0));
  const max = Math.max(1, ...totals);
  const plotWidth = WIDTH - LEFT - 8;
  const plotHeight = HEIGHT - BOTTOM - TOP;
  const step = plotWidth / Math.max(1, periods.length);
  const barWidth = Math.min(40, Math.max(2, step * 0.7));
  const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": title },
    svg("title", {}, title),
    svg("line", { class: "axis", x1: LEFT, y1: TOP, x2: LEFT, y2: TOP + plotHeight }),
    svg("line", { class: "axis", x1: LEFT, y1: TOP + plotHeight, x2: WIDTH - 8, y2: TOP + plotHeight }),
    svg("text", { class: "tick", x: LEFT - 4, y: TOP + 8, "text-anchor": "end" }, String(max)),
    svg("text", { class: "tick", x: LEFT - 4, y: TOP + plotHeight, "text-anchor": "end" }, "0"));
  const labelEvery = Math.ceil(periods.length / 8);
  periods.forEach((period, i) => {
    const x = LEFT + i * step + (step - barWidth) / 2;
    let y = TOP + plotHeight;
    groups.forEach((group, g) => {
      const value = period.parts[group] || 0;
      if (!value) return;
      const height = (value / max) * plotHeight;
      y -= height;
      chart.append(svg("rect", { class: `bar series-${g % 6}`, x, y, width: barWidth, height },
        svg("title", {}, `${period.label}${group ? ` · ${group}` : ""}: ${value}`)));
    });
    if (i % labelEvery === 0) {
      chart.append(svg("text", { class: "tick", x: x + barWidth / 2, y: HEIGHT - 10, "text-anchor": "middle" }, period.label));
    }
  });
  const legend = h("ul", { class: "legend" });
  groups.forEach((group, g) => {
    if (group) legend.append(h("li", {}, h("span", { class: `swatch series-${g % 6}` }), group));
  });
  return h("figure", { class: "chart" }, chart, legend.children.length ? legend : null);
}

// The billing period as one bar: units used within the allowance, past it (overage) and
// what remains of the overage band.
export function bandChart(state) {
  const allowance = Number(state.allowance);
  const used = Number(state.unitsUsed);
  const limit = Math.max(Number(state.overageLimit), allowance, used, 1);
  const scale = (value) => (value / limit) * (WIDTH - 2);
  const within = Math.min(used, allowance);
  const over = Math.max(0, used - allowance);
  const title = `${used} of ${allowance} units used; overage band ${state.overageBand} units; refused from ${state.overageLimit}`;
  return h("figure", { class: "chart" }, svg("svg", { viewBox: `0 0 ${WIDTH} 30`, role: "img", "aria-label": title },
    svg("title", {}, title),
    svg("rect", { class: "band-free", x: 1, y: 5, width: WIDTH - 2, height: 20 }),
    svg("rect", { class: "band-used", x: 1, y: 5, width: scale(within), height: 20 }),
    svg("rect", { class: "band-over", x: 1 + scale(within), y: 5, width: scale(over), height: 20 }),
    svg("line", { class: "axis", x1: 1 + scale(allowance), y1: 0, x2: 1 + scale(allowance), y2: 30 })),
  h("figcaption", { class: "meta", text: title }));
}
