// harness.mjs - what the end-to-end tests share: speedscope's static build
// served on 127.0.0.1, headless Chromium, and the run that reports a
// failure, closes both and sets the exit status.
import { chromium } from "playwright-core";
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
