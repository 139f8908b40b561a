// SPDX-License-Identifier: MIT
// strata view --live in Debian's headless Chromium: the shown range follows the growing trace, stays put once panned back, follows again on End.
// usage: node live_browser.mjs URL   (the URL `strata view --live` printed on
// a trace that tests/reader/slowlog is still writing, for 15 s or so)
import { checks, openPage } from './chromium.mjs';

const [url] = process.argv.slice(2);
const { failures, check } = checks('view-live-browser');
const WAIT = { timeout: 30000 }; // states, never durations: a loaded machine is slow

const { browser, page, errors } = await openPage(1200, 800);
try {
	await page.goto(url);
	const hook = () => page.evaluate(() => {
		const h = window.strataView;
		return { view: h.view, live: h.live, span: h.summary && h.summary.span_ns,
			text: document.getElementById('live').textContent };
	});
	const waitFor = async (what, fn, arg) => {
		try {
			await page.waitForFunction(fn, arg, WAIT);
			return true;
		} catch {
			check(false, `${what}: ${JSON.stringify(await hook())}`);
			return false;
		}
	};
	await waitFor('the page ready on a live trace', () => window.strataView.ready &&
		window.strataView.live && window.strataView.live.live);
	let h = await hook();
	check(h.live.following && /Live/.test(h.text), `following at first: ${JSON.stringify(h)}`);

	// 1. following: the shown range's end advances with the trace
	await waitFor('the shown end advances while following',
		(t1) => window.strataView.view.t1 > t1 && window.strataView.live.grown > 0, h.view.t1);
	h = await hook();
	check(h.view.t1 === h.span && h.view.t0 === 0,
		`the whole trace stays whole while following: ${JSON.stringify(h.view)}, span ${h.span}`);

	// 2. zoomed in (the view no longer touches the end): paused, it stays
	await page.locator('#timeline').focus();
	await page.keyboard.press('w');
	await page.keyboard.press('a');
	await waitFor('paused once zoomed and panned back', () => !window.strataView.live.following);
	h = await hook();
	const kept = h.view;
	check(/Paused/.test(h.text) && kept.t1 < h.span, `the control says paused: ${JSON.stringify(h)}`);
	await waitFor('the trace grows while paused', (span) => window.strataView.live.span > span,
		h.span);
	h = await hook();
	check(h.view.t0 === kept.t0 && h.view.t1 === kept.t1 && !h.live.following,
		`the view stays put while paused: ${JSON.stringify(kept)} -> ${JSON.stringify(h.view)}`);

	// 3. End: the newest time again, its width kept, then followed
	const width = kept.t1 - kept.t0;
	await page.keyboard.press('End');
	await waitFor('End follows again', () => window.strataView.live.following);
	h = await hook();
	check(h.view.t1 === h.span && Math.abs(h.view.t1 - h.view.t0 - width) <= 1 &&
		/Live/.test(h.text), `End shows the newest time: ${JSON.stringify(h)}, width ${width}`);
	await waitFor('the shown end advances again', (t1) => window.strataView.view.t1 > t1,
		h.view.t1);
	h = await hook();
	check(Math.abs(h.view.t1 - h.view.t0 - width) <= 1 && h.live.following,
		`followed with its width kept: ${JSON.stringify(h.view)}, width ${width}`);

	// 4. the control pauses by a pan back and resumes by a click too
	await page.keyboard.press('a');
	await waitFor('paused by a pan back', () => !window.strataView.live.following);
	try {
		await page.click('#live', { timeout: 10000 });
	} catch (e) {
		check(false, `the control: ${e.message.split('\n')[0]}`);
	}
	await waitFor('the control follows again', () => window.strataView.live.following);

	// 5. the recording ends: the finished trace, the control says so
	if (await waitFor('the page sees the recording end',
		() => window.strataView.live.live === false)) {
		h = await hook();
		check(/finished/.test(h.text), `the control once finished: ${h.text}`);
	}
	check(!errors.length, `page errors: ${errors.join('; ')}`);
	const polls = (await hook()).live.polls;
	check(polls > 0, `api/live asked ${polls} times`);
} finally {
	await browser.close();
}
process.exit(failures.length ? 1 : 0);
