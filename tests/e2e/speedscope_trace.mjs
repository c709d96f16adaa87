// speedscope_trace.mjs - ember's Chrome Trace Event export opened in
// speedscope (npm speedscope, its static build) in headless Chromium: the
// profile loads (title set, no error screen, no alert, no importer warning
// such as an unbalanced B/E), one profile per thread that has spans, named
// after the thread, its total time the time in the thread's outermost spans,
// and the span names of a worker in the Sandwich table; all as `ember trace
// dump` has them. The trace is recorded with examples/traced.c.
//
// usage: node speedscope_trace.mjs EMBER TRACED OUTDIR [--screenshot PNG]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";
import { launch, openInSpeedscope, profileRows, runChecks, serve, watchdog } from "./harness.mjs";

const [ember, traced, outdir, ...rest] = process.argv.slice(2);
if (!outdir || (rest.length && (rest.length !== 2 || rest[0] !== "--screenshot"))) {
	console.error("usage: node speedscope_trace.mjs EMBER TRACED OUTDIR [--screenshot PNG]");
	process.exit(2);
}
const screenshot = rest[1];
watchdog(100);

fs.mkdirSync(outdir, { recursive: true });
const trace = path.join(outdir, "traced.trace"), json = path.join(outdir, "traced.json");
fs.rmSync(trace, { force: true }); // the trace file is created with O_EXCL
fs.rmSync(json, { force: true });
const run = (prog, args, env) => execFileSync(prog, args, { env: { ...process.env, ...env },
	encoding: "utf8", maxBuffer: 1 << 28, timeout: 60_000, stdio: ["ignore", "pipe", "inherit"] });
run(traced, ["3000", "3"], { EMBER_TRACE: trace });
run(ember, ["trace", "export", "--format", "chrome", trace, "-o", json]);

// What speedscope should show, from `ember trace dump` ("time tid thread kind
// name fields"): the threads with spans, their names, span names, and the
// time in their outermost spans (speedscope's "non-idle" weight).
const threads = new Map();
for (const line of run(ember, ["trace", "dump", trace]).split("\n")) {
	const m = /^(\S+) (\d+) (.*?) (begin|end) (.*?)(?: \S+=.*)?$/.exec(line);
	if (!m) continue;
	const [, time, tid, thread, kind, name] = m;
	if (!threads.has(tid)) threads.set(tid, { thread, spans: new Set(), begins: 0, depth: 0, busy: 0, outer: [] });
	const t = threads.get(tid);
	if (kind === "begin") {
		t.spans.add(name);
		t.begins++;
		if (t.depth++ === 0) t.since = Number(time);
	} else {
		assert.ok(t.depth > 0, `dump: end without begin: ${line}`);
		if (--t.depth === 0) {
			t.busy += Number(time) - t.since;
			t.outer.push([t.since, Number(time)]);
		}
	}
}
assert.ok(threads.size >= 2, `expected spans on several threads, dump has ${threads.size}`);

const { server, base } = await serve((name) => (name === "traced.json" ? json : null));

const browser = await launch();
await runChecks(browser, server, async () => {
	// Loaded: the title is "<file name> - speedscope".
	const { page, warnings, errors } = await openInSpeedscope(browser, base, "traced.json", "traced.json",
		{ width: 1400, height: 900 });
	assert.deepEqual(warnings, [], "speedscope's importer warned");

	// The toolbar: "<profile name> (1/N)", N = threads with spans.
	// The profile list (click the name): one row per thread, named
	// "traced (pid P), <thread> (tid T)", its total weight the time in the
	// thread's outermost spans (2 decimals: "11.14ms").
	const { rows, cells: profiles } = await profileRows(page, threads.size, "profiles shown");
	const listed = new Map();
	for (const cells of profiles) {
		const m = /^(.*) \(pid (\d+)\), (.*) \(tid (\d+)\)$/.exec(cells[1]);
		assert.ok(m, `profile name ${JSON.stringify(cells[1])}`);
		assert.equal(m[1], path.basename(traced), "process name");
		listed.set(m[4], { index: cells[0], thread: m[3], weight: cells[2] });
	}
	assert.deepEqual([...listed.keys()].sort(), [...threads.keys()].sort(), "profiles (by tid)");
	for (const [tid, t] of threads) {
		const got = listed.get(tid);
		assert.equal(got.thread, t.thread, `thread name of tid ${tid}`);
		const m = /^([\d.]+)(µs|ms|s)$/.exec(got.weight);
		assert.ok(m, `weight ${got.weight}`);
		const unit = { "µs": 1, ms: 1e3, s: 1e6 }[m[2]], us = Number(m[1]) * unit, want = t.busy * 1e6;
		assert.ok(Math.abs(us - want) <= 0.006 * unit + want * 1e-4,
			`tid ${tid}: total weight ${got.weight}, the dump says ${want.toFixed(3)}µs`);
	}

	// The busiest worker: select it; the Sandwich table lists its span names.
	const [tid, worker] = [...threads].filter(([, t]) => t.spans.size > 1)
		.sort(([, a], [, b]) => b.begins - a.begins)[0] || assert.fail("no thread with nested spans");
	await rows.filter({ hasText: `, ${worker.thread} (tid ${tid})` }).click();
	await page.getByText(`, ${worker.thread} (tid ${tid}) (${listed.get(tid).index}/${threads.size})`).waitFor();
	await page.getByText("Sandwich").click();
	const symbols = page.locator("tr:visible td:last-child");
	await symbols.first().waitFor();
	assert.deepEqual((await symbols.allInnerTexts()).map((s) => s.trim()).sort(), [...worker.spans].sort(),
		`span names of ${worker.thread} in the Sandwich view`);

	if (screenshot) {
		// Time Order of the worker, zoomed on ~50 µs holding the most
		// requests, so that handle/parse/compute/reply are labelled. The
		// view spans the thread's first to last span event over the page's
		// width; "=" halves it, keeping the time under the mouse in place.
		await page.getByText("Time Order").click();
		const first = worker.outer[0][0], span = worker.outer.at(-1)[1] - first;
		const zooms = Math.max(0, Math.round(Math.log2(span / 50e-6))), w = span / 2 ** zooms;
		let best = 0, start = first;
		for (let i = 0, j = 0; i < worker.outer.length; i++) {
			while (j < worker.outer.length && worker.outer[j][1] <= worker.outer[i][0] + w * 0.95) j++;
			const gap = i ? (worker.outer[i - 1][1] + worker.outer[i][0]) / 2 : -Infinity;
			if (j - i > best) [best, start] = [j - i, Math.max(worker.outer[i][0] - w * 0.025, gap)];
		}
		// Mouse positions are whole pixels: aim at the window's centre again
		// before each step. After a step around x the view starts at
		// v0 + (x / 1400) * vw / 2, so its centre is v0 + vw / 4 + (x / 1400) * vw / 2.
		for (let i = 0, v0 = first, vw = span; i < zooms; i++, vw /= 2) {
			const x = Math.min(1399, Math.max(0, Math.round(((start + w / 2 - v0 - vw / 4) / (vw / 2)) * 1400)));
			v0 += ((x / 1400) * vw) / 2;
			await page.mouse.move(x, 500);
			await page.keyboard.press("=");
		}
		await page.mouse.move(1400, 900); // no hover box
		await page.waitForTimeout(500);
		// the toolbar, the minimap and the spans: the rest is empty
		await page.screenshot({ path: screenshot, clip: { x: 0, y: 0, width: 1400, height: 200 } });
		console.log(`screenshot: ${screenshot}`);
	}
	assert.deepEqual(errors, [], "page errors");
	assert.deepEqual(warnings, [], "console warnings");
	console.log(`ok: speedscope loaded ${path.basename(json)}: ${threads.size} profiles = threads with spans, ` +
		`names and total times as in the dump, ${[...worker.spans].join("/")} in ${worker.thread}'s Sandwich table`);
});
