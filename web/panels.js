// SPDX-License-Identifier: MIT
// strata view: the tabs the server answers on demand — the statistics (with the selected thread's breakdown) and the activities (the --activity kinds, the rules typed in the tab) — and the typed rules' intervals on the rows.
import { renderStats } from './stats.js';
import { renderIntervals } from './activities.js';

// What these need of main.js: its state, the test hook and its helpers
// ({ state, hook, $, get, filterQuery, go, redraw }), given once.
let state, hook, $, get, filterQuery, go, redraw;

export function initPanels(page) {
	({ state, hook, $, get, filterQuery, go, redraw } = page);
}

// The intervals of the rules typed in the activities tab that overlap the
// view, drawn on the thread rows as the command line's are: the server
// pairs them on demand (api/activity), the first 1000 in time order.
export async function fetchTyped() {
	const seq = ++state.typedSeq, v = state.view;
	if (!state.typedRules) {
		state.tl.typed = null;
		return;
	}
	const r = await fetch(`api/activity?t0=${Math.floor(v.t0)}&t1=${Math.ceil(v.t1)}` +
		`&by=1&n=1000&rules=${encodeURIComponent(state.typedRules)}${filterQuery()}`);
	const a = await r.json().catch(() => null);
	if (seq !== state.typedSeq || !r.ok || !a)
		return;
	// their kinds after the trace's and the command line's
	state.tl.typed = { base: state.sum.kinds.length, kinds: a.kinds, more: a.more,
		complete: a.complete, intervals: a.intervals };
	$('typed-said').textContent = a.more || !a.complete ?
		'typed rules: the first 1000 intervals of the view drawn, zoom in for all' : '';
	redraw();
}

// ---- statistics of the view, under the filter: asked only while shown ----

let statsTimer = 0, actTimer = 0;
export function fetchStatsSoon() {
	clearTimeout(statsTimer);
	clearTimeout(actTimer);
	if ($('tab-act').classList.contains('on'))
		actTimer = setTimeout(fetchIntervals, 150);
	if (!$('tab-stats').classList.contains('on'))
		return;
	statsTimer = setTimeout(fetchStats, 150);
}

// ---- activities: the intervals of a kind in the view, longest first or in
// time order (a click on a column's head); a click on one zooms to it -----

async function fetchIntervals() {
	const seq = ++state.actSeq, v = state.view, kind = $('act-kind').value;
	if (kind === '')
		return;
	// a typed rule: the server pairs its events over the view on demand
	const range = `t0=${Math.floor(v.t0)}&t1=${Math.ceil(v.t1)}&by=${state.actBy}&n=200`;
	const r = await fetch(kind === 'typed' ?
		`api/activity?${range}&rules=${encodeURIComponent(state.typedRules)}${filterQuery()}` :
		`api/intervals?${range}&kind=${kind}${filterQuery()}`);
	const a = await r.json().catch(() => ({ error: `error ${r.status}` }));
	if (seq !== state.actSeq)
		return;
	if (!r.ok) {
		$('act-said').textContent = a.error || `error ${r.status}`;
		hook.intervals = { error: a.error };
		return;
	}
	$('act-said').textContent = '';
	renderIntervals($('acts'), a, state.sum.names, (iv) => {
		const pad = Math.max(500, (iv.end - iv.begin) / 10);
		hook.activity = iv;
		go(iv.begin - pad, iv.end + pad);
	});
	for (const th of $('acts').querySelectorAll('th[data-by]'))
		th.addEventListener('click', () => {
			state.actBy = Number(th.dataset.by);
			fetchIntervals();
		});
	hook.intervals = a;
}

// Rules typed in the tab (NAME=BEGIN..END[,by=FIELD], up to 4 separated
// by ';'), the command line's syntax: the server parses and checks them
// with the command line's parser (a bad one: its message, the list as it
// was), then they are the tab's kind "typed", asked for on each view.
export async function applyRules() {
	const text = $('act-rule').value.trim();
	if (!text)
		return;
	const v = state.view;
	const r = await fetch(`api/activity?t0=${Math.floor(v.t0)}&t1=${Math.ceil(v.t1)}&n=1` +
		`&rules=${encodeURIComponent(text)}`);
	const a = await r.json().catch(() => ({ error: `error ${r.status}` }));
	if (!r.ok) {
		$('act-rule-said').textContent = a.error || `error ${r.status}`;
		hook.intervals = { error: a.error };
		return;
	}
	$('act-rule-said').textContent = '';
	state.typedRules = text;
	let opt = $('act-kind').querySelector('option[value="typed"]');
	if (!opt) {
		opt = new Option('', 'typed');
		$('act-kind').add(opt, 0);
	}
	opt.text = `typed: ${a.kinds.join(', ')}`;
	$('act-kind').value = 'typed';
	// each rule a kind of the statistics' menu: its value r<N>
	const st = $('st-kind');
	for (const o of [...st.options].filter((o) => o.value.startsWith('r')))
		o.remove();
	a.kinds.forEach((k, i) => st.add(new Option(`typed: ${k}`, `r${i}`), 1 + i));
	state.actBy = 0;
	fetchIntervals();
	fetchTyped();
	fetchStatsSoon();
}

// The view, or when asked and there is one: the range from the first
// marker to the last (two at least), or the shift-dragged selection kept
// while the statistics are shown; each stays while the view moves.
function statsRange() {
	const m = state.markers, of = $('st-of').value;
	if (of === 'markers' && m.length >= 2)
		return { t0: m[0], t1: m.at(-1) };
	if (of === 'selection' && state.tl.range)
		return state.tl.range;
	return state.view;
}

async function fetchStats() {
	const seq = ++state.statsSeq, v = statsRange();
	const kind = $('st-kind').value, typed = kind.startsWith('r');
	const a = await get(`api/stats?t0=${Math.floor(v.t0)}&t1=${Math.ceil(v.t1)}` +
		(typed ? `&kind=${kind.slice(1)}&rules=${encodeURIComponent(state.typedRules)}` :
			`&kind=${kind}`) + filterQuery());
	// the selected thread's breakdown over the same range (the states
	// strata breakdown counts; only in a trace with kernel sched events)
	const bd = state.thread !== undefined && state.sum.have_sched ? await get(
		`api/breakdown?tid=${state.thread}&t0=${Math.floor(v.t0)}&t1=${Math.ceil(v.t1)}`) :
		null;
	if (seq !== state.statsSeq)
		return;
	renderStats($('stats'), a, state.sum, bd);
	hook.stats = a;
	hook.breakdown = bd;
}
