// Formation usage per day, ISO week or month (tokens and units, grouped by scope or model)
// as a chart, and the billing state with its overage band. Billing is for those who may read
// the usage report (billing.usage:read, which the member role lacks): a caller the report
// refuses sees that refusal and no billing figures.
import { ApiError, call } from "./api.js";
import { clear, facts, field, h, select, when } from "./dom.js";
import { problem } from "./ui.js";
import { bandChart, barChart } from "./chart.js";

const MEASURES = [["units", "formation units"], ["inputTokens", "input tokens"], ["outputTokens", "output tokens"]];
const DAYS = { day: 30, week: 180, month: 395 };

async function showBilling(box) {
  try {
    const state = await call("GET", "/v1/billing");
    box.append(bandChart(state), facts([["Plan", state.plan], ["Billable", state.billable ? "yes" : "no"],
      ["Allowance", `${state.allowance} (${state.allowanceMeasure.toLowerCase().replace("_", " ")}, resets ${state.resets.toLowerCase()})`],
      ["Period", `${when(state.periodStartTime)} – ${when(state.periodEndTime)}`],
      ["Units used", state.unitsUsed], ["Output tokens used", state.outputTokensUsed],
      ["Overage units", state.overageUnits], ["Overage multiple", state.overageMultiple],
      ["Overage band", `${state.overageBand} units`], ["Refused from", `${state.overageLimit} units`],
      ["Formations in progress", state.formationsInProgress]]));
  } catch (err) {
    box.append(problem(err, "billing"));
  }
}

function label(stamp, per) {
  const date = new Date(stamp);
  if (per === "month") return date.toISOString().slice(0, 7);
  return date.toISOString().slice(5, 10);
}

// Draws the report; false when the API refused it (403).
async function showUsage(box, form) {
  clear(box);
  const data = new FormData(form);
  const per = String(data.get("per"));
  const groupBy = String(data.get("groupBy"));
  const measure = String(data.get("measure"));
  const start = new Date(Date.now() - DAYS[per] * 86400000).toISOString().replace(/\.\d+Z$/, "Z");
  try {
    const report = await call("GET", "/v1/billing/usage/formation-tokens",
      { query: { startTime: start, per, groupBy, timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC" } });
    const buckets = report.buckets || [];
    const groups = [...new Set(buckets.map((b) => b.key || ""))];
    const byStart = new Map();
    for (const bucket of buckets) {
      if (!byStart.has(bucket.startTime)) byStart.set(bucket.startTime, { label: label(bucket.startTime, per), parts: {} });
      byStart.get(bucket.startTime).parts[bucket.key || ""] = Number(bucket[measure]);
    }
    const periods = [...byStart.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, p]) => p);
    const measureName = MEASURES.find(([m]) => m === measure)[1];
    if (!periods.length) {
      box.append(h("p", { class: "meta", text: "No formation in this period." }));
      return true;
    }
    box.append(barChart(`Formation ${measureName} per ${per}${groupBy ? ` by ${groupBy}` : ""}`, periods, groups));
    const table = h("table", {}, h("caption", { class: "meta", text: "The same figures" }),
      h("thead", {}, h("tr", {}, ["Period", "Group", "Input tokens", "Output tokens", "Units"].map((t) => h("th", { scope: "col", text: t })))));
    const body = h("tbody", {});
    for (const bucket of buckets) {
      body.append(h("tr", {}, [label(bucket.startTime, per), bucket.key || "all", bucket.inputTokens, bucket.outputTokens, bucket.units]
        .map((t) => h("td", { text: String(t) }))));
    }
    table.append(body);
    box.append(table);
  } catch (err) {
    box.append(problem(err, "usage"));
    return !(err instanceof ApiError && err.code === 403);
  }
  return true;
}

export async function usagePage(view) {
  view.append(h("h1", { text: "Usage and billing" }));
  const billing = h("section", { id: "billing", "aria-labelledby": "billing-title" }, h("h2", { id: "billing-title", text: "Billing this period" }));
  const chart = h("div", { id: "usage-chart" });
  const form = h("form", { class: "row", "aria-label": "Usage report" },
    field("Per", select("per", [["day", "day"], ["week", "week"], ["month", "month"]], "day")),
    field("Group by", select("groupBy", [["", "nothing"], ["scope", "scope"], ["model", "model"]])),
    field("Measure", select("measure", MEASURES, "units")),
    h("div", {}, h("button", { type: "submit", text: "Show" })));
  form.addEventListener("submit", (event) => { event.preventDefault(); showUsage(chart, form); });
  view.append(billing, h("section", { "aria-labelledby": "usage-title" },
    h("h2", { id: "usage-title", text: "Formation usage" }), form, chart));
  if (await showUsage(chart, form)) {
    await showBilling(billing);
  } else {
    billing.remove();
  }
}
