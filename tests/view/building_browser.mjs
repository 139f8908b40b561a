// SPDX-License-Identifier: MIT
// strata view served at once in Debian's headless Chromium: the coarse paint with its "building the summary" banner, then the full paint without a touch.
// usage: node building_browser.mjs URL SCREENSHOT HOLD   (the URL `strata view`
// printed while its build is held back by STRATA_VIEW_TEST_HOLD=HOLD: this
// creates HOLD once the coarse paint is checked, and the build goes on)
import { writeFileSync } from 'node:fs';
import { checks, openPage } from './chromium.mjs';

const [url, shot, hold] = process.argv.slice(2);
const { failures, check } = checks('view-building-browser');
const WAIT = { timeout: 60000 }; // states, never durations: a loaded machine is slow

const { browser, page, errors } = await openPage(1200, 700);
try {
	await page.goto(url);
	const state = () => page.evaluate(() => {
		const h = window.strataView;
		return { ready: h.ready, building: h.building, banner: document.getElementById('banner').textContent,
			hidden: document.getElementById('banner').hidden, drawn: h.drawn && { marks: h.drawn.marks } };
	});
	const waitFor = async (what, fn) => {
		try {
			await page.waitForFunction(fn, null, WAIT);
			return true;
		} catch {
			check(false, `${what}: ${JSON.stringify(await state())}`);
			return false;
		}
	};
	// 1. the coarse paint: the banner, the packets' density per CPU
	await waitFor('the coarse paint', () => window.strataView.building &&
		window.strataView.building.drawn.overview > 0);
	let s = await state();
	check(!s.ready, 'not ready while the model is built');
	check(!s.hidden && /^building the summary: \d+ %/.test(s.banner), `the banner: ${s.banner}`);
	const cpus = s.building ? s.building.drawn.cpus : [];
	check(cpus.length > 0 && cpus.every((c) => c.pixels > 0),
		`CPU rows of density: ${JSON.stringify(cpus)}`);
	if (shot)
		await page.screenshot({ path: shot });
	if (hold)
		writeFileSync(hold, '');
	// 2. the full paint once the model is ready, with no input
	await waitFor('the full paint', () => window.strataView.ready);
	s = await state();
	check(s.building && s.building.done && s.building.polls > 0, `the build seen done: ${JSON.stringify(s.building)}`);
	check(!/building the summary/.test(s.banner), `the banner after: ${s.banner}`);
	check(s.drawn && s.drawn.marks > 0, `marks drawn: ${JSON.stringify(s.drawn)}`);
	check(errors.length === 0, `page errors: ${errors.join('; ')}`);
} finally {
	await browser.close();
}
if (failures.length) {
	console.error(`view-building-browser: ${failures.length} checks failed`);
	process.exit(1);
}
console.log('view-building-browser: ok');
