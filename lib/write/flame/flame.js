// flame.js - the interactive part of ember's flame graph SVGs.
//
// Embedded into every SVG after a line "var cfg = {...};" written by
// flame.c (name type, font metrics, padding, orientation, total). It keeps
// flamegraph.pl's interface: the ids #details #search #ignorecase #unzoom
// #matched #frames, the classes "parent" and "hide", the _orig_x /
// _orig_width / _orig_fill attributes, Ctrl-F/F3 and Ctrl-I, and the URL
// state ?s=REGEX and ?x=X&y=Y. Beyond it: percentages relative to the
// zoomed frame, in the details line and in "Matched:", Escape to reset,
// and labels fitted by arithmetic instead of measuring text, which keeps
// zooming fast on graphs with tens of thousands of frames.
"use strict";
var details, searchbtn, icbtn, unzoombtn, matchedtxt, frames;
var ignorecase = false, searchterm = null, zoomed = null;

function init(evt) {
	details = document.getElementById("details").firstChild;
	searchbtn = document.getElementById("search");
	icbtn = document.getElementById("ignorecase");
	unzoombtn = document.getElementById("unzoom");
	matchedtxt = document.getElementById("matched");
	frames = document.getElementById("frames");
	var params = get_params();
	if (params.x && params.y) {
		var el = document.querySelector('#frames rect[x="' + params.x + '"][y="' + params.y + '"]');
		if (el) zoom(find_group(el));
	}
	if (params.s) search(params.s);
}

// ---- URL state
function get_params() {
	var params = {};
	var pairs = window.location.search.substring(1).split("&");
	for (var i = 0; i < pairs.length; i++) {
		var kv = pairs[i].split("=");
		if (kv.length < 2 || !kv[0] || !kv[1]) continue;
		try { params[kv[0]] = decodeURIComponent(kv[1]); } catch (e) {}
	}
	return params;
}
function set_params(params) {
	var q = [];
	for (var k in params) q.push(k + "=" + encodeURIComponent(params[k]));
	var url = window.location.href.split("?")[0] + (q.length ? "?" + q.join("&") : "");
	try { history.replaceState(null, null, url); } catch (e) {}
}
function update_param(key, value) {
	var params = get_params();
	if (value === null) delete params[key]; else params[key] = value;
	set_params(params);
}

// ---- frames
function find_group(node) {
	while (node && node.parentNode) {
		if (node.parentNode.id === "frames") return node;
		node = node.parentNode;
	}
	return null;
}
function rect_of(g) { return g.querySelector("rect"); }
function title_of(g) { var t = g.querySelector("title"); return t ? t.textContent : ""; }
function name_of(g) {
	var t = title_of(g), i = t.lastIndexOf(" (");
	return i >= 0 ? t.substring(0, i) : t;
}
function weight_of(g) { return parseFloat(g.getAttribute("ember:w")) || 0; }
function orig(e, attr) {
	var o = e.getAttribute("_orig_" + attr);
	return parseFloat(o !== null ? o : e.getAttribute(attr));
}
function orig_save(e, attr, val) {
	if (e.getAttribute("_orig_" + attr) !== null || e.getAttribute(attr) === null) return;
	e.setAttribute("_orig_" + attr, val === undefined ? e.getAttribute(attr) : val);
}
function orig_load(e, attr) {
	var o = e.getAttribute("_orig_" + attr);
	if (o === null) return;
	e.setAttribute(attr, o);
	e.removeAttribute("_orig_" + attr);
}

// A label that fits: as many characters as the width allows, the last two
// replaced by "..", as flamegraph.pl writes them.
function update_text(g) {
	var r = rect_of(g), t = g.querySelector("text");
	if (!r || !t) return;
	var x = parseFloat(r.getAttribute("x")), w = parseFloat(r.getAttribute("width"));
	t.setAttribute("x", (x + 3).toFixed(2));
	var chars = Math.floor(w / (cfg.fontsize * cfg.fontwidth));
	var name = name_of(g).replace(/_\[[kwij]\]$/, "");
	if (chars < 3) { t.textContent = ""; return; }
	var cps = Array.from(name);
	t.textContent = chars < cps.length ? cps.slice(0, chars - 2).join("") + ".." : name;
}

// ---- zoom
function is_upstack(ey, y) { return cfg.inverted ? ey < y : ey > y; }

function zoom(g) {
	if (!g) return;
	unzoom(true);
	var r = rect_of(g);
	var xmin = orig(r, "x"), w = orig(r, "width"), y = parseFloat(r.getAttribute("y"));
	var full = cfg.width - 2 * cfg.xpad, ratio = full / w, fudge = 0.0001;
	var all = frames.children;
	for (var i = 0; i < all.length; i++) {
		var e = all[i], er = rect_of(e);
		var ex = orig(er, "x"), ew = orig(er, "width"), ey = parseFloat(er.getAttribute("y"));
		if (is_upstack(ey, y)) {
			if (ex <= xmin + fudge && ex + ew + fudge >= xmin + w) {
				e.classList.add("parent");
				orig_save(er, "x");
				orig_save(er, "width");
				er.setAttribute("x", cfg.xpad.toFixed(1));
				er.setAttribute("width", full.toFixed(1));
				update_text(e);
			} else {
				e.classList.add("hide");
			}
		} else if (ex < xmin - fudge || ex + fudge >= xmin + w) {
			e.classList.add("hide");
		} else {
			orig_save(er, "x");
			orig_save(er, "width");
			er.setAttribute("x", ((ex - xmin) * ratio + cfg.xpad).toFixed(1));
			er.setAttribute("width", (ew * ratio).toFixed(1));
			update_text(e);
		}
	}
	zoomed = g;
	unzoombtn.classList.remove("hide");
	search();
}

function unzoom(quiet) {
	zoomed = null;
	unzoombtn.classList.add("hide");
	var all = frames.children;
	for (var i = 0; i < all.length; i++) {
		var e = all[i], er = rect_of(e);
		if (!e.classList.contains("parent") && !e.classList.contains("hide") &&
		    er.getAttribute("_orig_x") === null) continue;
		e.classList.remove("parent");
		e.classList.remove("hide");
		orig_load(er, "x");
		orig_load(er, "width");
		update_text(e);
	}
	if (!quiet) search();
}

function clearzoom() {
	unzoom();
	var params = get_params();
	delete params.x;
	delete params.y;
	set_params(params);
}

// ---- percentages
function pct(part, whole) {
	var p = whole > 0 ? 100 * part / whole : 0;
	return (p === 100 ? "100" : p.toFixed(2)) + "%";
}
function describe(g) {
	var text = cfg.nametype + " " + title_of(g);
	if (zoomed && zoomed !== g && !g.classList.contains("parent"))
		text += ": " + pct(weight_of(g), weight_of(zoomed)) + " of " + name_of(zoomed);
	return text;
}

// ---- search
function toggle_ignorecase() {
	ignorecase = !ignorecase;
	if (ignorecase) icbtn.classList.add("show"); else icbtn.classList.remove("show");
	reset_search();
	search();
}

function reset_search() {
	var rects = frames.querySelectorAll("rect");
	for (var i = 0; i < rects.length; i++) orig_load(rects[i], "fill");
}

function clear_search() {
	reset_search();
	searchterm = null;
	searchbtn.classList.remove("show");
	searchbtn.firstChild.nodeValue = "Search";
	matchedtxt.classList.add("hide");
	matchedtxt.firstChild.nodeValue = " ";
	update_param("s", null);
}

function search_prompt() {
	if (searchterm !== null) { clear_search(); return; }
	var term = prompt("Enter a search term (regexp allowed, eg: ^ext4_)" +
		(ignorecase ? ", ignoring case" : "") + "\nPress Ctrl-i to toggle case sensitivity", "");
	if (term) search(term);
}

// Sum of the weights of matching frames, without counting a match inside
// another match twice; within the zoomed frame when zoomed.
function matched_weight(matches, lo, hi) {
	matches.sort(function (a, b) { return a.x - b.x || b.w - a.w; });
	var sum = 0, end = -Infinity, fudge = 0.0001;
	for (var i = 0; i < matches.length; i++) {
		var m = matches[i];
		if (m.x < lo - fudge || m.x + fudge >= hi) continue;
		if (m.x + fudge >= end) {
			sum += m.n;
			end = m.x + m.w;
		}
	}
	return sum;
}

function search(term) {
	if (term) searchterm = term;
	if (searchterm === null) return;
	var re;
	try { re = new RegExp(searchterm, ignorecase ? "i" : ""); } catch (e) {
		matchedtxt.classList.remove("hide");
		matchedtxt.firstChild.nodeValue = "Invalid regexp";
		return;
	}
	reset_search();
	var all = frames.children, matches = [];
	for (var i = 0; i < all.length; i++) {
		var e = all[i];
		if (!re.test(name_of(e))) continue;
		var r = rect_of(e);
		orig_save(r, "fill");
		r.setAttribute("fill", cfg.searchcolor);
		matches.push({x: orig(r, "x"), w: orig(r, "width"), n: weight_of(e)});
	}
	update_param("s", searchterm);
	searchbtn.classList.add("show");
	searchbtn.firstChild.nodeValue = "Reset Search";
	var text = "Matched: " + pct(matched_weight(matches, -Infinity, Infinity), cfg.total);
	if (zoomed) {
		var zr = rect_of(zoomed), zx = orig(zr, "x");
		text = "Matched: " + pct(matched_weight(matches, zx, zx + orig(zr, "width")),
			weight_of(zoomed)) + " of " + name_of(zoomed) + ", " +
			text.substring(9) + " of all";
	}
	matchedtxt.classList.remove("hide");
	matchedtxt.firstChild.nodeValue = text;
}

// ---- events
window.addEventListener("click", function (e) {
	var g = find_group(e.target);
	if (g) {
		if (g.nodeName === "a" && !e.ctrlKey) return; // a --nameattr link
		e.preventDefault();
		var r = rect_of(g);
		if (orig(r, "width") >= cfg.width - 2 * cfg.xpad - 0.05) {
			clearzoom(); // a full-width frame: nothing to zoom into
			return;
		}
		zoom(g);
		var params = get_params();
		params.x = r.getAttribute("_orig_x");
		params.y = r.getAttribute("y");
		set_params(params);
	} else if (e.target.id === "unzoom") {
		clearzoom();
	} else if (e.target.id === "search") {
		search_prompt();
	} else if (e.target.id === "ignorecase") {
		toggle_ignorecase();
	}
}, false);
window.addEventListener("mouseover", function (e) {
	var g = find_group(e.target);
	if (g) details.nodeValue = describe(g);
}, false);
window.addEventListener("mouseout", function (e) {
	if (find_group(e.target)) details.nodeValue = " ";
}, false);
window.addEventListener("keydown", function (e) {
	if (e.keyCode === 114 || (e.keyCode === 70 && (e.ctrlKey || e.metaKey))) {
		e.preventDefault();
		search_prompt();
	} else if (e.keyCode === 73 && (e.ctrlKey || e.metaKey)) {
		e.preventDefault();
		toggle_ignorecase();
	} else if (e.keyCode === 27) {
		if (searchterm !== null) clear_search(); else if (zoomed) clearzoom();
	}
}, false);
