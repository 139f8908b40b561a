// SPDX-License-Identifier: MIT
// strata view in Debian's headless Chromium: rows and marks drawn, zoom, a click on an event, the list synced both ways.
// usage: node browser_test.mjs URL SCREENSHOT [demo]   (the URL strata view
// printed; the trace is tests/view/gen_view.py's: 2 CPUs, threads 300-302 and
// the kernel-only 400, states as its docstring says; with `demo`, the demo's
// trace (make demo), zoomed in and shown with a tooltip for the README; with
// `flows N`, messages.c's trace of N messages: their arrows drawn, a
// tooltip, hidden by the toggle, in the SVG export; with `vlist PRINTED`,
// a trace of 250 000 events and print's JSON of it: the virtualised list;
// with `chain`, spin.c sampled: a sample's call chain in the details)
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [url, shot, mode, nmsgs] = process.argv.slice(2);
const failures = [];
const check = (ok, what) => {
	if (!ok) {
		failures.push(what);
		console.error(`view-browser: FAIL: ${what}`);
	}
};

// Pixels of an arrow's colour in a 5x5 square at (x, y) of the timeline:
// 'pink' the wakeups' (#d81b60), 'green' the messages' (#00897b).
function arrowPixels(page, x, y, colour) {
	return page.evaluate(([x, y, colour]) => {
		const c = document.getElementById('timeline'), dpr = window.devicePixelRatio || 1;
		const d = c.getContext('2d').getImageData(Math.round((x - 2) * dpr),
			Math.round((y - 2) * dpr), 5, 5).data;
		const is = colour === 'green' ?
			(r, g, b) => r < 90 && g > 100 && b > 80 && g > r + 40 :
			(r, g, b) => r > 150 && g < 120 && b > 60 && b < 170;
		let n = 0;
		for (let i = 0; i < d.length; i += 4)
			n += is(d[i], d[i + 1], d[i + 2]);
		return n;
	}, [x, y, colour]);
}

// messages.c's trace: n messages and the two lone ends, each an arrow
// from the producer's row to a consumer's (a lone end from the window's
// edge, on its own row), green, with a tooltip, hidden by the arrows box
// and back, and in the SVG export.
async function flows(page, hook, errors, n) {
	await page.locator('#timeline').focus();
	await page.keyboard.press('0');
	await page.waitForTimeout(500);
	let h = await hook();
	const fl = h.drawn.flowList || [];
	check(h.drawn.flows === n + 2 && h.drawn.flowsLeft === 0 &&
		fl.every((f) => f.from[0] === 'thread' && f.to[0] === 'thread'),
		`flows drawn: ${h.drawn.flows} (${n} messages + 2 lone ends), ` +
		`${JSON.stringify(fl.slice(0, 3))}`);
	check(fl.filter((f) => f.ts < 0).length === 1 && fl.filter((f) => f.tr < 0).length === 1,
		`the lone ends: ${JSON.stringify(fl.filter((f) => f.ts < 0 || f.tr < 0))}`);
	// a message between two rows: its middle is green
	const f = fl.find((k) => k.ts >= 0 && k.tr >= 0 && Math.abs(k.y1 - k.y0) > 20) ||
		{ x0: 0, y0: 0, x1: 0, y1: 0 };
	const mx = (f.x0 + f.x1) / 2, my = (f.y0 + f.y1) / 2;
	check(await arrowPixels(page, mx, my, 'green') > 0, `a message arrow's pixels near (${mx}, ${my})`);
	const box = await page.locator('#timeline').boundingBox();
	await page.mouse.move(box.x + mx, box.y + my);
	try {
		await page.waitForFunction(() => window.strataView.tip &&
			window.strataView.tip.kind === 'flow', null, { timeout: 5000 });
	} catch {
		check(false, 'no tooltip over a message arrow');
	}
	const t = await page.textContent('#tip');
	check(/message/.test(t) && new RegExp(`key${f.key}`).test(t.replace(/\s/g, '')) &&
		/latency/.test(t), `the message arrow's tooltip: ${t}`);
	await page.mouse.move(box.x + box.width / 2, box.y - 60);
	await page.click('#arrows');
	await page.waitForTimeout(300);
	h = await hook();
	check(h.drawn.flows === 0 && await arrowPixels(page, mx, my, 'green') === 0,
		`messages hidden by the toggle: ${h.drawn.flows} drawn`);
	await page.click('#arrows');
	await page.waitForTimeout(300);
	h = await hook();
	check(h.drawn.flows === n + 2, `messages shown again: ${h.drawn.flows}`);
	const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 10000 }),
		page.click('#export')]);
	const text = readFileSync(await dl.path(), 'utf8');
	check(text.includes('stroke="#00897b"'), 'SVG: the message arrows\' strokes');
	check(errors.length === 0, `flows: page errors: ${errors.join('; ')}`);
}

// The virtualised list over browser.sh's recording of 250 000 events,
// against strata print's (the file `printed`, print's JSON lines): Home
// and the first rows; the mouse wheel from the first event to the last,
// every step's rows print's at the list's position; End, the arrows and
// the page keys moving the selection and the timeline centred on it;
// a mark clicked in the timeline scrolling the list to its event; the
// scroll bar dragged to the middle; a filter and End under it.
async function vlist(page, errors, printed) {
	const want = readFileSync(printed, 'utf8').trim().split('\n').map((l) => {
		const e = JSON.parse(l);
		return [Math.round(e.time * 1e9), e.tid, e.event];
	});
	const n = want.length;
	check(n >= 200000, `vlist: ${n} events printed, 200 000 wanted`);
	const state = () => page.evaluate(() => {
		const h = window.strataView;
		return { at: h.listAt, sel: h.selected, view: h.view, span: h.summary.span_ns };
	});
	// the rows on the page as print gives them: [ns, tid, name]
	const shown = () => page.$$eval('#list tbody tr', (trs) => trs.map((tr) => {
		const c = [...tr.cells].map((x) => x.textContent);
		return [Math.round(Number(c[0]) * 1e9), Number(c[2]), c[3]];
	}));
	const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
	const rowsAt = async (what) => {
		const s = await state(), rows = await shown();
		const w = want.slice(s.at.top, s.at.top + rows.length);
		check(rows.length > 5 && same(rows, w), `vlist: ${what}: rows at ${s.at.top}: ` +
			`${JSON.stringify(rows.slice(0, 2))}, print ${JSON.stringify(w.slice(0, 2))}`);
		return s;
	};
	// the list moved (its first row's position changed, or the selection)
	const moved = (prev) => page.waitForFunction((p) => {
		const h = window.strataView;
		return h.listAt && JSON.stringify([h.listAt.top, h.selected && h.selected.offset,
			h.selected && h.selected.stream]) !== p;
	}, prev, { timeout: 20000 });
	const key = async (k) => {
		const h = await page.evaluate(() => { const h = window.strataView;
			return JSON.stringify([h.listAt.top, h.selected && h.selected.offset,
				h.selected && h.selected.stream]); });
		await page.keyboard.press(k);
		await moved(h).catch(() => {});
		await page.waitForTimeout(300); // the timeline follows
		return state();
	};
	const centred = (s, what) => check(s.sel && Math.abs((s.view.t0 + s.view.t1) / 2 - s.sel.ts) < 2 ||
		s.view.t0 === 0 || s.view.t1 === s.span,
		`vlist: ${what}: the timeline at ${JSON.stringify(s.view)}, the event at ${s.sel.ts}`);
	const selIs = (s, i, what) => {
		check(s.sel && s.sel.ts === want[i][0] && s.sel.tid === want[i][1] &&
			s.sel.name === want[i][2], `vlist: ${what}: selected ` +
			`${s.sel && JSON.stringify([s.sel.ts, s.sel.tid, s.sel.name])}, print's ${i}: ${want[i]}`);
		centred(s, what);
	};

	await page.focus('#list-box');
	let s = await key('Home');
	selIs(s, 0, 'Home');
	s = await rowsAt('Home');
	check(s.at.start && s.at.top === 0 && s.at.total === n, `vlist: Home: ${JSON.stringify(s.at)}`);

	// the wheel, 1000 rows a step, from the first event to the last
	const box = await page.locator('#list-box').boundingBox();
	const rowH = await page.$eval('#list tbody tr', (tr) => tr.offsetHeight);
	await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
	let steps = 0, bad = 0;
	const t0 = Date.now();
	while (!s.at.end && steps < n / 1000 + 10) {
		const top = s.at.top;
		await page.mouse.wheel(0, 1000 * rowH);
		await page.waitForFunction((top) => window.strataView.listAt.top !== top, top,
			{ timeout: 20000 }).catch(() => {});
		s = await state();
		const rows = await shown();
		if (!same(rows, want.slice(s.at.top, s.at.top + rows.length)) ||
		    (!s.at.end && s.at.top !== top + 1000))
			bad++;
		steps++;
	}
	check(bad === 0, `vlist: the wheel: ${bad} of ${steps} steps not print's rows there`);
	const last = await shown();
	check(s.at.end && same(last.at(-1), want[n - 1]),
		`vlist: the wheel's end: ${JSON.stringify(last.at(-1))}, print's last ${want[n - 1]}`);
	console.log(`view-browser vlist: ${steps} wheel steps to the last of ${n} events, ` +
		`${Date.now() - t0} ms`);

	// keys: the selection moves, the timeline follows
	s = await key('End');
	selIs(s, n - 1, 'End');
	const rows = (await shown()).length;
	s = await key('ArrowUp');
	s = await key('ArrowUp');
	s = await key('ArrowUp');
	selIs(s, n - 4, 'End, 3 x up');
	s = await key('PageUp');
	selIs(s, n - 4 - rows, 'page up');
	await rowsAt('page up');
	s = await key('Home');
	s = await key('ArrowDown');
	s = await key('ArrowDown');
	selIs(s, 2, 'Home, 2 x down');
	s = await key('PageDown');
	selIs(s, 2 + rows, 'page down');
	check(await page.$$eval('#list tr.selected', (t) => t.length) === 1,
		'vlist: the selected row drawn as such');

	// the scroll bar to its middle: the list at the middle event (from
	// its start, where the keys above left it)
	const prev = (await state()).at.top;
	const frac = await page.evaluate(() => {
		const b = document.getElementById('list-bar'), max = b.scrollHeight - b.clientHeight;
		b.scrollTop = Math.round(max / 2);
		return b.scrollTop / max;
	});
	await page.waitForFunction((p) => window.strataView.listAt.top !== p, prev,
		{ timeout: 10000 }).catch(() => {});
	s = await rowsAt('the bar at its middle');
	check(s.at.top === Math.floor(frac * n), `vlist: the bar at ${frac}: row ${s.at.top} of ${n}`);

	// the timeline to the list: a mark clicked in a narrow view; the list
	// placed there by time (its position estimated: see where the
	// selected row is among print's events)
	const mid = want[Math.floor(n / 3)][0];
	await page.evaluate((t) => window.strataView.go(t - 2000, t + 2000), mid);
	await page.waitForTimeout(800);
	const h = await page.evaluate(() => window.strataView.drawn);
	const m = h.markList.find((k) => k.row === 'thread');
	check(m, `vlist: a thread mark in a 4 us view: ${JSON.stringify(h.markList.slice(0, 5))}`);
	if (m) {
		const tb = await page.locator('#timeline').boundingBox();
		await page.mouse.click(tb.x + m.x, tb.y + m.y);
		await page.waitForFunction((ts) => window.strataView.selected &&
			window.strataView.selected.ts === ts && document.querySelector('#list tr.selected'),
		m.ts, { timeout: 10000 }).catch(() => {});
		s = await state();
		const sel = await page.$$eval('#list tbody tr', (trs) =>
			trs.findIndex((tr) => tr.classList.contains('selected')));
		const i = want.findIndex((w) => w[0] === m.ts && w[1] === s.sel.tid);
		const rows = await shown();
		check(s.sel && s.sel.ts === m.ts && sel >= 0 &&
			same(rows, want.slice(i - sel, i - sel + rows.length)),
			`vlist: a mark at ${m.ts} clicked: selected row ${sel}, ` +
			`rows ${JSON.stringify(rows.slice(0, 2))}, print's event ${i}`);
	}
	// a filter: only its events, End its last
	await page.fill('#f-ev', 'work:job_end');
	await page.click('#filters button:not([type])');
	await page.waitForFunction(() => window.strataView.filter && window.strataView.filter.ev,
		null, { timeout: 10000 });
	await page.waitForTimeout(800);
	const f = await shown();
	check(f.length > 5 && f.every((r) => r[2] === 'work:job_end'), `vlist: filtered: ${f.slice(0, 3)}`);
	await page.focus('#list-box');
	s = await key('End');
	const lastJob = want.findLastIndex((w) => w[2] === 'work:job_end');
	selIs(s, lastJob, 'End under a filter');
	check(errors.length === 0, `vlist: page errors: ${errors.join('; ')}`);
}

// tests/profile/spin.c sampled with --call-graph fp (browser.sh): a
// sample selected in the list (Home), then one clicked in the timeline,
// shows its call chain in the details, symbolized; the one clicked, in
// the middle of the run, names f, g or h and worker. The first sample
// may fall in the program's start (the loader's mmap, under load), so
// it is held to the details showing its chain, not to spin's frames.
async function chain(page, errors) {
	const shown = async (what, inSpin) => {
		await page.waitForFunction(() => window.strataView.chain, null, { timeout: 10000 })
			.catch(() => {});
		const c = await page.evaluate(() => window.strataView.chain);
		const text = await page.$$eval('#chain li', (li) => li.map((x) => x.textContent));
		const at = c ? c.findIndex((f) => /^[fgh]\+0x[0-9a-f]+ \(spin\.c:\d+\)$/.test(f)) : -1;
		const named = c && c.some((f) => /^\S+\+0x[0-9a-f]+ \(\S+:\d+\)$/.test(f));
		check(c && named && (!inSpin || (at >= 0 && /^worker\+0x/.test(c[at + 1]))) &&
			JSON.stringify(text) === JSON.stringify(c), `chain: ${what}: ${JSON.stringify(text)}`);
	};
	await page.focus('#list-box');
	await page.keyboard.press('Home');
	await page.waitForFunction(() => window.strataView.selected &&
		window.strataView.selected.name, null, { timeout: 10000 });
	await shown('the first sample, Home in the list', false);
	await page.evaluate(() => { window.strataView.chain = null; });
	const h = await page.evaluate(() => window.strataView.drawn);
	const m = h.markList[Math.floor(h.markList.length / 2)];
	check(m, 'chain: a sample\'s mark');
	if (m) {
		const box = await page.locator('#timeline').boundingBox();
		await page.mouse.click(box.x + m.x, box.y + m.y);
		await shown(`a mark clicked at ${m.ts}`, true);
	}
	check(errors.length === 0, `chain: page errors: ${errors.join('; ')}`);
}

const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
	args: ['--no-sandbox', '--disable-gpu'],
});
try {
	// the page's CSP forbids eval, which playwright's waitForFunction uses
	const page = await browser.newPage({ viewport: { width: 1200, height: 800 }, bypassCSP: true });
	const errors = [], outside = [];
	page.on('pageerror', (e) => errors.push(e.message));
	page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
	// the page must need nothing but its own server: no CDN, no fonts
	const origin = new URL(url).origin;
	await page.route('**/*', (r) => {
		if (r.request().url().startsWith(origin))
			return r.continue();
		outside.push(r.request().url());
		return r.abort();
	});
	await page.goto(url);
	const hook = () => page.evaluate(() => {
		const h = window.strataView;
		return { ready: h.ready, answers: h.answers, view: h.view, drawn: h.drawn,
			selected: h.selected, list: h.list, summary: h.summary, rows: h.rows };
	});
	await page.waitForFunction(() => window.strataView && window.strataView.ready &&
		window.strataView.list > 0, null, { timeout: 20000 });
	await page.waitForTimeout(300);
	let h = await hook();
	if (mode === 'demo') {
		// the README's picture: a few zoom steps into the middle, an
		// event selected and an interval's tooltip
		check(h.drawn.rows >= 5 && h.drawn.marks > 100, `demo: ${JSON.stringify(h.drawn).slice(0, 200)}`);
		// centred on an event of the list (a lossy recording has gaps),
		// then zoomed in around it
		await page.locator('#list tbody tr').nth(5).click();
		await page.waitForTimeout(300);
		await page.locator('#timeline').focus();
		for (let i = 0; i < 9; i++)
			await page.keyboard.press('w');
		await page.waitForTimeout(800);
		h = await hook();
		const box = await page.locator('#timeline').boundingBox();
		const m = h.drawn.markList.find((k) => k.row === 'thread');
		if (m) {
			await page.evaluate(() => { window.strataView.selected = null; });
			await page.mouse.click(box.x + m.x, box.y + m.y);
			await page.waitForTimeout(500);
		}
		const r = h.rows.find((q) => q.kind === 'thread');
		await page.mouse.move(box.x + box.width * 0.6, box.y + r.y + 12);
		await page.waitForTimeout(500);
		check(errors.length === 0, `demo: page errors: ${errors.join('; ')}`);
		await page.screenshot({ path: shot });
		await browser.close();
		console.log(`view-browser demo: ${failures.length ? 'failed' : 'ok'}`);
		process.exit(failures.length ? 1 : 0);
	}
	if (mode === 'damage') {
		// a trace whose biggest stream was cut inside a packet: the
		// summary's ranges drawn, each a red band across its CPU's
		// row (docs/view.md, "Damage and loss"), and said by the banner
		const d = h.summary.damage, bands = h.drawn.damageRanges || [];
		const px = bands.length ? await page.evaluate(([x, y]) => {
			const c = document.getElementById('timeline'), dpr = window.devicePixelRatio || 1;
			return [...c.getContext('2d').getImageData(Math.round(x * dpr), Math.round(y * dpr),
				1, 1).data];
		}, [(bands[0].x0 + bands[0].x1) / 2, bands[0].y]) : [];
		const cpus = new Set(h.rows.filter((r) => r.kind === 'cpu').map((r) => r.id));
		check(d.length >= 6 && bands.length > 0 && bands.every((b) => cpus.has(b.cpu)) &&
			px.length && px[0] > px[1] + 10 && px[0] > px[2] + 10,
			`damage: ${d.length / 6} placed, bands ${JSON.stringify(bands.slice(0, 3))}, ` +
			`a band's pixel ${px}`);
		check(/problems reading the trace/.test(await page.textContent('#banner')),
			`damage: the banner says ${await page.textContent('#banner')}`);
		check(errors.length === 0, `damage: page errors: ${errors.join('; ')}`);
		await browser.close();
		console.log(`view-browser damage: ${failures.length ? 'failed' : 'ok'}`);
		process.exit(failures.length ? 1 : 0);
	}
	if (mode === 'chain') {
		await chain(page, errors);
		await browser.close();
		console.log(`view-browser chain: ${failures.length ? 'failed' : 'ok'}`);
		process.exit(failures.length ? 1 : 0);
	}
	if (mode === 'vlist') {
		await vlist(page, errors, nmsgs);
		await browser.close();
		console.log(`view-browser vlist: ${failures.length ? 'failed' : 'ok'}`);
		process.exit(failures.length ? 1 : 0);
	}
	if (mode === 'flows') {
		await flows(page, hook, errors, Number(nmsgs));
		await browser.close();
		console.log(`view-browser flows: ${failures.length ? 'failed' : 'ok'}`);
		process.exit(failures.length ? 1 : 0);
	}
	const d = h.drawn;
	check(d.rows === 6, `rows: ${d.rows}, expected 2 CPUs + 3 threads + kworker`);
	check(d.slices >= 4, `CPU slices drawn: ${d.slices}`);
	check(d.marks >= 10, `marks drawn: ${d.marks}`);
	check(d.running >= 3, `threads' running strips drawn: ${d.running}`);
	check(d.intervals === 6, `intervals drawn: ${d.intervals} (worker-a 1, worker-b 2 nested; ` +
		'and the same three of the activity rule "jobs")');
	check(h.summary.names['301'] === 'worker-a', 'thread names from the state dump');
	check(d.damage === 0 && h.summary.damage.length === 0, 'no damage marked on a sound trace');

	// pixels: CPU 1 runs worker-b (302) from 2 to 70 ms, in its colour
	const px = await page.evaluate(() => {
		const c = document.getElementById('timeline');
		const ctx = c.getContext('2d');
		const dpr = window.devicePixelRatio || 1;
		const w = c.clientWidth - 170;
		const x = (170 + 0.03 / 0.1 * w) * dpr, y = (22 + 22 + 8) * dpr;
		return Array.from(ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data);
	});
	const want = await page.evaluate(() => {
		const s = document.createElement('canvas').getContext('2d');
		s.fillStyle = window.strataView.colour(302);
		s.fillRect(0, 0, 1, 1);
		return Array.from(s.getImageData(0, 0, 1, 1).data);
	});
	check(px.slice(0, 3).every((v, i) => Math.abs(v - want[i]) <= 2),
		`CPU 1 at 30 ms: pixel ${px}, worker-b's colour ${want}`);

	// thread states: a row for the kernel-only kworker, strips in the
	// states' colours, a legend, and per-pixel summaries when denser
	// than the pixels
	const kw = h.rows.find((r) => r.kind === 'thread' && r.id === 400);
	check(kw && /kworker/.test(kw.label), `a row for kworker (400): ${JSON.stringify(kw)}`);
	check(d.states >= 12, `state strips drawn: ${d.states}`);
	const legend = await page.locator('#legend .state').allTextContents();
	check(legend.length === 7 && legend.some((t) => /I\/O wait/.test(t)),
		`legend: ${legend.join(' | ')}`);
	const statePx = (tid, ms) => page.evaluate(([tid, ms]) => {
		const h = window.strataView, r = h.rows.find((q) => q.kind === 'thread' && q.id === tid);
		const c = document.getElementById('timeline'), dpr = window.devicePixelRatio || 1;
		const w = c.clientWidth - 170;
		const x = (170 + ms / 100 * w) * dpr, y = (r.y + 3) * dpr;
		return Array.from(c.getContext('2d').getImageData(Math.round(x), Math.round(y), 1, 1).data);
	}, [tid, ms]);
	const rgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
	const near = (px, hex) => px.slice(0, 3).every((v, i) => Math.abs(v - rgb(hex)[i]) <= 2);
	for (const [tid, ms, hex, what] of [[301, 42.5, '#ff7043', 'worker-a in I/O wait'],
		[301, 20, '#43a047', 'worker-a running'], [301, 95, '#c5e1a5', 'worker-a runnable'],
		[302, 11, '#1e88e5', 'worker-b in a system call'],
		[302, 85, '#cfd8dc', 'worker-b sleeping'], [400, 80, '#43a047', 'kworker running']]) {
		const px = await statePx(tid, ms);
		check(near(px, hex), `${what} at ${ms} ms: pixel ${px}, want ${hex}`);
	}
	// the rows' pixels come from web/raster.js: its fills, opaque and
	// blended (a mixed state's 0.55, a mark's rgba), as the canvas's own
	const blend = await page.evaluate(async () => {
		const { Raster } = await import('./raster.js');
		const out = [];
		for (const [style, alpha] of [['#43a047', 0.55], ['rgba(33,33,33,0.6)', 1],
			['hsl(200,45%,62%)', 1], ['#ff7043', 0.55]]) {
			const r = new Raster();
			r.begin(4, 0, 1, 1, 0);
			r.fillStyle = '#f0f3f5';
			r.fillRect(0, 0, 4, 1);
			r.globalAlpha = alpha;
			r.fillStyle = style;
			r.fillRect(1, 0, 2, 1);
			const c = document.createElement('canvas').getContext('2d');
			c.fillStyle = '#f0f3f5';
			c.fillRect(0, 0, 4, 1);
			c.globalAlpha = alpha;
			c.fillStyle = style;
			c.fillRect(1, 0, 2, 1);
			out.push([style, [...r.img.data.slice(4, 8)], [...c.getImageData(1, 0, 1, 1).data],
				[...r.img.data.slice(0, 4)], [...r.img.data.slice(12, 16)]]);
		}
		return out;
	});
	for (const [style, mine, canvas, left, right] of blend)
		check(mine.every((v, i) => Math.abs(v - canvas[i]) <= 2) && left.join() === right.join() &&
			left.join() === '240,243,245,255', `${style} filled by raster.js: ${mine}, ` +
			`by the canvas: ${canvas}; the pixels beside it ${left} and ${right}`);
	// the timeline draws the band its box shows, and again on a scroll:
	// the last row, scrolled to in a box 60 px high, is drawn (opaque)
	const lastRow = await page.evaluate(async () => {
		const box = document.getElementById('timeline-box'), h = window.strataView;
		const was = box.getAttribute('style');
		box.setAttribute('style', 'flex: none; height: 60px');
		window.dispatchEvent(new Event('resize'));
		// the answers the resize asked for in and drawn: only the
		// scroll itself may draw again
		await new Promise((ok) => setTimeout(ok, 600));
		const r = h.rows[h.rows.length - 1];
		box.scrollTop = r.y;
		await new Promise((ok) => setTimeout(ok, 100));
		await new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));
		const c = document.getElementById('timeline'), dpr = window.devicePixelRatio || 1;
		const px = [...c.getContext('2d').getImageData(Math.round((c.clientWidth - 3) * dpr),
			Math.round((r.y + r.h / 2) * dpr), 1, 1).data];
		box.scrollTop = 0;
		if (was === null)
			box.removeAttribute('style');
		else
			box.setAttribute('style', was);
		window.dispatchEvent(new Event('resize'));
		await new Promise((ok) => setTimeout(ok, 300));
		return { px, label: r.label, y: r.y };
	});
	check(lastRow.px[3] === 255, `the last row (${lastRow.label} at y ${lastRow.y}) drawn once ` +
		`scrolled to: pixel ${lastRow.px}`);
	const few = await page.evaluate(async () =>
		(await (await fetch('api/window?t0=0&t1=100000000&w=3')).json()).threads);
	const wb = few.find((t) => t.tid === 302).states;
	check(wb.length === 18 && wb[14] === 3 && wb[15] === 1 && wb[2] === 0,
		`3 pixels of worker-b: dominant running, running, sleeping (mixed): ${wb}`);
	{
		const r = h.rows.find((q) => q.kind === 'thread' && q.id === 301);
		const box = await page.locator('#timeline').boundingBox();
		const w = box.width - 170;
		await page.mouse.click(box.x + 170 + 0.425 * w, box.y + r.y + 3);
		await page.waitForFunction(() => window.strataView.selected &&
			window.strataView.selected.state, null, { timeout: 10000 });
		const text = await page.textContent('#details');
		check(/I\/O wait/.test(text) && /0\.040000/.test(text) && /5\.000 ms/.test(text),
			`a click on the I/O wait strip: ${text.slice(0, 200)}`);
	}

	// tooltips: hovering a mark shows its event's every field, a state
	// strip its state, start and duration, an interval its kind and duration
	{
		const box = await page.locator('#timeline').boundingBox();
		const w = box.width - 170;
		const rowY = (tid) => h.rows.find((q) => q.kind === 'thread' && q.id === tid).y;
		const tipAfter = async (x, y, kind) => {
			await page.mouse.move(box.x + x, box.y + y);
			try {
				await page.waitForFunction((k) => window.strataView.tip &&
					window.strataView.tip.kind === k &&
					!document.getElementById('tip').hidden, kind, { timeout: 5000 });
			} catch {
				check(false, `no tooltip over a ${kind}`);
			}
			return page.textContent('#tip');
		};
		const mk = h.drawn.markList.find((k) => k.row === 'thread' && k.id === 301 &&
			k.ts === 10000000);
		check(mk, 'a mark at 10 ms on worker-a');
		if (mk) {
			const t = await tipAfter(mk.x, mk.y, 'mark');
			check(/work:job_begin/.test(t) && /job.*9007199254740999/.test(t) &&
				/where.*0x7fff12345678/.test(t) && /0\.010000000 s/.test(t),
				`tooltip of the job_begin mark: ${t}`);
		}
		let t = await tipAfter(170 + 0.43 * w, rowY(301) + 3, 'state');
		check(/I\/O wait/.test(t) && /0\.040000/.test(t) && /5\.000 ms/.test(t),
			`tooltip of worker-a's I/O wait: ${t}`);
		t = await tipAfter(170 + 0.25 * w, rowY(302) + 13, 'interval');
		check(/job/.test(t) && /10\.000 ms/.test(t) && /depth\s*1/.test(t),
			`tooltip of worker-b's inner interval (20-30 ms): ${t}`);
		await page.mouse.move(box.x + box.width / 2, box.y - 60);
		await page.waitForTimeout(200);
		check(await page.locator('#tip').isHidden(), 'the tooltip goes when the pointer leaves');
		// zoomed in, an interval wider than the view: its own ends
		const a0 = await page.evaluate(() => window.strataView.answers);
		await page.locator('#timeline').focus();
		for (let i = 0; i < 3; i++)
			await page.keyboard.press('w');
		await page.waitForFunction((n) => window.strataView.answers > n, a0);
		await page.waitForTimeout(300);
		t = await tipAfter(170 + 0.5 * w, rowY(302) + 9, 'interval');
		check(/0\.005000000 s/.test(t) && /75\.000 ms/.test(t),
			`tooltip of worker-b's outer interval (5-80 ms) in a 33-67 ms view: ${t}`);
		await page.keyboard.press('0');
		await page.waitForTimeout(300);
	}

	// zoom in with W: a narrower view, and a new answer from the server
	const span0 = h.view.t1 - h.view.t0, answers0 = h.answers;
	await page.locator('#timeline').focus();
	for (let i = 0; i < 3; i++)
		await page.keyboard.press('w');
	await page.waitForFunction((n) => window.strataView.answers > n, answers0);
	await page.keyboard.press('d'); // and pan right
	await page.waitForTimeout(400);
	h = await hook();
	check(h.view.t1 - h.view.t0 < span0 * 0.5, `zoom: span ${h.view.t1 - h.view.t0} of ${span0}`);
	check(h.view.t0 > 0, 'pan: the view moved right');
	await page.keyboard.press('0');
	await page.waitForTimeout(400);

	// zoom to a selection (shift-drag), then back and forward through the
	// views by keys and buttons
	{
		const box = await page.locator('#timeline').boundingBox();
		const w = box.width - 170, y = box.y + h.rows.find((q) => q.id === 400).y + 15;
		const view = () => page.evaluate(() => window.strataView.view);
		const settle = async () => {
			await page.waitForTimeout(300);
			return view();
		};
		const whole = await view();
		await page.keyboard.down('Shift');
		await page.mouse.move(box.x + 170 + 0.2 * w, y);
		await page.mouse.down();
		await page.mouse.move(box.x + 170 + 0.3 * w, y, { steps: 4 });
		await page.mouse.move(box.x + 170 + 0.4 * w, y, { steps: 4 });
		const band = await page.evaluate(([x, y]) => {
			const c = document.getElementById('timeline'), dpr = window.devicePixelRatio || 1;
			return Array.from(c.getContext('2d').getImageData(Math.round(x * dpr),
				Math.round(y * dpr), 1, 1).data);
		}, [170 + 0.3 * w, y - box.y + 5]); // kworker's row, blank before 75 ms
		await page.mouse.up();
		await page.keyboard.up('Shift');
		const px = 100e6 / w;
		let v = await settle();
		check(Math.abs(v.t0 - 20e6) < 2 * px && Math.abs(v.t1 - 40e6) < 2 * px,
			`shift-drag from 20 to 40 ms: view ${JSON.stringify(v)}`);
		check(band[2] > band[0] + 20, `the selected range drawn as a blue band: ${band}`);
		const mk = await page.evaluate(() => window.strataView.markers || []);
		check(!mk.some((t) => Math.abs(t - 20e6) < 2 * px), `no marker from a shift-drag: ${mk}`);
		await page.locator('#timeline').focus();
		await page.keyboard.press('Backspace');
		v = await settle();
		check(v.t0 === whole.t0 && v.t1 === whole.t1, `Backspace: back to ${JSON.stringify(v)}`);
		await page.keyboard.press('Shift+Backspace');
		v = await settle();
		check(Math.abs(v.t0 - 20e6) < 2 * px, `Shift+Backspace: forward to ${JSON.stringify(v)}`);
		await page.keyboard.press('Alt+ArrowLeft');
		v = await settle();
		check(v.t1 === whole.t1, `Alt+Left: back to ${JSON.stringify(v)}`);
		await page.click('#fwd');
		v = await settle();
		const hs = await page.evaluate(() => window.strataView.history);
		check(Math.abs(v.t1 - 40e6) < 2 * px && hs.forward === 0 && hs.back >= 1,
			`the forward button: ${JSON.stringify(v)}, history ${JSON.stringify(hs)}`);
		await page.keyboard.press('w');
		await settle();
		await page.click('#back');
		v = await settle();
		check(Math.abs(v.t1 - 40e6) < 2 * px && (await page.evaluate(() =>
			window.strataView.history.forward)) === 1, `the back button: ${JSON.stringify(v)}`);
		await page.locator('#timeline').focus();
		await page.keyboard.press('0');
		await page.waitForTimeout(400);
	}

	// click a mark on worker-a's row: the event's details
	h = await hook();
	const m = h.drawn.markList.find((k) => k.row === 'thread' && k.id === 301);
	check(m, 'a mark on worker-a\'s row');
	if (m) {
		const box = await page.locator('#timeline').boundingBox();
		await page.mouse.click(box.x + m.x, box.y + m.y);
		await page.waitForFunction(() => window.strataView.selected &&
			window.strataView.selected.name, null, { timeout: 10000 });
		h = await hook();
		check(h.selected.tid === 301 && h.selected.ts === m.ts,
			`clicked ${m.ts} on 301, selected ${JSON.stringify(h.selected).slice(0, 200)}`);
		const title = await page.textContent('#detail-name');
		check(title === h.selected.name, `details show ${title}`);
		const text = await page.textContent('#details');
		check(/job/.test(text) && /worker-a/.test(text), `details: ${text.slice(0, 200)}`);
		// and the list holds it, selected
		await page.waitForSelector('#list tr.selected', { timeout: 10000 });
		const row = await page.textContent('#list tr.selected');
		check(row.includes(h.selected.name), `list row selected: ${row}`);
	}

	// a click in the list centres the timeline on that event
	const rows = page.locator('#list tbody tr');
	const n = await rows.count();
	check(n >= 10, `list rows: ${n}`);
	const pick = rows.nth(Math.min(12, n - 1));
	const t = Number((await pick.locator('td').first().textContent())) * 1e9;
	await pick.click();
	await page.waitForTimeout(500);
	h = await hook();
	const mid = (h.view.t0 + h.view.t1) / 2;
	check(Math.abs(mid - t) < 2 || h.view.t0 === 0 || h.view.t1 === h.summary.span_ns,
		`list click: view middle ${mid}, event at ${t}`);
	check(h.selected && Math.abs(h.selected.ts - t) < 2, 'list click selects the event');

	// search, on the server: an event name, then a field expression; the
	// n-th match selected, the timeline and the list moved to it
	{
		const e0 = errors.length; // the 400s asked for below are no page error
		const input = page.locator('#find');
		const searched = async (key, n) => {
			await page.evaluate(() => { window.strataView.search = null; });
			await input.press(key);
			await page.waitForFunction((n) => window.strataView.search &&
				(window.strataView.search.n === n || window.strataView.search.error ||
				 window.strataView.search.none), n, { timeout: 10000 });
			return page.evaluate(() => window.strataView.search);
		};
		await input.fill('sched_switch');
		let r;
		for (let i = 1; i <= 3; i++)
			r = await searched('Enter', i);
		check(r.n === 3 && r.match.ts === 4000000 && r.match.name === 'sched:sched_switch',
			`3rd sched_switch: ${JSON.stringify(r).slice(0, 160)}`);
		r = await searched('Shift+Enter', 2);
		check(r.n === 2 && r.match.ts === 2000000 && r.match.cpu === 1,
			`back to the 2nd: ${JSON.stringify(r).slice(0, 160)}`);
		await input.fill('next_pid == 301');
		r = await searched('Enter', 1);
		r = await searched('Enter', 2);
		check(r.n === 2 && r.match.ts === 46000000 && r.match.fields.next_pid === 301,
			`2nd switch to worker-a: ${JSON.stringify(r).slice(0, 160)}`);
		await page.waitForFunction(() => document.querySelector('#list tr.selected'), null,
			{ timeout: 10000 });
		await page.waitForTimeout(300);
		h = await hook();
		check(Math.abs((h.view.t0 + h.view.t1) / 2 - 46000000) < 2 || h.view.t1 === h.summary.span_ns,
			`the timeline moved to the match: ${JSON.stringify(h.view)}`);
		const sel = await page.textContent('#list tr.selected');
		check(/0\.046000000/.test(sel) && /sched_switch/.test(sel), `list at the match: ${sel}`);
		r = await searched('Enter', 3);
		check(r.none && r.n === 2, `no 3rd switch to worker-a: ${JSON.stringify(r).slice(0, 100)}`);
		await input.fill('nofield == 1');
		r = await searched('Enter', -1);
		const said = await page.textContent('#found');
		check(r.error && /nofield/.test(said), `a bad expression is said: ${said}`);
		const codes = await page.evaluate(async () => {
			const q = ['dir=0', 'skip=1001', 't=-5', `find=${'x'.repeat(300)}`, 'where=%01',
				'where=(', 'expr=)', 'cpus=99999', 'tids=1,,2', 'tids=-1',
				`cpus=${Array(65).fill(0).join(',')}`, 'ev=%7f'];
			return Promise.all(q.map(async (a) => (await fetch(`api/search?${a}`)).status));
		});
		check(codes.every((c) => c === 400), `absurd search arguments: ${codes}`);
		errors.splice(e0, Infinity, ...errors.slice(e0).filter((m) => !/status of 400/.test(m)));
	}

	// filters: the same events go from the marks, the list and the search
	{
		const e0 = errors.length;
		const filter = async (f) => {
			const seq = await page.evaluate(() => window.strataView.filter?.seq || 0);
			for (const [k, v] of Object.entries({ cpus: '', tids: '', ev: '', expr: '', ...f }))
				await page.fill(`#f-${k}`, v);
			const a0 = await page.evaluate(() => window.strataView.answers);
			await page.click('#filters button:not([type])');
			await page.waitForFunction(([seq, a0]) => window.strataView.filter &&
				(window.strataView.filter.error || (window.strataView.filter.seq > seq &&
				 window.strataView.answers > a0)), [seq, a0], { timeout: 10000 });
			await page.waitForTimeout(500); // the list follows 150 ms after
			return hook();
		};
		// the list's rows as [time, cpu, tid, event, description]
		const listed = () => page.$$eval('#list tbody tr', (trs) =>
			trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
		const work = [2, 5, 10, 20, 30, 50, 60, 80].map((ms) => ms * 1e6);
		await page.keyboard.press('0');
		h = await filter({ ev: 'work:*' });
		let rows = await listed();
		check(rows.length === 8 && rows.every((r) => /^work:job_/.test(r[3])),
			`events work:*: the list ${rows.length}: ${rows.slice(0, 3)}`);
		const ml = h.drawn.markList;
		check(ml.length > 0 && ml.every((k) => work.includes(k.ts)) &&
			ml.filter((k) => k.row === 'cpu').reduce((n, k) => n + k.count, 0) === 8,
			`events work:*: marks ${JSON.stringify(ml.map((k) => [k.row, k.ts, k.count]))}`);
		h = await filter({ tids: '301' });
		rows = await listed();
		check(h.drawn.rows === 3 && rows.length === 4 && rows.every((r) => r[2] === '301'),
			`thread 301: ${h.drawn.rows} rows, list ${rows}`);
		h = await filter({ cpus: '1', expr: 'job == 5' });
		rows = await listed();
		check(h.drawn.rows === 5 && rows.length === 2 && rows[0][0] === '0.020000000' &&
			rows[1][0] === '0.030000000', `cpu 1 and job == 5: ${h.drawn.rows} rows, list ${rows}`);
		check(h.drawn.markList.length > 0 && h.drawn.markList.every((k) =>
			[20e6, 30e6].includes(k.ts)), `job == 5 marks: ${JSON.stringify(h.drawn.markList)}`);
		const input = page.locator('#find');
		await input.fill('job');
		const seen = [];
		for (let i = 1; i <= 3; i++) {
			await page.evaluate(() => { window.strataView.search = null; });
			await input.press('Enter');
			await page.waitForFunction(() => window.strataView.search, null, { timeout: 10000 });
			const r = await page.evaluate(() => window.strataView.search);
			seen.push(r.none ? 'none' : r.match.ts);
		}
		check(seen.join() === '20000000,30000000,none', `search under the filter: ${seen}`);
		h = await filter({ expr: 'job ==' });
		const said = await page.textContent('#f-said');
		check(h.summary && /expr/.test(said), `a bad filter is said: ${said}`);
		h = await filter({});
		check(h.drawn.rows === 6, `no filter: ${h.drawn.rows} rows`);
		errors.splice(e0, Infinity, ...errors.slice(e0).filter((m) => !/status of 400/.test(m)));
	}

	// markers: shift-clicks place two, the time between them is shown and
	// drawn; a shift-click on one takes it away; M marks the selected event
	{
		await page.keyboard.press('0');
		await page.waitForTimeout(400);
		h = await hook();
		const box = await page.locator('#timeline').boundingBox();
		const w = box.width - 170, y = h.rows.find((q) => q.id === 400).y + 15;
		const at = (ms) => 170 + ms / 100 * w;
		await page.keyboard.down('Shift');
		await page.mouse.click(box.x + at(10), box.y + y);
		await page.mouse.click(box.x + at(46), box.y + y);
		await page.keyboard.up('Shift');
		await page.waitForTimeout(200);
		let mk = await page.evaluate(() => window.strataView.markers);
		const px = 100e6 / w; // ns a pixel
		check(mk && mk.length === 2 && Math.abs(mk[0] - 10e6) < 2 * px &&
			Math.abs(mk[1] - mk[0] - 36e6) < 2 * px, `two markers: ${mk}`);
		const said = await page.textContent('#markers');
		check(/M1→M2 3[56]\.\d{3} ms/.test(said), `the time between them: ${said}`);
		const line = await page.evaluate(([t, y]) => {
			const c = document.getElementById('timeline'), dpr = window.devicePixelRatio || 1;
			const v = window.strataView.view, w = c.clientWidth - 170;
			const x = Math.round(170 + (t - v.t0) / (v.t1 - v.t0) * w) - 1;
			return Array.from(c.getContext('2d').getImageData(Math.round(x * dpr),
				Math.round(y * dpr), 1, 1).data);
		}, [mk[1], y]);
		check(line[0] === 0x15 && line[1] === 0x65 && line[2] === 0xc0,
			`the marker's line: pixel ${line}`);
		await page.keyboard.down('Shift');
		await page.mouse.click(box.x + at(10), box.y + y);
		await page.keyboard.up('Shift');
		await page.waitForTimeout(200);
		mk = await page.evaluate(() => window.strataView.markers);
		check(mk.length === 1 && Math.abs(mk[0] - 46e6) < 2 * px, `one taken away: ${mk}`);
		await page.locator('#list tbody tr').nth(3).click();
		await page.waitForTimeout(300);
		const sel = await page.evaluate(() => window.strataView.selected);
		await page.locator('#timeline').focus();
		await page.keyboard.press('m');
		await page.waitForTimeout(200);
		mk = await page.evaluate(() => window.strataView.markers);
		check(sel && mk.includes(sel.ts), `M at the selected event ${sel && sel.ts}: ${mk}`);
	}

	// wakeup arrows: from the waker's row (idle on CPU 0, CPU 1) to the
	// wakee's when it next ran, a tooltip, hidden by the toggle
	{
		await page.locator('#timeline').focus();
		await page.keyboard.press('0');
		await page.waitForTimeout(500);
		h = await hook();
		const al = h.drawn.arrowList || [];
		check(h.drawn.arrows === 2 && al.length === 2 &&
			al[0].from.join() === 'cpu,0' && al[0].to.join() === 'thread,301' &&
			al[0].t === 45000010 && al[0].run === 46000000 &&
			al[1].from.join() === 'cpu,1' && al[1].to.join() === 'thread,400' &&
			al[1].t === 75000000 && al[1].run === 76000000,
			`wakeup arrows: ${JSON.stringify(al)}`);
		const a = al[1] || { x0: 0, y0: 0, x1: 0, y1: 0 };
		const mx = (a.x0 + a.x1) / 2, my = (a.y0 + a.y1) / 2;
		const red = await arrowPixels(page, mx, my, 'pink');
		check(red > 0, `the arrow's pixels near (${mx}, ${my}): ${red}`);
		const box = await page.locator('#timeline').boundingBox();
		await page.mouse.move(box.x + mx, box.y + my);
		try {
			await page.waitForFunction(() => window.strataView.tip &&
				window.strataView.tip.kind === 'arrow', null, { timeout: 5000 });
		} catch {
			check(false, 'no tooltip over an arrow');
		}
		const t = await page.textContent('#tip');
		check(/wakeup/.test(t) && /kworker 400/.test(t) && /idle on CPU 1/.test(t) &&
			/1\.000 ms/.test(t), `the arrow's tooltip: ${t}`);
		await page.mouse.move(box.x + box.width / 2, box.y - 60);
		await page.click('#arrows');
		await page.waitForTimeout(200);
		h = await hook();
		check(h.drawn.arrows === 0, `arrows hidden by the toggle: ${h.drawn.arrows}`);
		await page.click('#arrows');
		await page.waitForTimeout(200);
		h = await hook();
		check(h.drawn.arrows === 2, `arrows shown again: ${h.drawn.arrows}`);
	}

	// process rows: each process's header above its threads; a click on
	// its name collapses it into one summary row of its threads' marks,
	// C and Shift+C by keyboard; the menu sorts by events or by pid/tid
	{
		await page.locator('#timeline').focus();
		await page.keyboard.press('0');
		await page.waitForTimeout(400);
		h = await hook();
		const order = (rows) => rows.map((r) => `${r.kind}:${r.id}`).join();
		check(order(h.rows) === 'cpu:0,cpu:1,proc:300,thread:300,thread:301,thread:302,' +
			'proc:400,thread:400', `rows grouped by process: ${order(h.rows)}`);
		const byId = order(h.rows);
		const p300 = h.rows.find((r) => r.kind === 'proc' && r.id === 300);
		check(p300 && /server 300/.test(p300.label) && /3 threads/.test(p300.label) &&
			h.rows.filter((r) => r.pid === 300).length === 3,
			`process 300's header: ${JSON.stringify(p300)}`);
		const box = await page.locator('#timeline').boundingBox();
		const rowsNow = () => page.evaluate(() => window.strataView.rows);
		await page.mouse.click(box.x + 40, box.y + p300.y + p300.h / 2);
		await page.waitForTimeout(300);
		h = await hook();
		const shut = h.rows.find((r) => r.kind === 'proc' && r.id === 300);
		check(order(h.rows) === 'cpu:0,cpu:1,proc:300,proc:400,thread:400' && shut.collapsed &&
			/▸/.test(shut.label), `process 300 collapsed by a click: ${order(h.rows)}`);
		// its summary: the three threads' marks on the one row, each
		// mark its thread's; the running strips' green drawn there
		const on = h.drawn.markList.filter((m) => m.row === 'proc' && m.id === 300);
		const tids = new Set(on.map((m) => m.tid));
		check(h.drawn.summaries === 3 && h.drawn.rows === 3 && tids.has(301) && tids.has(302),
			`the summary row: ${h.drawn.summaries} threads, marks of ${[...tids]}`);
		const green = await page.evaluate((y) => {
			const c = document.getElementById('timeline'), dpr = window.devicePixelRatio || 1;
			const w = c.clientWidth - 170;
			const d = c.getContext('2d').getImageData(Math.round((170 + 0.2 * w) * dpr),
				Math.round((y + 3) * dpr), Math.round(0.2 * w * dpr), 1).data;
			let n = 0;
			for (let i = 0; i < d.length; i += 4)
				n += d[i] < 120 && d[i + 1] > 120 && d[i + 2] < 120;
			return n;
		}, shut.y);
		check(green > 0, `the summary row's running pixels: ${green}`);
		// a click on a summary mark finds that thread's event
		const m = on.find((q) => q.tid === 302) || on[0];
		if (m) {
			await page.evaluate(() => { window.strataView.selected = null; });
			await page.mouse.click(box.x + m.x, box.y + m.y);
			await page.waitForFunction(() => window.strataView.selected &&
				window.strataView.selected.tid, null, { timeout: 5000 }).catch(() => {});
			const sel = await page.evaluate(() => window.strataView.selected);
			check(sel && sel.tid === m.tid && sel.ts === m.ts,
				`a summary mark's event: ${JSON.stringify(sel)}, mark ${JSON.stringify(m)}`);
		}
		// C over kworker's thread row: its process; Shift+C: all
		await page.mouse.move(box.x + 300, box.y + h.rows.find((r) => r.id === 400 &&
			r.kind === 'thread').y + 5);
		await page.keyboard.press('c');
		await page.waitForTimeout(200);
		check(order(await rowsNow()) === 'cpu:0,cpu:1,proc:300,proc:400',
			`C collapses kworker's process: ${order(await rowsNow())}`);
		await page.keyboard.press('Shift+C');
		await page.waitForTimeout(200);
		check(order(await rowsNow()) === 'cpu:0,cpu:1,proc:300,thread:300,thread:301,' +
			'thread:302,proc:400,thread:400', `Shift+C expands all: ${order(await rowsNow())}`);
		await page.keyboard.press('Shift+C');
		await page.waitForTimeout(200);
		check(order(await rowsNow()) === 'cpu:0,cpu:1,proc:300,proc:400',
			`Shift+C collapses all: ${order(await rowsNow())}`);
		await page.keyboard.press('Shift+C');
		await page.waitForTimeout(200);
		// sorted by the trace's events: most first, processes by their
		// threads' sum
		const ev = new Map(h.summary.threads.map((t) => [t.tid, t.events]));
		const want = (count) => {
			const th = (pid) => h.summary.threads.filter((t) => t.pid === pid)
				.sort((a, b) => count(b.tid) - count(a.tid) || a.tid - b.tid);
			const sum = (pid) => th(pid).reduce((n, t) => n + count(t.tid), 0);
			return 'cpu:0,cpu:1,' + [300, 400].sort((a, b) => sum(b) - sum(a) || a - b)
				.map((pid) => [`proc:${pid}`, ...th(pid).map((t) => `thread:${t.tid}`)]).join();
		};
		await page.selectOption('#rows-by', 'events');
		await page.waitForTimeout(300);
		check(order(await rowsNow()) === want((tid) => ev.get(tid)) &&
			want((tid) => ev.get(tid)) !== byId,
			`sorted by events ${JSON.stringify([...ev])}: ${order(await rowsNow())}`);
		// by the view's events: 45-100 ms, where kworker's and worker-a's
		// are (the window's marks, from the server)
		await page.evaluate(() => { window.strataView.answers = 0; });
		await page.selectOption('#rows-by', 'view');
		const v = { t0: 45e6, t1: 100e6 };
		const win = await page.evaluate(async (q) => (await fetch(
			`api/window?t0=${q.t0}&t1=${q.t1}&w=500`)).json(), v);
		const inView = new Map(win.threads.map((t) => [t.tid,
			t.marks.filter((_, i) => i % 5 === 2).reduce((a, b) => a + b, 0)]));
		await page.evaluate(() => { window.strataView.answers = 0; });
		await page.evaluate((q) => window.strataView.go(q.t0, q.t1), v);
		await page.waitForFunction(() => window.strataView.answers > 0, null, { timeout: 5000 });
		await page.waitForTimeout(300);
		check(order(await rowsNow()) === want((tid) => inView.get(tid) || 0) &&
			want((tid) => inView.get(tid) || 0) !== want((tid) => ev.get(tid)),
			`sorted by the view's events ${JSON.stringify([...inView])}: ` +
			`${order(await rowsNow())}`);
		await page.selectOption('#rows-by', 'id');
		await page.waitForTimeout(200);
		check(order(await rowsNow()) === byId, `back to pid, tid: ${order(await rowsNow())}`);
		await page.keyboard.press('0');
		await page.waitForTimeout(300);
	}

	// the activity rule of browser.sh (jobs paired by their job field):
	// its intervals listed longest first, then by start; a click zooms
	{
		await page.locator('#timeline').focus();
		await page.keyboard.press('0');
		await page.waitForTimeout(300);
		const listed = async (act) => {
			await page.evaluate(() => { window.strataView.intervals = null; });
			await act();
			await page.waitForFunction(() => window.strataView.intervals, null,
				{ timeout: 10000 });
			await page.waitForTimeout(200);
			return page.evaluate(() => window.strataView.intervals);
		};
		const jobs = h.summary.kinds.indexOf('jobs');
		check(jobs >= 0 && h.summary.activities.includes(jobs),
			`the rule's kind: ${h.summary.kinds}, ${h.summary.activities}`);
		let a = await listed(() => page.click('#tab-act'));
		check(a.kind === jobs && a.intervals.map((iv) => iv.dur).join() ===
			'75000000,40000000,10000000' && a.intervals[1].tid === 301,
			`activities, longest first: ${JSON.stringify(a)}`);
		const rows = await page.$$eval('#act-table tbody tr', (trs) =>
			trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
		check(rows.length === 3 && rows[0][1] === '75.000 ms' && /worker-b 302/.test(rows[0][2]),
			`the activities' rows: ${JSON.stringify(rows)}`);
		a = await listed(() => page.click('#act-table th[data-by="1"]'));
		check(a.intervals.map((iv) => iv.begin).join() === '5000000,10000000,20000000',
			`activities by start: ${JSON.stringify(a.intervals)}`);
		await page.locator('#act-table tbody tr').nth(1).click();
		await page.waitForTimeout(400);
		const v = await page.evaluate(() => window.strataView.view);
		check(Math.abs(v.t0 - 6e6) < 1e4 && Math.abs(v.t1 - 54e6) < 1e4,
			`a click on worker-a's job zooms to it: ${JSON.stringify(v)}`);
		await page.click('#tab-list');
		await page.locator('#timeline').focus();
		await page.keyboard.press('0');
		await page.waitForTimeout(300);
	}

	// an activity rule typed in the tab: a bad one said (the server's
	// parser), a good one listed longest first and by start, as the
	// command line's are; per thread, worker-b's second job nests (depth 1)
	{
		await page.locator('#timeline').focus();
		await page.keyboard.press('0');
		await page.waitForTimeout(300);
		const e0 = errors.length; // the 400s asked for below are no page error
		await page.evaluate(() => { window.strataView.intervals = null; });
		await page.click('#tab-act');
		await page.waitForFunction(() => window.strataView.intervals, null, { timeout: 10000 });
		const typed = async (rule) => {
			await page.evaluate(() => { window.strataView.intervals = null; });
			await page.fill('#act-rule', rule);
			await page.press('#act-rule', 'Enter');
			await page.waitForFunction(() => window.strataView.intervals, null,
				{ timeout: 10000 });
			await page.waitForTimeout(200);
			return page.evaluate(() => window.strataView.intervals);
		};
		let a = await typed('jobs');
		let said = await page.textContent('#act-rule-said');
		check(a.error && /not NAME=BEGIN\.\.END\[,by=FIELD\]/.test(said),
			`a bad typed rule said: ${said}`);
		a = await typed('j=work:job_begin..work:job_end,by=nope');
		said = await page.textContent('#act-rule-said');
		check(a.error && /no field 'nope'/.test(said), `a rule on a missing field: ${said}`);
		a = await typed('perthread=work:job_begin..work:job_end');
		said = await page.textContent('#act-rule-said');
		check(!a.error && said === '' && a.kinds.join() === 'perthread' &&
			a.intervals.map((iv) => iv.dur).join() === '75000000,40000000,10000000' &&
			a.intervals.map((iv) => iv.depth).join() === '0,0,1',
			`a typed rule, longest first: ${JSON.stringify(a)} ${said}`);
		const opt = await page.$eval('#act-kind', (s) => s.selectedOptions[0].textContent);
		check(opt === 'typed: perthread', `the tab's kind: ${opt}`);
		const rows = await page.$$eval('#act-table tbody tr', (trs) =>
			trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
		check(rows.length === 3 && rows[0][1] === '75.000 ms' && rows[2][3] === '1',
			`the typed rule's rows: ${JSON.stringify(rows)}`);
		await page.evaluate(() => { window.strataView.intervals = null; });
		await page.click('#act-table th[data-by="1"]');
		await page.waitForFunction(() => window.strataView.intervals, null, { timeout: 10000 });
		a = await page.evaluate(() => window.strataView.intervals);
		check(a.intervals.map((iv) => iv.begin).join() === '5000000,10000000,20000000',
			`the typed rule by start: ${JSON.stringify(a.intervals)}`);
		// the typed rule's intervals drawn on the thread rows, as the
		// command line's are: three bars, worker-b's two (one nested),
		// each in the typed kind's colour over the same jobs' bars of
		// the command line's rule
		await page.waitForFunction(() => window.strataView.drawn.typed === 3, null,
			{ timeout: 10000 }).catch(() => {});
		const tv = await page.evaluate(() => {
			const h = window.strataView, d = h.drawn, c = document.getElementById('timeline');
			const dpr = window.devicePixelRatio || 1, ctx = c.getContext('2d');
			const want = document.createElement('canvas').getContext('2d');
			const kind = h.summary.kinds.length; // the first typed rule's
			want.fillStyle = `hsl(${(kind * 83 + 200) % 360},45%,62%)`;
			want.fillRect(0, 0, 1, 1);
			const px = (x, y) => [...ctx.getImageData(Math.round(x * dpr),
				Math.round(y * dpr), 1, 1).data.slice(0, 3)].join();
			const top = d.typedList.filter((t) => t.y === Math.min(...d.typedList
				.filter((u) => u.tid === t.tid).map((u) => u.y)));
			return { n: d.typed, tids: d.typedList.map((t) => t.tid).sort().join(),
				want: [...want.getImageData(0, 0, 1, 1).data.slice(0, 3)].join(),
				got: top.map((t) => px(t.x0 + 2, t.y + 1)) };
		});
		check(tv.n === 3 && tv.tids === '301,302,302' && tv.got.every((g) => g === tv.want),
			`the typed rule drawn on the rows: ${JSON.stringify(tv)}`);
		// and in the statistics' menu: its durations' histogram
		await page.click('#tab-stats');
		await page.evaluate(() => { window.strataView.stats = null; });
		await page.selectOption('#st-kind', 'r0');
		await page.waitForFunction(() => window.strataView.stats?.durations, null,
			{ timeout: 10000 }).catch(() => {});
		const du = await page.evaluate(() => window.strataView.stats?.durations);
		const durText = await page.textContent('#stats');
		check(du && du.count === 3 && du.min === 10000000 && du.max === 75000000 &&
			du.hist.filter((_, i) => i % 3 === 2).reduce((x, y) => x + y, 0) === 3 &&
			/3 intervals/.test(durText),
			`the typed rule's durations in the statistics: ${JSON.stringify(du)}`);
		await page.click('#tab-act');
		// two rules, each interval listed with its rule
		a = await typed('x=work:job_begin..work:job_end;y=work:job_begin..work:job_end,by=job');
		const cells = await page.$$eval('#act-table tbody tr', (trs) =>
			trs.map((tr) => tr.cells[4] && tr.cells[4].textContent));
		check(a.kinds.join() === 'x,y' && a.intervals.length === 6 &&
			cells.filter((c) => c === 'x').length === 3 && cells.filter((c) => c === 'y').length === 3,
			`two typed rules: ${JSON.stringify(cells)}`);
		// the server's bounds: five rules, a long one
		const st = await page.evaluate(async () => {
			const r5 = await fetch(`api/activity?rules=${encodeURIComponent(
				Array(5).fill('x=work:*..work:*').join(';'))}`);
			const rl = await fetch(`api/activity?rules=x=${'a'.repeat(300)}..b`);
			return [r5.status, (await r5.json()).error, rl.status, (await rl.json()).error];
		});
		check(st[0] === 400 && /at most 4 rules/.test(st[1]) && st[2] === 400 &&
			/longer than 256/.test(st[3]), `typed rules' bounds: ${st}`);
		errors.splice(e0, Infinity, ...errors.slice(e0).filter((m) => !/status of 400/.test(m)));
		await page.click('#tab-list');
		await page.locator('#timeline').focus();
	}

	// statistics of the view: counts per name, CPU and thread, durations
	// of the chosen interval kind, under the filter as everywhere else
	{
		await page.locator('#timeline').focus();
		await page.keyboard.press('0');
		const stats = async (act) => {
			await page.evaluate(() => { window.strataView.stats = null; });
			await act();
			await page.waitForFunction(() => window.strataView.stats, null, { timeout: 10000 });
			await page.waitForTimeout(200);
			return page.evaluate(() => window.strataView.stats);
		};
		let st = await stats(() => page.click('#tab-stats'));
		const by = (list, k) => Object.fromEntries(list.map((x) => [x[k], x.count]));
		check(st.exact && st.events === 23 && by(st.names, 'name')['sched:sched_switch'] === 9 &&
			by(st.names, 'name')['work:job_begin'] === 4 && by(st.cpus, 'cpu')[0] === 12 &&
			by(st.cpus, 'cpu')[1] === 11 && by(st.threads, 'tid')[302] === 7 &&
			by(st.threads, 'tid')[301] === 4 && by(st.threads, 'tid')[300] === 4 &&
			by(st.threads, 'tid')[400] === 1, `statistics of the whole trace (a thread's ` +
			`events and the kernel's run for it): ${JSON.stringify(st)}`);
		// the kernel's events on the row of the thread they ran for
		// (FKT's super-trace): worker-b's system call and switch out
		// among its own events, kworker's one switch out; idle's on no
		// thread's row
		const kw = await page.evaluate(async () => {
			const d = await (await fetch('api/window?t0=0&t1=100000000&w=1000')).json();
			const s = window.strataView.summary, name = (c) => s.classes ?
				s.classes[c] : c;
			const of = (tid) => {
				const t = d.threads.find((x) => x.tid === tid), out = [];
				for (let i = 0; t && i < t.marks.length; i += 5)
					out.push([t.marks[i + 3], t.marks[i + 4]]);
				return out;
			};
			return { b: of(302), k: of(400), a: of(301), exact: d.exact, classes: s.classes };
		});
		const cls = (name) => kw.classes ? kw.classes.indexOf(name) : -2;
		const has = (list, ts, name) => list.some(([t, c]) => t === ts && c === cls(name));
		check(kw.exact && kw.b.length === 7 && has(kw.b, 10e6, 'raw_syscalls:sys_enter') &&
			has(kw.b, 70e6, 'sched:sched_switch') && has(kw.b, 5e6, 'work:job_begin') &&
			kw.k.length === 1 && has(kw.k, 85e6, 'sched:sched_switch') && kw.a.length === 4 &&
			!kw.a.some(([t]) => t === 45e6), `kernel events on their threads' rows: worker-b ` +
			`${JSON.stringify(kw.b)}, kworker ${JSON.stringify(kw.k)}, worker-a ` +
			`${JSON.stringify(kw.a)} (classes ${kw.classes})`);
		// the selected thread's breakdown: a click on worker-b's state
		// strip; over the whole trace, the times strata breakdown gives
		// for gen_view.py's trace (66 ms running, 2 ms in a system call,
		// 30 ms sleeping, 2 ms before its first event)
		{
			const r = (await page.evaluate(() => window.strataView.rows))
				.find((q) => q.kind === 'thread' && q.id === 302);
			const box = await page.locator('#timeline').boundingBox();
			await page.mouse.click(box.x + 170 + 0.3 * (box.width - 170), box.y + r.y + 3);
			await page.waitForFunction(() => window.strataView.breakdown?.tid === 302, null,
				{ timeout: 10000 }).catch(() => {});
			const bd = await page.evaluate(() => window.strataView.breakdown);
			const cells = await page.$$eval('#st-bd-table tr', (trs) =>
				trs.map((tr) => [tr.dataset.state, tr.cells[1].textContent]));
			check(bd && bd.ns.join() === '66000000,2000000,0,30000000,0,0,0,2000000' &&
				JSON.stringify(cells) === JSON.stringify([['running', '66.000 ms'],
					['syscall', '2.000 ms'], ['sleeping', '30.000 ms'], ['unseen', '2.000 ms']]) &&
				/worker-b 302/.test(await page.textContent('#st-bd')),
				`worker-b's breakdown: ${JSON.stringify(bd)} ${JSON.stringify(cells)}`);
			// and its system calls: the one at 10-12 ms (no name: the
			// trace's env has none), as its 2 ms in a system call
			const sc = await page.$$eval('#st-sc-table tr', (trs) =>
				trs.map((tr) => [...tr.cells].slice(0, 3).map((c) => c.textContent)));
			check(bd && JSON.stringify(bd.syscalls) ===
				'[{"nr":0,"name":"","count":1,"ns":2000000,"open":false}]' &&
				JSON.stringify(sc) === '[["#0","1","2.000 ms"]]',
				`worker-b's system calls: ${JSON.stringify(bd && bd.syscalls)} ${JSON.stringify(sc)}`);
			// over a view of 20-60 ms: running all along
			await page.evaluate(() => { window.strataView.breakdown = null; });
			await page.evaluate(() => window.strataView.go(20e6, 60e6));
			await page.waitForFunction(() => window.strataView.breakdown?.t0 === 20e6, null,
				{ timeout: 10000 }).catch(() => {});
			const b2 = await page.evaluate(() => window.strataView.breakdown);
			check(b2 && b2.ns.join() === '40000000,0,0,0,0,0,0,0' && b2.syscalls.length === 0 &&
				/no system call/.test(await page.textContent('#st-sc')),
				`worker-b's breakdown over 20-60 ms: ${JSON.stringify(b2)}`);
			// over 11-60 ms: the call's last millisecond, not a whole call
			await page.evaluate(() => { window.strataView.breakdown = null; });
			await page.evaluate(() => window.strataView.go(11e6, 60e6));
			await page.waitForFunction(() => window.strataView.breakdown?.t0 === 11e6, null,
				{ timeout: 10000 }).catch(() => {});
			const b3 = await page.evaluate(() => window.strataView.breakdown);
			check(b3 && b3.ns[1] === 1e6 && JSON.stringify(b3.syscalls) ===
				'[{"nr":0,"name":"","count":0,"ns":1000000,"open":false}]',
				`worker-b's breakdown over 11-60 ms: ${JSON.stringify(b3)}`);
			await page.locator('#timeline').focus();
			await page.keyboard.press('0');
			await page.waitForTimeout(300);
		}
		const kind = String(h.summary.kinds.indexOf('work:job_begin..job_end'));
		st = await stats(() => page.selectOption('#st-kind', kind));
		const du = st.durations || {};
		check(du.count === 3 && du.min === 10e6 && du.median === 40e6 && du.max === 75e6 &&
			du.hist.length === 9, `durations of the jobs: ${JSON.stringify(du)}`);
		const text = await page.textContent('#stats');
		check(/23/.test(await page.textContent('#st-events')) && /worker-b 302/.test(text) &&
			/median 40\.000 ms/.test(text), `the statistics panel: ${text.slice(0, 300)}`);
		// the filter takes the same events from the statistics
		await page.fill('#f-ev', 'work:*');
		st = await stats(() => page.click('#filters button:not([type])'));
		check(st.events === 8 && st.names.length === 2 && by(st.threads, 'tid')[302] === 4,
			`statistics under work:*: ${JSON.stringify(st).slice(0, 300)}`);
		await page.fill('#f-ev', '');
		// the subsystem menu: its glob in the events field, applied at
		// once, the same statistics as the glob typed
		st = await stats(() => page.selectOption('#f-sub', 'work'));
		const subs = await page.evaluate(() => window.strataView.subsystems);
		check(st.events === 8 && st.names.length === 2 &&
			await page.inputValue('#f-ev') === 'work:*' &&
			JSON.stringify(subs) === '["raw_syscalls","sched","work"]',
			`the subsystem menu: ${subs}, work: ${JSON.stringify(st).slice(0, 200)}`);
		st = await stats(() => page.selectOption('#f-sub', ''));
		check(st.events === 23 && await page.inputValue('#f-ev') === '',
			`all subsystems again: ${st.events} events`);
		await page.fill('#f-tids', '301');
		st = await stats(() => page.click('#filters button:not([type])'));
		check(st.durations.count === 1 && st.durations.max === 40e6 &&
			st.threads.length === 1 && st.threads[0].tid === 301,
			`statistics of thread 301: ${JSON.stringify(st).slice(0, 300)}`);
		await page.fill('#f-tids', '');
		await stats(() => page.click('#filters button:not([type])'));
		// of the range between the first and the last marker instead
		const mk = await page.evaluate(() => window.strataView.markers);
		st = await stats(() => page.selectOption('#st-of', 'markers'));
		const want = await page.evaluate(async ([a, b]) => (await (await fetch(
			`api/list?t=${a}&before=0&after=1000`)).json()).events.filter((e) => e.ts <= b).length,
		[mk[0], mk.at(-1)]);
		check(mk.length >= 2 && st.t0 === mk[0] && st.t1 === mk.at(-1) && st.events === want &&
			want < 23, `statistics between markers ${mk}: ${st.t0}-${st.t1}, ${st.events} ` +
			`events, the list ${want}`);
		await stats(() => page.selectOption('#st-of', 'view'));
		await page.click('#tab-list');
	}

	// export: the current view as a valid SVG document, with what the
	// canvas shows (rows, states, markers)
	{
		const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 10000 }),
			page.click('#export')]);
		const file = shot ? shot.replace(/\.png$/, '') + '.svg' : await dl.path();
		if (shot)
			await dl.saveAs(file);
		const text = readFileSync(file, 'utf8');
		const got = await page.evaluate((text) => {
			const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
			const root = doc.documentElement;
			const texts = [...doc.getElementsByTagName('text')].map((t) => t.textContent);
			const fills = [...doc.getElementsByTagName('rect')].map((r) => r.getAttribute('fill'));
			const strokes = [...doc.getElementsByTagName('path')].map((r) =>
				r.getAttribute('stroke'));
			return { error: doc.getElementsByTagName('parsererror').length, root: root.localName,
				ns: root.namespaceURI, w: root.getAttribute('width'), texts, fills, strokes };
		}, text);
		check(!got.error && got.root === 'svg' && got.ns === 'http://www.w3.org/2000/svg' &&
			Number(got.w) > 0, `SVG parses: ${JSON.stringify({ ...got, texts: 0, fills: 0, strokes: 0 })}`);
		check(['CPU 0', 'CPU 1', 'worker-a 301', '▾ server 300 · 3 threads', 'kworker 400', 'M1'].every((t) =>
			got.texts.includes(t)), `SVG text: ${got.texts.slice(0, 30)}`);
		check(got.fills.includes('#ff7043') && got.fills.includes('#1565c0') &&
			got.fills.length > 40, `SVG rects: ${got.fills.length}, I/O wait and a marker among them`);
		check(got.strokes.includes('#d81b60'), `SVG: the wakeup arrows' strokes: ${got.strokes}`);
	}

	// export as PNG: every row at the screen's resolution, the same
	// pixels as the canvas where it shows them (worker-a's I/O wait)
	{
		const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 10000 }),
			page.click('#export-png')]);
		const file = shot ? shot.replace(/\.png$/, '') + '-export.png' : await dl.path();
		if (shot)
			await dl.saveAs(file);
		const png = readFileSync(file);
		const sig = png.subarray(0, 8).toString('hex'), iw = png.readUInt32BE(16),
			ih = png.readUInt32BE(20);
		const want = await page.evaluate(() => {
			const c = document.getElementById('timeline'), dpr = window.devicePixelRatio || 1;
			return [Math.round(c.clientWidth * dpr), Math.round(c.clientHeight * dpr)];
		});
		check(sig === '89504e470d0a1a0a' && iw === want[0] && ih === want[1],
			`PNG: signature ${sig}, ${iw} x ${ih} px, the canvas ${want.join(' x ')}`);
		const got = await page.evaluate(async (b64) => {
			const h = window.strataView, r = h.rows.find((q) => q.kind === 'thread' && q.id === 301);
			const img = await createImageBitmap(await (await fetch(`data:image/png;base64,${b64}`)).blob());
			const c = document.createElement('canvas');
			c.width = img.width;
			c.height = img.height;
			const ctx = c.getContext('2d');
			ctx.drawImage(img, 0, 0);
			const t = document.getElementById('timeline'), dpr = window.devicePixelRatio || 1;
			const w = t.clientWidth - 170, v = h.view, at = (42.5e6 - v.t0) / (v.t1 - v.t0);
			if (at < 0 || at > 1)
				return `42.5 ms not in the view ${v.t0}..${v.t1}`;
			return [...ctx.getImageData(Math.round((170 + at * w) * dpr),
				Math.round((r.y + 3) * dpr), 1, 1).data];
		}, png.toString('base64'));
		check(Array.isArray(got) && near(got, '#ff7043'),
			`PNG: worker-a in I/O wait at 42.5 ms: pixel ${got}`);
	}

	check(errors.length === 0, `page errors: ${errors.join('; ')}`);
	check(outside.length === 0, `requests outside the server: ${outside.join(' ')}`);
	if (shot)
		await page.screenshot({ path: shot });
} finally {
	await browser.close();
}
console.log(`view-browser: ${failures.length ? `${failures.length} failed` : 'ok'}`);
process.exit(failures.length ? 1 : 0);
