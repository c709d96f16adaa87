// harness.mjs - what the end-to-end tests share: speedscope's static build
// served on 127.0.0.1, headless Chromium, and the run that reports a
// failure, closes both and sets the exit status.
import { chromium } from "playwright-core";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const speedscopeRelease = path.join(path.dirname(fileURLToPath(import.meta.url)),
	"node_modules/speedscope/dist/release");

const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".json": "application/json",
	".wasm": "application/wasm", ".png": "image/png", ".woff2": "font/woff2", ".ico": "image/x-icon" };

// Serves each requested file name from fileFor(name), or else from
// speedscope's build. Returns the server and its base URL.
// Never hang: not on a dialog, a stuck page or a stuck program. The test
// fails after seconds, whatever it is waiting for.
export function watchdog(seconds) {
	setTimeout(() => {
		console.error(`FAIL: timed out after ${seconds} s`);
		process.exit(1);
	}, seconds * 1000).unref();
}

export async function serve(fileFor) {
	const server = http.createServer((req, res) => {
		const name = path.basename(decodeURIComponent(new URL(req.url, "http://x").pathname));
		const file = fileFor(name) || path.join(speedscopeRelease, name);
		fs.readFile(file, (err, data) => {
			res.writeHead(err ? 404 : 200, { "Content-Type": types[path.extname(name)] || "application/octet-stream" });
			res.end(err ? undefined : data);
		});
	});
	await new Promise((r) => server.listen(0, "127.0.0.1", r));
	return { server, base: `http://127.0.0.1:${server.address().port}/` };
}

export function launch() {
	return chromium.launch({
		executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
		args: ["--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync"],
	});
}

// Opens base + name in speedscope and waits until it has loaded the
// profile (the title is "<wantTitle> - speedscope") with no dialog (an
// "Unrecognized format!" alert is dismissed, or the page would hang), no
// page error and no error screen. Returns the page, its page errors and the warnings
// speedscope's importer logs (it warns, and goes on, on a B/E mismatch or a
// span left open); Chromium's own WebGL (SwiftShader) messages are not
// speedscope's.
export async function openInSpeedscope(browser, base, name, wantTitle, viewport) {
	const page = await browser.newPage({ viewport });
	page.setDefaultTimeout(10_000);
	const errors = [], dialogs = [], warnings = [];
	page.on("pageerror", (e) => errors.push(String(e)));
	page.on("dialog", (d) => {
		dialogs.push(`${d.type()}: ${d.message()}`);
		d.dismiss().catch(() => {});
	});
	page.on("console", (m) => {
		if ((m.type() === "warning" || m.type() === "error") && !/WebGL|GL Driver|GPU stall/i.test(m.text()))
			warnings.push(m.text());
	});
	await page.goto(`${base}index.html#profileURL=${encodeURIComponent(base + name)}`);
	const errorScreen = page.getByText("Something went wrong.");
	for (const end = Date.now() + 30_000; ;) {
		if ((await page.title()).endsWith(" - speedscope") || dialogs.length || errors.length ||
			(await errorScreen.count()) || Date.now() > end)
			break;
		await page.waitForTimeout(100);
	}
	assert.deepEqual(dialogs, [], `${name}: dialogs`);
	assert.deepEqual(errors, [], `${name}: page errors`);
	assert.equal(await errorScreen.count(), 0, `${name}: speedscope shows its error screen`);
	assert.equal(await page.title(), `${wantTitle} - speedscope`, `${name}: title (profile not loaded?)`);
	return { page, warnings, errors };
}

// Runs the checks, then closes the browser and the server and exits: 1 if
// a check failed (after saying which), 0 otherwise.
export async function runChecks(browser, server, checks) {
	let failed = false;
	try {
		await checks();
	} catch (e) {
		failed = true;
		console.error("FAIL:", e.message);
	} finally {
		await browser.close();
		server.close();
	}
	process.exit(failed ? 1 : 0);
}

// The profile list, opened from the toolbar's "(1/N)" counter: asserts N
// (`want`, said as `what`) and gives its rows (a locator) and each row's
// cells: index, name, weight.
export async function profileRows(page, want, what) {
	const counter = page.getByText(/^\(\d+\/\d+\)$/);
	assert.equal(await counter.textContent(), `(1/${want})`, what);
	await counter.click();
	const rows = page.locator("tr:visible", { has: page.locator("td") });
	await rows.first().waitFor();
	const cells = await Promise.all((await rows.all()).map((r) => r.locator("td").allInnerTexts()));
	return { rows, cells };
}
