// SPDX-License-Identifier: MIT
// strata view's speed in headless Chromium: first paint from the command's start, then zoom from the whole trace to 1 us and pan.
// usage: node bench_view.mjs STRATA TRACE   (run by tests/view/bench.sh; prints one result per line)
// STRATA_VIEW_ARGS: more arguments for strata view (--no-cache, --wait), split on spaces.
// STRATA_BENCH_PAINT_ONLY=1: the first paints only, no zoom.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const [strata, trace] = process.argv.slice(2);
const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
	args: ['--no-sandbox', '--disable-gpu'],
});
const page = await browser.newPage({ viewport: { width: 1600, height: 900 }, bypassCSP: true });
// the browser is up first, as a person's is: the clock starts with the command
const t0 = performance.now();
const more = (process.env.STRATA_VIEW_ARGS || '').split(' ').filter((a) => a);
const view = spawn(strata, ['view', trace, ...more], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((ok) => createInterface({ input: view.stdout }).once('line', ok));
const tUrl = performance.now();
await page.goto(url);
// the coarse paint while the model is built (docs/view.md, "Serve at once"),
// or the full one when the server had the model before the URL
await page.waitForFunction(() => window.strataView && (window.strataView.ready ||
	(window.strataView.building && window.strataView.building.drawn.overview > 0)), null,
	{ timeout: 600000 });
const tCoarse = performance.now();
await page.waitForFunction(() => window.strataView && window.strataView.ready, null,
	{ timeout: 600000 });
const tPaint = performance.now();
const q = (a, p) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(p * a.length))];
const say = (name, a) => console.log(`${name}: n=${a.length} p50=${q(a, 0.5).toFixed(1)} ms ` +
	`p95=${q(a, 0.95).toFixed(1)} ms max=${Math.max(...a).toFixed(1)} ms`);
console.log(`server ready (URL printed): ${(tUrl - t0).toFixed(0)} ms`);
console.log(`first paint (coarse) from the start of strata view: ${(tCoarse - t0).toFixed(0)} ms`);
console.log(`first paint (full) from the start of strata view: ${(tPaint - t0).toFixed(0)} ms`);
// the page's first window is the whole trace (its overview's, the same one)
console.log(`whole-trace window, request to parsed answer: ${(await page.evaluate(
	() => window.strataView.fetchMs)).toFixed(1)} ms`);
const cache = await page.evaluate(() => fetch('api/summary').then((r) => r.json()).then((s) => s.cache));
console.log(`model cache: ${cache}`);
// The whole-trace window at the page's width, 20 times in each form,
// alternated, away from the page's own work: request to parsed answer,
// and the parse alone (JSON.parse of the text, web/wire.js of the bytes).
const forms = await page.evaluate(async () => {
	const { decodeWindow } = await import('./wire.js').catch(() => ({}));
	const s = await (await fetch('api/summary')).json();
	const url = `api/window?t0=0&t1=${s.span_ns}&w=${Math.max(1, document.getElementById('timeline').clientWidth - 170)}`;
	const bin = decodeWindow && (await fetch(`${url}&fmt=bin`)).headers.get('Content-Type') ===
		'application/octet-stream';
	const out = { json: [], bin: [], parseJson: [], parseBin: [], bytes: {} };
	for (let i = 0; i < 20; i++) {
		let t = performance.now();
		const text = await (await fetch(url)).text();
		const a = performance.now();
		JSON.parse(text);
		out.json.push(performance.now() - t);
		out.parseJson.push(performance.now() - a);
		out.bytes.json = text.length;
		if (!bin)
			continue;
		t = performance.now();
		const buf = await (await fetch(`${url}&fmt=bin`)).arrayBuffer();
		const b = performance.now();
		decodeWindow(buf);
		out.bin.push(performance.now() - t);
		out.parseBin.push(performance.now() - b);
		out.bytes.bin = buf.byteLength;
	}
	return out;
});
const med = (a) => a.length ? [...a].sort((x, y) => x - y)[a.length >> 1].toFixed(1) : '-';
console.log(`whole-trace window x20, request to parsed: JSON ${med(forms.json)} ms ` +
	`(${forms.bytes.json} B, parse ${med(forms.parseJson)} ms), binary ${med(forms.bin)} ms ` +
	`(${forms.bytes.bin ?? '-'} B, decode ${med(forms.parseBin)} ms)`);
// strata view started again on the same trace and opened in the same
// tab: the browser's renderer for the page's site is up (a new tab, as
// above, starts one: Chromium's site isolation), the model is the
// cache's once the first open wrote it.
async function reopen() {
	const t = performance.now();
	const again = spawn(strata, ['view', trace, ...more], { stdio: ['ignore', 'pipe', 'ignore'] });
	const u = await new Promise((ok) => createInterface({ input: again.stdout }).once('line', ok));
	await page.goto(u);
	await page.waitForFunction(() => window.strataView && window.strataView.ready, null,
		{ timeout: 600000 });
	console.log(`first paint (full), strata view started again, same tab: ${
		(performance.now() - t).toFixed(0)} ms`);
	again.kill('SIGINT');
}
if (process.env.STRATA_BENCH_PAINT_ONLY) { // the first paints only
	view.kill('SIGINT');
	await new Promise((ok) => view.once('exit', ok));
	await reopen();
	await browser.close();
	process.exit(0);
}

// Each step: the page's request to parsed answer, its input to pixels, the
// server's own time for the window (its Server-Timing header, from the
// page's Resource Timing) and the canvas's draw.
async function step(key) {
	const n = await page.evaluate(() => window.strataView.answers);
	await page.keyboard.press(key);
	await page.waitForFunction((k) => window.strataView.answers > k, n, { timeout: 60000 });
	return page.evaluate(() => {
		const h = window.strataView;
		const w = performance.getEntriesByType('resource').filter((r) =>
			/api\/window\?/.test(r.name) && !/marks=only/.test(r.name)).pop();
		const st = w && w.serverTiming.find((t) => t.name === 'answer');
		performance.clearResourceTimings();
		return [h.fetchMs, h.inputMs, h.view.t1 - h.view.t0, st ? st.duration : NaN, h.drawMs];
	});
}
await page.locator('#timeline').focus();
await page.evaluate(() => performance.clearResourceTimings());
const fetchMs = [], inputMs = [], serverMs = [], drawMs = [];
const take = ([f, i, , sv, d]) => {
	fetchMs.push(f);
	inputMs.push(i);
	if (!Number.isNaN(sv))
		serverMs.push(sv);
	drawMs.push(d);
};
let span = Infinity;
while (span > 1000) { // W: x0.7 a step, down to the 1 us the page allows
	const r = await step('w');
	take(r);
	if (r[2] === span)
		break;
	span = r[2];
}
for (let k = 0; k < 10; k++) // S back out part of the way, then pan
	take(await step(k < 5 ? 's' : 'd'));
say('zoom/pan, server answer (Server-Timing)', serverMs);
say('zoom/pan, request to parsed answer', fetchMs);
say('zoom/pan, key to pixels', inputMs);
say('zoom/pan, the canvas drawn', drawMs);
// The list (issue 20: "scrolls at 60 frames/s through the whole trace"):
// wheel steps of 5 rows every 16 ms for 3 s, each frame's time taken by
// requestAnimationFrame meanwhile, the rows it moved; then the scroll bar
// dragged to ten places over the whole trace, each until its rows show.
await page.locator('#tab-list').click();
const scrolled = await page.evaluate(async () => {
	const box = document.getElementById('list-box'), h = window.strataView;
	const row = document.querySelector('#list tbody tr');
	const dy = 5 * (row && row.offsetHeight > 4 ? row.offsetHeight : 18);
	// the tab just shown: its rows once it has placed them
	for (const t = performance.now(); !h.listAt && performance.now() - t < 10000;)
		await new Promise((ok) => setTimeout(ok, 10));
	await new Promise((ok) => setTimeout(ok, 300));
	const from = h.listAt ? h.listAt.top : 0, frames = [];
	let on = true;
	const tick = (t) => { frames.push(t); if (on) requestAnimationFrame(tick); };
	requestAnimationFrame(tick);
	const t0 = performance.now();
	while (performance.now() - t0 < 3000) {
		box.dispatchEvent(new WheelEvent('wheel', { deltaY: dy, bubbles: true, cancelable: true }));
		await new Promise((ok) => setTimeout(ok, 16));
	}
	on = false;
	// the list's own queue of scrolls done, then where it is
	for (const t = performance.now(); performance.now() - t < 2000;)
		await new Promise((ok) => setTimeout(ok, 50));
	const to = h.listAt ? h.listAt.top : 0;
	const gaps = frames.slice(1).map((t, i) => t - frames[i]);
	const jumps = [], bar = document.getElementById('list-bar');
	for (let k = 0; bar && k < 10; k++) {
		const before = h.listFirst, t = performance.now();
		bar.scrollTop = (bar.scrollHeight - bar.clientHeight) * (k * 0.1 + 0.05);
		bar.dispatchEvent(new Event('scroll'));
		while (h.listFirst === before && performance.now() - t < 10000)
			await new Promise((ok) => setTimeout(ok, 5));
		jumps.push(performance.now() - t);
	}
	return { gaps, rows: to - from,
		total: h.listAt ? h.listAt.total : 0, jumps };
});
const slow = scrolled.gaps.filter((g) => g > 1000 / 60 * 1.5).length;
console.log(`list, wheel for 3 s: ${scrolled.gaps.length} frames, ` +
	`${(1000 / q(scrolled.gaps, 0.5)).toFixed(1)} frames/s at the median gap, p95 gap ` +
	`${q(scrolled.gaps, 0.95).toFixed(1)} ms, ${slow} gaps over 25 ms; ${scrolled.rows} rows ` +
	`scrolled of ${scrolled.total}`);
if (scrolled.jumps.length)
	say('list, scroll bar dragged over the whole trace, to rows shown', scrolled.jumps);
const heap = await page.evaluate(() => performance.memory ? performance.memory.usedJSHeapSize : 0);
console.log(`JS heap: ${(heap / 1048576).toFixed(1)} MiB`);
const status = readFileSync(`/proc/${view.pid}/status`, 'utf8');
const kb = (k) => Number(status.match(new RegExp(`${k}:\\s+(\\d+)`))[1]) / 1024;
// file pages of the cache's mapping count in RSS while mapped, but the
// kernel may drop them: RssAnon is what the server holds for itself
console.log(`server peak RSS: ${kb('VmHWM').toFixed(0)} MiB; at the end: ${kb('VmRSS').toFixed(0)} MiB ` +
	`(anon ${kb('RssAnon').toFixed(0)}, file ${kb('RssFile').toFixed(0)})`);
view.kill('SIGINT');
await new Promise((ok) => view.once('exit', ok));
await reopen();
await browser.close();
