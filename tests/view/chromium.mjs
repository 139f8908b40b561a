// SPDX-License-Identifier: MIT
// What the view's smaller Chromium stages share: their checks, Debian's headless chromium, a page that records its errors.
import { chromium } from 'playwright-core';

// check(ok, what): a failure said at once as `name: FAIL: what`, kept in failures.
export function checks(name) {
	const failures = [];
	const check = (ok, what) => {
		if (!ok) {
			failures.push(what);
			console.error(`${name}: FAIL: ${what}`);
		}
	};
	return { failures, check };
}

// The browser and a page of that size; errors collects the page's errors.
export async function openPage(width, height) {
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		args: ['--no-sandbox', '--disable-gpu'],
	});
	// the page's CSP forbids eval, which playwright's waitForFunction uses
	const page = await browser.newPage({ viewport: { width, height }, bypassCSP: true });
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
	return { browser, page, errors };
}
