// speedscope_timeline.mjs - a recording's Chrome export (`ember convert --to
// chrome X.data`: the samples on their time axis, a track per thread)
// opened in speedscope (npm speedscope, its static build) in headless
// Chromium: it loads (title set, no error screen, no alert, no importer
// warning), with one profile per thread of the recorded program
// (tests/record/threads.c: main, "alpha" and "beta"), named
// "threads (pid P), NAME (tid T)" as the trace names them, each weighing
// the time of its thread's outermost spans. Its speedscope export in time
// order (`--to speedscope --time-order`) loads too, an evented profile per
// thread named "NAME (pid P, tid T)".
//
// usage: node speedscope_timeline.mjs EMBER THREADS_C OUTDIR
// Exits 77 (skipped) where no C compiler is found or perf_event_open is
// not permitted.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";
import { launch, openInSpeedscope, profileRows, runChecks, serve, watchdog } from "./harness.mjs";

const [ember, source, outdir] = process.argv.slice(2);
if (!outdir) {
	console.error("usage: node speedscope_timeline.mjs EMBER THREADS_C OUTDIR");
	process.exit(2);
}
watchdog(100);

fs.mkdirSync(outdir, { recursive: true });
const prog = path.join(outdir, "threads"), data = path.join(outdir, "threads.data");
const json = path.join(outdir, "threads.trace.json");
const cc = spawnSync("cc", ["-O2", "-g", "-pthread", "-o", prog, source], { stdio: "inherit" });
if (cc.status !== 0) {
	console.log("SKIP: no C compiler");
	process.exit(77);
}
const rec = spawnSync(ember, ["record", "-F", "1000", "-o", data, "--", prog], { encoding: "utf8" });
if (rec.status !== 0 && /not permitted/.test(rec.stderr)) {
	console.log(`SKIP: ${rec.stderr.trim()}`);
	process.exit(77);
}
assert.equal(rec.status, 0, `ember record: ${rec.stderr}`);
execFileSync(ember, ["convert", "--to", "chrome", data, "-o", json], { stdio: "inherit", timeout: 60_000 });
const evented = path.join(outdir, "threads.speedscope.json");
execFileSync(ember, ["convert", "--to", "speedscope", "--time-order", data, "-o", evented],
	{ stdio: "inherit", timeout: 60_000 });

// What speedscope should list: per thread, its name and the time (us) of
// its outermost spans (spans of a thread nest; times are us, 3 decimals).
const doc = JSON.parse(fs.readFileSync(json, "utf8"));
const threads = new Map();
let process_ = null;
for (const e of doc.traceEvents) {
	if (e.ph === "M" && e.name === "process_name") process_ = e.args.name;
	if (e.ph === "M" && e.name === "thread_name") threads.set(String(e.tid), { name: e.args.name, spans: [] });
}
for (const e of doc.traceEvents)
	if (e.ph === "X") threads.get(String(e.tid)).spans.push([e.ts, e.ts + e.dur]);
for (const t of threads.values()) {
	t.spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
	t.busy = 0;
	let end = -Infinity;
	for (const [b, e] of t.spans)
		if (b >= end - 0.0015) {
			t.busy += e - b;
			end = e;
		}
}
assert.equal(process_, "threads", "process name in the trace");
assert.deepEqual([...threads.values()].map((t) => t.name).sort(), ["alpha", "beta", "threads"],
	"one track per thread in the trace");

const { server, base } = await serve((name) => (name === "threads.trace.json" ? json
	: name === "threads.speedscope.json" ? evented : null));
const browser = await launch();
await runChecks(browser, server, async () => {
	const { page, warnings, errors } = await openInSpeedscope(browser, base, "threads.trace.json",
		"threads.trace.json", { width: 1400, height: 900 });
	assert.deepEqual(warnings, [], "speedscope's importer warned");
	const listed = new Map();
	for (const cells of (await profileRows(page, threads.size, "profiles shown")).cells) {
		const m = /^(.*) \(pid (\d+)\), (.*) \(tid (\d+)\)$/.exec(cells[1]);
		assert.ok(m, `profile name ${JSON.stringify(cells[1])}`);
		assert.equal(m[1], "threads", "process name");
		listed.set(m[4], { thread: m[3], weight: cells[2] });
	}
	assert.deepEqual([...listed.keys()].sort(), [...threads.keys()].sort(), "profiles (by tid)");
	for (const [tid, t] of threads) {
		const got = listed.get(tid);
		assert.equal(got.thread, t.name, `thread name of tid ${tid}`);
		const m = /^([\d.]+)(µs|ms|s)$/.exec(got.weight);
		assert.ok(m, `weight ${got.weight}`);
		const unit = { "µs": 1, ms: 1e3, s: 1e6 }[m[2]], us = Number(m[1]) * unit;
		assert.ok(Math.abs(us - t.busy) <= 0.006 * unit + t.busy * 1e-4,
			`tid ${tid}: weight ${got.weight}, the trace's outermost spans ${t.busy.toFixed(3)}µs`);
	}
	assert.deepEqual(errors, [], "page errors");
	assert.deepEqual(warnings, [], "console warnings");
	console.log(`ok: speedscope loaded ${path.basename(json)}: ${threads.size} profiles, one per thread ` +
		`(${[...threads.values()].map((t) => t.name).join(", ")}), weights as the trace's spans`);

	// `--to speedscope --time-order`: an evented profile per thread, named
	// "NAME (pid P, tid T)" as the trace names the thread.
	const ev = await openInSpeedscope(browser, base, "threads.speedscope.json", "threads.data",
		{ width: 1400, height: 900 });
	assert.deepEqual(ev.warnings, [], "speedscope's importer warned (evented)");
	const evCounter = ev.page.getByText(/^\(\d+\/\d+\)$/);
	assert.equal(await evCounter.textContent(), `(1/${threads.size})`, "evented profiles shown");
	await evCounter.click();
	const evRows = ev.page.locator("tr:visible", { has: ev.page.locator("td") });
	await evRows.first().waitFor();
	const names = [];
	for (const cells of await Promise.all((await evRows.all()).map((r) => r.locator("td").allInnerTexts()))) {
		const m = /^(.*) \(pid (\d+), tid (\d+)\)$/.exec(cells[1]);
		assert.ok(m, `evented profile name ${JSON.stringify(cells[1])}`);
		assert.equal(m[1], threads.get(m[3])?.name, `evented profile of tid ${m[3]}`);
		names.push(m[1]);
	}
	assert.deepEqual(names.sort(), ["alpha", "beta", "threads"], "evented profiles, one per thread");
	assert.deepEqual(ev.errors, [], "page errors (evented)");
	console.log(`ok: speedscope loaded threads.speedscope.json: ${names.length} evented profiles, one per thread`);
});
