// speedscope_profile.mjs - ember's `convert --to speedscope` (sampled, and
// evented with --time-order) and `convert --to chrome` outputs opened in
// speedscope (npm speedscope, its static build) in headless Chromium: each
// loads (title set, no error screen, no alert, no importer warning), and
// the Sandwich table lists the frames with the total and self weights that
// the folded input gives them (exact numbers for speedscope's unitless
// weights; for the Chrome trace, where 1 sample is drawn as 1 us, the same
// percentages and times as speedscope formats them).
//
// usage: node speedscope_profile.mjs EMBER FOLDED OUTDIR
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";
import { launch, openInSpeedscope, runChecks, serve, watchdog } from "./harness.mjs";

const [ember, folded, outdir] = process.argv.slice(2);
if (!outdir) {
	console.error("usage: node speedscope_profile.mjs EMBER FOLDED OUTDIR");
	process.exit(2);
}
watchdog(100);

fs.mkdirSync(outdir, { recursive: true });
const title = "ember e2e: busy";
// (not "*.chrome.json": speedscope takes such names for DevTools timelines)
const files = {
	"sampled.speedscope.json": ["--to", "speedscope", "--name", title],
	"evented.speedscope.json": ["--to", "speedscope", "--name", title, "--time-order"],
	"busy.trace.json": ["--to", "chrome"],
};
for (const [name, args] of Object.entries(files))
	execFileSync(ember, ["convert", ...args, folded, "-o", path.join(outdir, name)], { stdio: "inherit", timeout: 60_000 });

// What the Sandwich table should say: per frame, the weight of the stacks
// it is in (once per stack, as speedscope counts recursion) and of those it
// ends, and the total.
const frames = new Map();
let total = 0;
for (const line of fs.readFileSync(folded, "utf8").split("\n")) {
	if (!line) continue;
	const i = line.lastIndexOf(" "), w = Number(line.slice(i + 1)), stack = line.slice(0, i).split(";");
	total += w;
	for (const f of new Set(stack)) {
		if (!frames.has(f)) frames.set(f, { total: 0, self: 0 });
		frames.get(f).total += w;
	}
	frames.get(stack.at(-1)).self += w;
}

// speedscope's formatPercent
function percent(p) {
	if (p === 100) return "100%";
	if (p > 99) return ">99%";
	if (p < 0.01) return "<0.01%";
	if (p < 1) return `${p.toFixed(2)}%`;
	if (p < 10) return `${p.toFixed(1)}%`;
	return `${p.toFixed(0)}%`;
}

// A time cell in microseconds, and how precise speedscope printed it (it
// rounds "41.04s" but cuts "11:40").
function micros(text) {
	let m = /^(\d+):(\d\d)$/.exec(text);
	if (m) return [(Number(m[1]) * 60 + Number(m[2])) * 1e6, 1e6];
	m = /^([\d.]+)(ns|µs|ms|s)$/.exec(text);
	assert.ok(m, `time ${JSON.stringify(text)}`);
	const unit = { ns: 1e-3, "µs": 1, ms: 1e3, s: 1e6 }[m[2]];
	return [Number(m[1]) * unit, unit * 10 ** -(m[1].split(".")[1] || "").length];
}

const { server, base } = await serve((name) => (name in files ? path.join(outdir, name) : null));

const browser = await launch();

// Opens a file, checks it loaded cleanly with the title; returns the
// Sandwich table's rows as [total, self, name] texts.
async function open(name, wantTitle) {
	const { page, warnings } = await openInSpeedscope(browser, base, name, wantTitle, { width: 1400, height: 1400 });
	await page.getByText("Sandwich").click();
	const rows = page.locator("tr:visible", { has: page.locator("td") });
	await rows.first().waitFor();
	const cells = await Promise.all((await rows.all()).map((r) => r.locator("td").allInnerTexts()));
	assert.deepEqual(warnings, [], `${name}: speedscope's importer warned`);
	await page.close();
	return cells.map((c) => c.map((s) => s.trim()));
}

// The rows shown must be the frames with the largest self weights, each
// with its own numbers.
function checkRows(name, rows, cell) {
	assert.ok(rows.length >= Math.min(10, frames.size), `${name}: only ${rows.length} rows`);
	const selfs = [...frames.values()].map((f) => f.self).sort((a, b) => b - a);
	const shown = [];
	for (const [tot, self, sym] of rows) {
		const want = frames.get(sym);
		assert.ok(want, `${name}: unknown frame ${sym}`);
		cell(`${sym} total`, tot, want.total);
		cell(`${sym} self`, self, want.self);
		shown.push(want.self);
	}
	assert.deepEqual(shown, selfs.slice(0, shown.length), `${name}: rows should be the largest self weights`);
}

function unitless(name) {
	return (what, text, want) => {
		const m = /^([\d,]+) \((.*)\)$/.exec(text);
		assert.ok(m, `${name}: ${what}: ${JSON.stringify(text)}`);
		assert.equal(Number(m[1].replaceAll(",", "")), want, `${name}: ${what}`);
		assert.equal(m[2], percent((100 * want) / total), `${name}: ${what} percentage`);
	};
}

function timed(name) {
	return (what, text, want) => {
		const m = /^(\S+) \((.*)\)$/.exec(text);
		assert.ok(m, `${name}: ${what}: ${JSON.stringify(text)}`);
		const [us, precision] = micros(m[1]);
		assert.ok(Math.abs(us - want) <= precision + 1e-6 * want, `${name}: ${what}: ${m[1]} for ${want} us`);
		assert.equal(m[2], percent((100 * want) / total), `${name}: ${what} percentage`);
	};
}

await runChecks(browser, server, async () => {
	for (const name of ["sampled.speedscope.json", "evented.speedscope.json"])
		checkRows(name, await open(name, title), unitless(name));
	checkRows("busy.trace.json", await open("busy.trace.json", "busy.trace.json"), timed("busy.trace.json"));
	const top = [...frames].sort(([, a], [, b]) => b.self - a.self)[0];
	console.log(`ok: speedscope loaded ember's sampled and evented speedscope JSON and its Chrome trace ` +
		`of ${path.basename(folded)}: ${frames.size} frames, total ${total}, top ${top[0]} self ${top[1].self}, ` +
		`Sandwich weights as in the input`);
});
