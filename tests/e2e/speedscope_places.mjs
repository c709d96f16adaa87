// speedscope_places.mjs - ember's speedscope export carries where functions
// are: `convert --to speedscope` of a pprof profile with files and lines,
// opened in speedscope (npm speedscope, headless Chromium), shows a frame's
// file:line in the flame chart's hover tooltip, as speedscope does for its
// own pprof import.
//
// usage: node speedscope_places.mjs EMBER PPROF OUTDIR
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";
import { launch, openInSpeedscope, runChecks, serve, watchdog } from "./harness.mjs";

const [ember, pprof, outdir] = process.argv.slice(2);
if (!outdir) {
	console.error("usage: node speedscope_places.mjs EMBER PPROF OUTDIR");
	process.exit(2);
}
watchdog(100);

fs.mkdirSync(outdir, { recursive: true });
const name = "places.speedscope.json", title = "ember e2e: places";
execFileSync(ember, ["convert", "--to", "speedscope", "--name", title, pprof, "-o", path.join(outdir, name)],
	{ stdio: "inherit", timeout: 60_000 });
// the root frame's place, from the file ember wrote
const doc = JSON.parse(fs.readFileSync(path.join(outdir, name), "utf8"));
const withPlace = doc.shared.frames.filter((f) => f.file && f.line);
assert.ok(withPlace.length > 0, "the export should carry files and lines");

const { server, base } = await serve((n) => (n === name ? path.join(outdir, name) : null));
const browser = await launch();
await runChecks(browser, server, async () => {
	const { page, warnings } = await openInSpeedscope(browser, base, name, title, { width: 1200, height: 800 });
	assert.deepEqual(warnings, [], "speedscope's importer warned");
	// hover down the middle of the flame chart until a tooltip names a place
	const places = new Set(withPlace.map((f) => `${f.file}:${f.line}`));
	let seen = null;
	for (let y = 20; y < 800 && !seen; y += 8) {
		await page.mouse.move(600, y);
		const text = await page.evaluate(() => document.body.innerText);
		seen = [...places].find((p) => text.includes(p)) || null;
	}
	assert.ok(seen, `no tooltip showed any of ${[...places].slice(0, 3).join(", ")}`);
	console.log(`ok: speedscope shows ${seen} in its tooltip (${withPlace.length} frames with a place)`);
});
