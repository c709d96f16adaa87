// speedscope_ocaml.mjs - the Chrome Trace Event export of an OCaml 5
// program's runtime events (the corpus's domains.events: 3 domains) opened
// in speedscope (npm speedscope, its static build) in headless Chromium: it
// loads with no error, no alert and no importer warning (an unbalanced
// B/E), one profile per domain with spans, named "ocaml (pid P), domain-N
// (tid N)", its total time the time in the domain's outermost spans, and a
// domain's GC phases in the Sandwich table; all as the exported JSON has
// them.
//
// usage: node speedscope_ocaml.mjs EMBER EVENTS_FILE OUTDIR
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";
import { launch, openInSpeedscope, profileRows, runChecks, serve, watchdog } from "./harness.mjs";

const [ember, events, outdir] = process.argv.slice(2);
if (!outdir) {
	console.error("usage: node speedscope_ocaml.mjs EMBER EVENTS_FILE OUTDIR");
	process.exit(2);
}
if (!fs.existsSync(events)) {
	console.log(`SKIP: no ${events}`);
	process.exit(77);
}
watchdog(100);

fs.mkdirSync(outdir, { recursive: true });
const json = path.join(outdir, "domains.json");
execFileSync(ember, ["trace", "export", "--format", "chrome", events, "-o", json],
	{ stdio: ["ignore", "inherit", "inherit"], timeout: 60_000 });

// What speedscope should show, from the JSON: per thread, its name, its span
// names and the time in its outermost spans (B/E nest per thread).
const trace = JSON.parse(fs.readFileSync(json, "utf8")).traceEvents;
const pid = trace.find((e) => e.name === "process_name").pid;
const threads = new Map();
for (const e of trace.filter((e) => e.ph === "M" && e.name === "thread_name"))
	threads.set(e.tid, { name: e.args.name, spans: new Set(), depth: 0, busy: 0 });
for (const e of trace.filter((e) => e.ph === "B" || e.ph === "E")) {
	const t = threads.get(e.tid);
	if (e.ph === "B") {
		t.spans.add(e.name);
		if (t.depth++ === 0) t.since = e.ts;
	} else if (--t.depth === 0) {
		t.busy += e.ts - t.since;
	}
	assert.ok(t.depth >= 0, `an E without its B on ${t.name}`);
}
const withSpans = [...threads].filter(([, t]) => t.spans.size);
assert.equal(withSpans.length, 3, "3 domains with spans in the export");

const { server, base } = await serve((name) => (name === "domains.json" ? json : null));
const browser = await launch();
await runChecks(browser, server, async () => {
	const { page, warnings, errors } = await openInSpeedscope(browser, base, "domains.json",
		"domains.json", { width: 1400, height: 900 });
	assert.deepEqual(warnings, [], "speedscope's importer warned");
	const { rows, cells: profiles } = await profileRows(page, withSpans.length, "profiles: one per domain");
	const listed = new Map();
	for (const cells of profiles) {
		const m = /^ocaml \(pid (\d+)\), (domain-\d+) \(tid (\d+)\)$/.exec(cells[1]);
		assert.ok(m, `profile name ${JSON.stringify(cells[1])}`);
		assert.equal(Number(m[1]), pid, "pid");
		listed.set(Number(m[3]), { index: cells[0], thread: m[2], weight: cells[2] });
	}
	assert.deepEqual([...listed.keys()].sort(), withSpans.map(([tid]) => tid).sort(), "profiles (by tid)");
	for (const [tid, t] of withSpans) {
		const got = listed.get(tid);
		assert.equal(got.thread, t.name, `thread name of tid ${tid}`);
		const m = /^([\d.]+)(µs|ms|s)$/.exec(got.weight);
		assert.ok(m, `weight ${got.weight}`);
		const unit = { "µs": 1, ms: 1e3, s: 1e6 }[m[2]], us = Number(m[1]) * unit;
		assert.ok(Math.abs(us - t.busy) <= 0.006 * unit + t.busy * 1e-4,
			`${t.name}: total weight ${got.weight}, the export says ${t.busy.toFixed(3)}µs`);
	}
	// domain-1: its GC phases in the Sandwich table
	const [tid, t] = withSpans.find(([, t]) => t.name === "domain-1");
	await rows.filter({ hasText: `, domain-1 (tid ${tid})` }).click();
	await page.getByText(`, domain-1 (tid ${tid}) (${listed.get(tid).index}/${withSpans.length})`).waitFor();
	await page.getByText("Sandwich").click();
	const symbols = page.locator("tr:visible td:last-child");
	await symbols.first().waitFor();
	assert.deepEqual((await symbols.allInnerTexts()).map((s) => s.trim()).sort(), [...t.spans].sort(),
		"domain-1's phases in the Sandwich view");
	assert.ok(t.spans.has("minor") && t.spans.has("major_slice"), "GC phases among them");
	assert.deepEqual(errors, [], "page errors");
	console.log(`ok: speedscope loaded the OCaml export: ${withSpans.length} profiles, one per domain, ` +
		`named and weighted as the export has them; ${t.spans.size} phases in domain-1's Sandwich table`);
});
