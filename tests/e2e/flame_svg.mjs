// flame_svg.mjs - ember's flame graph SVG, used in headless Chromium: hover
// details, click to zoom (and zoom-relative percentages), reset, regexp
// search with "Matched:", the ignore-case toggle, and the ?s= / ?x=&y= URL
// state.
//
// usage: node flame_svg.mjs EMBER FOLDED
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import assert from "node:assert/strict";
import { launch, runChecks } from "./harness.mjs";

const [ember, folded] = process.argv.slice(2);
const svg = execFileSync(ember, ["flamegraph", "--title", "e2e", folded]);

// What the search should find: the share of samples whose stack has a frame
// matching the regexp (a stack counts once however many frames match).
function expectedMatch(re, within) {
	let total = 0, hit = 0;
	for (const line of fs.readFileSync(folded, "utf8").split("\n")) {
		if (!line) continue;
		const i = line.lastIndexOf(" ");
		const frames = line.slice(0, i).split(";"), n = Number(line.slice(i + 1));
		const at = within ? frames.indexOf(within) : 0;
		if (at < 0) continue;
		total += n;
		if (frames.slice(within ? at + 1 : 0).some((f) => re.test(f))) hit += n;
	}
	const p = (100 * hit) / total;
	return p === 100 ? "100%" : p.toFixed(2) + "%";
}

// The weight of the first frames path a;b as a share of path a.
function expectedShare(path, of) {
	let part = 0, whole = 0;
	for (const line of fs.readFileSync(folded, "utf8").split("\n")) {
		if (!line) continue;
		const i = line.lastIndexOf(" "), stack = ";" + line.slice(0, i) + ";";
		const n = Number(line.slice(i + 1));
		if (stack.includes(";" + of + ";")) whole += n;
		if (stack.includes(";" + path + ";")) part += n;
	}
	const p = (100 * part) / whole;
	return p === 100 ? "100%" : p.toFixed(2) + "%";
}

const server = http.createServer((req, res) => {
	res.writeHead(200, { "Content-Type": "image/svg+xml" });
	res.end(svg);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${server.address().port}/flame.svg`;

const browser = await launch();
await runChecks(browser, server, async () => {
	const page = await browser.newPage();
	const errors = [];
	page.on("pageerror", (e) => errors.push(String(e)));
	await page.goto(url);

	const frame = (name) => page.locator("#frames > g", { has: page.locator(`title:text-matches("^${name} \\\\(")`) }).first();
	const rectAttr = (name, attr) => frame(name).locator("rect").getAttribute(attr);
	const text = (id) => page.locator("#" + id).textContent();

	// hover: the details line
	await frame("parse_lines").hover();
	assert.match(await text("details"), /^Function: parse_lines \([\d,]+ samples, [\d.]+%\)$/);

	// click: zoom into sort_numbers
	const before = { x: await rectAttr("sort_numbers", "x"), w: await rectAttr("sort_numbers", "width") };
	await frame("sort_numbers").locator("rect").click();
	assert.equal(await rectAttr("sort_numbers", "x"), "10.0");
	assert.equal(await rectAttr("sort_numbers", "width"), "1180.0");
	assert.ok((await frame("main").getAttribute("class")).includes("parent"));
	assert.ok((await frame("parse_lines").getAttribute("class")).includes("hide"));
	assert.equal(await page.locator("#unzoom").getAttribute("class"), "");
	assert.match(page.url(), new RegExp(`x=${before.x.replace(".", "\\.")}&y=\\d`));
	// percentages relative to the zoomed frame
	await frame("quicksort").hover();
	assert.match(await text("details"), new RegExp(`^Function: quicksort \\(.*\\): ` +
		`${expectedShare("sort_numbers;quicksort", "sort_numbers")} of sort_numbers$`));

	// search while zoomed: relative to the zoom, and to all
	page.once("dialog", (d) => d.accept("^qu.*sort$"));
	await page.locator("#search").click();
	assert.equal(await text("matched"), `Matched: ${expectedMatch(/^qu.*sort$/, "sort_numbers")} of sort_numbers, ` +
		`${expectedMatch(/^qu.*sort$/)} of all`);
	assert.equal(await frame("quicksort").locator("rect").getAttribute("fill"), "rgb(230,0,230)");
	assert.equal(await text("search"), "Reset Search");

	// reset zoom: everything back where it was, the search kept
	await page.locator("#unzoom").click();
	assert.equal(await rectAttr("sort_numbers", "x"), before.x);
	assert.equal(await rectAttr("sort_numbers", "width"), before.w);
	assert.equal(await page.locator("#frames > g.hide").count(), 0);
	assert.equal(await text("matched"), `Matched: ${expectedMatch(/^qu.*sort$/)}`);
	assert.doesNotMatch(page.url(), /x=/);

	// reset search, then search again ignoring case
	await page.locator("#search").click();
	assert.equal(await text("search"), "Search");
	assert.notEqual(await frame("quicksort").locator("rect").getAttribute("fill"), "rgb(230,0,230)");
	await page.locator("#ignorecase").click();
	page.once("dialog", (d) => d.accept("PARSE_"));
	await page.locator("#search").click();
	assert.equal(await text("matched"), `Matched: ${expectedMatch(/parse_/i)}`);

	// the URL keeps the state: a fresh page restores search and zoom
	const page2 = await browser.newPage();
	page2.on("pageerror", (e) => errors.push(String(e)));
	await page2.goto(`${url}?s=format_number&x=${before.x}&y=${await rectAttr("sort_numbers", "y")}`);
	assert.equal(await page2.locator("#matched").textContent(),
		`Matched: 0.00% of sort_numbers, ${expectedMatch(/format_number/)} of all`);
	assert.equal(await page2.locator("#frames > g", { has: page2.locator('title:text-matches("^sort_numbers ")') })
		.locator("rect").getAttribute("width"), "1180.0");
	assert.deepEqual(errors, []);
	console.log("ok: hover, zoom, zoom-relative %, search, Matched, reset, ignore case, URL state");
});
