// SPDX-License-Identifier: MIT
// strata view in Chromium: marked and counted events against strata print's, and a shift-dragged selection's statistics against api/stats.
// usage: node mark_browser.mjs URL PRINTED   (the URL strata view printed
// for the vlist trace of browser.sh: examples/workers 3 50000, 250 000
// events; PRINTED: strata print --format json of it)
import { readFileSync } from 'node:fs';
import { checks, openPage } from './chromium.mjs';

const [url, printed] = process.argv.slice(2);
const { failures, check } = checks('view-mark');
// print's events as [ns since the trace's start, tid, name, fields]: the
// API floors to the ns as print shows it
const all = readFileSync(printed, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const want = all.map((e) => [Math.round(e.time * 1e9), e.tid, e.event, e.fields]);
const printCount = (t0, t1, keep) => want.filter((e) => e[0] >= t0 && e[0] <= t1 && keep(e)).length;

const { browser, page, errors } = await openPage(1200, 800);
try {
	await page.goto(url);
	await page.waitForFunction(() => window.strataView?.ready && window.strataView.list > 0,
		null, { timeout: 20000 });
	const hook = () => page.evaluate(() => {
		const h = window.strataView;
		return { view: h.view, marked: h.marked, drawn: h.drawn, fetchMs: h.fetchMs,
			range: h.range, stats: h.stats };
	});
	// the mark's answer for the view now on screen
	const markedNow = async (q) => {
		await page.waitForFunction((q) => {
			const h = window.strataView, m = h.marked;
			return m && m.q === q && (m.error || m.t0 === Math.floor(h.view.t0) &&
				m.t1 === Math.ceil(h.view.t1)) && h.drawn && h.drawn.marked !== undefined;
		}, q, { timeout: 20000 }).catch(() => {});
		await page.waitForTimeout(150); // drawn
		return hook();
	};
	const mark = async (q) => {
		await page.fill('#mark', q);
		await page.press('#mark', 'Enter');
		return markedNow(q);
	};
	// pixels of the highlight's colour (#ffd600) in a 3x3 square at (x, y)
	const yellow = (x, y) => page.evaluate(([x, y]) => {
		const c = document.getElementById('timeline'), dpr = window.devicePixelRatio || 1;
		const d = c.getContext('2d').getImageData(Math.round((x - 1) * dpr),
			Math.round((y - 1) * dpr), 3, 3).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4)
			n += d[i] > 240 && d[i + 1] > 200 && d[i + 1] < 230 && d[i + 2] < 40;
		return n;
	}, [x, y]);
	const costs = [];

	// the whole trace: too wide to read, counted from the bins (which
	// cover the whole trace: print's count)
	let h = await mark('work:job_end');
	const jobEnd = (e) => e[2] === 'work:job_end';
	let n = printCount(h.view.t0, h.view.t1, jobEnd);
	const text = async () => page.textContent('#mark-n');
	check(h.marked.n === n && !h.marked.exact && /^≈ /.test(await text()) &&
		(await text()).includes(String(n)), `mark work:job_end over the whole trace: ` +
		`${JSON.stringify(h.marked)} "${await text()}", print ${n}`);
	costs.push(['whole trace', h.marked.ms, h.fetchMs]);
	// the overview strip shows them too, in their colour, where they are
	await page.waitForFunction(() => window.strataView.overviewMarked > 0, null,
		{ timeout: 20000 }).catch(() => {});
	const overviewYellow = () => page.evaluate(() => {
		const c = document.getElementById('overview');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4)
			n += d[i] > 240 && d[i + 1] > 200 && d[i + 1] < 230 && d[i + 2] < 40;
		return n;
	});
	const ovLit = await page.evaluate(() => window.strataView.overviewMarked);
	check(ovLit > 0 && await overviewYellow() > 0, `the overview: ${ovLit} pixels marked, ` +
		`${await overviewYellow()} of the highlight's colour`);
	// drawn where they are: the highlight's colour at the marked marks,
	// none where the rows have no marked event (the label column)
	const ml = h.drawn.markedList || [];
	let lit = 0;
	for (const m of ml.slice(0, 20))
		lit += (await yellow(m.x, m.y)) > 0;
	check(h.drawn.marked > 0 && lit === Math.min(20, ml.length) && await yellow(60, ml[0]?.y) === 0,
		`highlight pixels: ${lit} of ${Math.min(20, ml.length)} marked marks, ` +
		`${h.drawn.marked} drawn`);

	// zoomed in to 0.3 ms around the middle job's end (the trace's times
	// are the machine's): read, so exact, and another count
	const ends = want.filter(jobEnd), mid = ends[ends.length >> 1];
	const t0 = mid[0] - 0.15e6, t1 = mid[0] + 0.15e6;
	await page.evaluate(([a, b]) => window.strataView.go(a, b), [t0, t1]);
	h = await markedNow('work:job_end');
	n = printCount(h.view.t0, h.view.t1, jobEnd);
	check(h.marked.exact && h.marked.n === n && n > 0 && n < 50000 && !/≈/.test(await text()) &&
		(await text()).includes(`${n} in view`), `mark after a zoom to ${JSON.stringify(h.view)}: ` +
		`${JSON.stringify(h.marked)} "${await text()}", print ${n}`);
	costs.push(['0.3 ms', h.marked.ms, h.fetchMs]);
	const m0 = (h.drawn.markedList || [])[0];
	check(m0 && await yellow(m0.x, m0.y) > 0, `highlight pixels after the zoom: ${JSON.stringify(m0)}`);
	// a pan: the count follows
	await page.locator('#timeline').focus();
	await page.keyboard.press('d');
	h = await markedNow('work:job_end');
	n = printCount(h.view.t0, h.view.t1, jobEnd);
	check(h.marked.n === n && h.view.t0 > t0, `mark after a pan: ${JSON.stringify(h.marked)}, print ${n}`);

	// under the filter: a thread's events only, AND-ed with the mark
	const tid = mid[1]; // in the view panned a fifth right
	await page.fill('#f-tids', String(tid));
	await page.click('#filters button:not([type])');
	await page.waitForFunction(() => window.strataView.filter?.tids, null, { timeout: 10000 });
	h = await markedNow('work:job_end');
	n = printCount(h.view.t0, h.view.t1, (e) => jobEnd(e) && e[1] === tid);
	// the filter shows where other threads ended jobs there too (on a
	// loaded machine one worker may have run alone: said, not failed)
	const others = printCount(h.view.t0, h.view.t1, (e) => jobEnd(e) && e[1] !== tid);
	if (!others)
		console.log(`view-mark: thread ${tid} alone in the view: the thread filter untested`);
	check(h.marked.n === n && n > 0,
		`mark under the filter tids=${tid}: ${JSON.stringify(h.marked)}, print ${n}`);
	await page.fill('#f-tids', '');
	await page.fill('#f-ev', 'work:job_*');
	await page.click('#filters button:not([type])');
	await page.waitForFunction(() => window.strataView.filter?.ev, null, { timeout: 10000 });
	h = await markedNow('work:job_end');
	n = printCount(h.view.t0, h.view.t1, jobEnd);
	check(h.marked.n === n, `mark under the filter work:job_*: ${JSON.stringify(h.marked)}, print ${n}`);
	h = await mark('lock');  // a plain word: the names holding it, none kept by the filter
	check(h.marked.n === 0 && h.drawn.marked === 0, `mark lock under work:job_*: ${JSON.stringify(h.marked)}`);
	await page.fill('#f-ev', '');
	await page.click('#filters button:not([type])');
	await page.waitForFunction(() => !window.strataView.filter?.ev, null, { timeout: 10000 });

	// an expression: counted when read, "zoom in" over the whole trace
	h = await mark('job < 1000');
	n = printCount(h.view.t0, h.view.t1, (e) => e[3] && 'job' in e[3] && e[3].job < 1000);
	check(h.marked.exact && h.marked.n === n, `mark job < 1000 in ${JSON.stringify(h.view)}: ` +
		`${JSON.stringify(h.marked)}, print ${n}`);
	await page.locator('#timeline').focus();
	await page.keyboard.press('0');
	h = await markedNow('job < 1000');
	check(h.marked.n === null && /zoom in/.test(await text()) && h.drawn.marked === 0,
		`mark job < 1000 over the whole trace: ${JSON.stringify(h.marked)} "${await text()}"`);
	h = await mark('job <');
	check(h.marked.error && (await text()).length > 0, `a bad mark: ${JSON.stringify(h.marked)}`);
	errors.splice(0, Infinity, ...errors.filter((m) => !/status of 400/.test(m)));
	h = await mark('');
	check(!h.marked && h.drawn.marked === 0 && await text() === '', 'the mark cleared');
	await page.waitForTimeout(200);
	check(await overviewYellow() === 0, 'the mark cleared: the overview still shows it');

	// the statistics of a shift-dragged selection, without zooming: with
	// the statistics shown the band stays and is their range
	await page.evaluate(([a, b]) => window.strataView.go(a, b), [mid[0] - 3e6, mid[0] + 3e6]);
	await page.waitForTimeout(400);
	await page.click('#tab-stats');
	await page.waitForFunction(() => window.strataView.stats, null, { timeout: 10000 });
	const before = (await hook()).view;
	const box = await page.locator('#timeline').boundingBox(), pw = box.width - 170;
	const y = box.y + 40;
	await page.evaluate(() => { window.strataView.stats = null; });
	await page.keyboard.down('Shift');
	await page.mouse.move(box.x + 170 + 0.3 * pw, y);
	await page.mouse.down();
	await page.mouse.move(box.x + 170 + 0.4 * pw, y, { steps: 4 });
	await page.mouse.move(box.x + 170 + 0.5 * pw, y, { steps: 4 });
	await page.mouse.up();
	await page.keyboard.up('Shift');
	await page.waitForFunction(() => window.strataView.stats, null, { timeout: 10000 }).catch(() => {});
	await page.waitForTimeout(300);
	h = await hook();
	const r = h.range || {};
	const api = await page.evaluate(async ([a, b]) => (await (await fetch(
		`api/stats?t0=${a}&t1=${b}&kind=-1`)).json()), [Math.floor(r.t0), Math.ceil(r.t1)]);
	check(h.view.t0 === before.t0 && h.view.t1 === before.t1 &&
		await page.inputValue('#st-of') === 'selection',
		`a shift-drag with the statistics shown keeps the view: ${JSON.stringify(h.view)}`);
	const px = (before.t1 - before.t0) / pw;
	const at = (f) => before.t0 + f * (before.t1 - before.t0);
	check(Math.abs(r.t0 - at(0.3)) < 2 * px && Math.abs(r.t1 - at(0.5)) < 2 * px && h.stats &&
		h.stats.t0 === api.t0 && h.stats.t1 === api.t1 &&
		JSON.stringify(h.stats) === JSON.stringify(api) && api.events > 0,
		`the selection's statistics ${JSON.stringify(h.stats).slice(0, 200)} and ` +
		`api/stats's ${JSON.stringify(api).slice(0, 200)}`);
	// Escape drops it: the view's statistics again
	await page.evaluate(() => { window.strataView.stats = null; });
	await page.locator('#timeline').focus();
	await page.keyboard.press('Escape');
	await page.waitForFunction(() => window.strataView.stats, null, { timeout: 10000 }).catch(() => {});
	h = await hook();
	check(h.stats && h.stats.t0 === Math.floor(before.t0) && h.stats.t1 === Math.ceil(before.t1),
		`Escape: the view's statistics: ${JSON.stringify(h.stats).slice(0, 120)}`);

	for (const [what, ms, view] of costs)
		console.log(`view-mark: ${what}: the mark's window ${ms.toFixed(1)} ms ` +
			`(the view's ${view.toFixed(1)} ms)`);
	check(errors.length === 0, `page errors: ${errors.join('; ')}`);
} finally {
	await browser.close();
}
console.log(`view-mark: ${failures.length ? `${failures.length} failed` : 'ok'}`);
process.exit(failures.length ? 1 : 0);
