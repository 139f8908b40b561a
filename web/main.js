// SPDX-License-Identifier: MIT
// strata view: the page's state, its requests to the JSON API, and the keys and mouse.
import { Timeline, LABEL, STATES, MARKED, colour, duration, seconds } from './timeline.js';
import { SvgContext } from './svg.js';
import { initList, showEvent, showSpan, spanHtml, eventRows, same } from './list.js';
import { initPanels, fetchTyped, fetchStatsSoon, applyRules } from './panels.js';
import { initLive, viewChosen, followNewest } from './live.js';
import { awaitModel } from './building.js';
import { decodeWindow } from './wire.js';

// Every URL is relative: the page lives under /TOKEN/, so the token goes
// with each request without the page knowing it.
async function get(path) {
	const r = await fetch(path);
	if (!r.ok)
		throw new Error(`${path}: ${r.status}`);
	return r.json();
}

const $ = (id) => document.getElementById(id);
const state = { sum: null, view: null, tl: null, overview: null, seq: 0,
	selected: null, listSeq: 0, statsSeq: 0, actSeq: 0, typedSeq: 0, actBy: 0, history: [], future: [],
	markers: [], pointer: null, pointerY: null };
const hook = window.strataView = { ready: false, answers: 0, list: 0 };

function clampView(t0, t1) {
	const span = state.sum.span_ns;
	let w = Math.max(1000, Math.min(span, t1 - t0)); // 1 us at the most zoomed
	t0 = Math.max(0, Math.min(t0, span - w));
	return { t0, t1: t0 + w };
}

function setView(t0, t1) {
	state.inputAt = state.inputAt ?? performance.now();
	state.view = clampView(t0, t1);
	hook.view = state.view;
	viewChosen(state.view);
	$('range').textContent = `${seconds(state.view.t0, (state.view.t1 - state.view.t0) / 1000)}` +
		` – ${seconds(state.view.t1, (state.view.t1 - state.view.t0) / 1000)} s`;
	redraw();
	fetchWindow();
	fetchMarked();
	fetchTyped();
	fetchListSoon();
	fetchStatsSoon();
}

// A window in its binary form (docs/view.md, "The binary window"), read
// into the JSON answer's shape: a wide window is thousands of rows, whose
// JSON cost more to write, send and parse than the drawing.
async function getBinWindow(path) {
	const r = await fetch(path);
	if (!r.ok)
		throw new Error(`${path}: ${r.status}`);
	return decodeWindow(await r.arrayBuffer());
}

// A window asked while the same one is on its way gets that answer: the
// page asks for the whole trace twice as it opens, its view and its
// overview at the same width.
const windowsAsked = new Map();
function getWindow(t0, t1, w) {
	const url = `api/window?t0=${t0}&t1=${t1}&w=${w}${filterQuery()}&fmt=bin`;
	if (!windowsAsked.has(url))
		windowsAsked.set(url, getBinWindow(url).finally(() => windowsAsked.delete(url)));
	return windowsAsked.get(url);
}

// One window request at a time matters: an answer older than the newest
// request is drawn only until the newer one comes.
async function fetchWindow() {
	const seq = ++state.seq, v = state.view, w = state.tl.plotWidth();
	const t0 = Math.floor(v.t0), t1 = Math.ceil(v.t1);
	const asked = performance.now();
	const d = await getWindow(t0, t1, w);
	if (seq < state.lastSeq)
		return;
	$('f-said').textContent = d.filtered ? '' :
		'zoom in for marks the expression keeps (drawn: its event names)';
	state.lastSeq = seq;
	state.tl.data = d;
	if (state.tl.countView(d))
		showRows(); // sorted by the window's activity: a new order
	hook.fetchMs = performance.now() - asked; // request to parsed answer
	state.answered = seq === state.seq;
	redraw();
}

let raf = 0;
function redraw() {
	if (raf)
		return;
	raf = requestAnimationFrame(() => {
		raf = 0;
		state.tl.selected = state.selected;
		state.tl.markers = state.markers;
		const t = performance.now();
		state.tl.draw(state.view);
		hook.drawMs = performance.now() - t; // the timeline's canvas alone
		hook.drawn = state.tl.drawn;
		const left = [[state.tl.drawn.arrowsLeft, 'wakeups'],
			[state.tl.drawn.flowsLeft, 'messages']].filter(([n]) => n);
		$('arrows-said').textContent = left.length ?
			`${left.map(([n, what]) => `${n} more ${what}`).join(', ')}: zoom in` : '';
		hook.rows = state.tl.rows.map((r) => ({ kind: r.kind, id: r.id, y: r.y, h: r.h,
			label: r.label, pid: r.pid, collapsed: r.collapsed, tids: r.tids }));
		drawOverview();
		if (state.answered) {
			// the newest answer is on screen: input to pixels, for
			// the tests and tests/view/bench.sh
			state.answered = false;
			hook.inputMs = performance.now() - state.inputAt;
			state.inputAt = null;
			hook.answers++;
			hook.ready = true;
		}
	});
}

function drawOverview() {
	const c = state.overview, dpr = window.devicePixelRatio || 1;
	const w = c.clientWidth, h = c.clientHeight;
	c.width = Math.round(w * dpr);
	c.height = Math.round(h * dpr);
	const ctx = c.getContext('2d');
	ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
	ctx.fillStyle = '#f5f7f8';
	ctx.fillRect(0, 0, w, h);
	const pw = w - LABEL, d = state.overviewData;
	if (d) {
		// events per pixel over all CPUs, on a log scale
		const px = new Float64Array(d.w);
		for (const c2 of d.cpus)
			for (let i = 0; i < c2.marks.length; i += 5)
				px[c2.marks[i]] += c2.marks[i + 2];
		const max = Math.log1p(Math.max(1, ...px));
		ctx.fillStyle = '#546e7a';
		for (let x = 0; x < d.w; x++)
			if (px[x]) {
				const bh = Math.max(1, Math.log1p(px[x]) / max * (h - 4));
				ctx.fillRect(LABEL + x / d.w * pw, h - bh, Math.max(1, pw / d.w), bh);
			}
		// the marked events (kmon's chosen ones) over them, on the same
		// scale: where in the whole trace they are
		const dm = state.overviewMarked;
		let lit = 0;
		if (dm && dm.w === d.w) {
			const pm = new Float64Array(dm.w);
			for (const c2 of dm.cpus)
				for (let i = 0; i < c2.marks.length; i += 5)
					pm[c2.marks[i]] += c2.marks[i + 2];
			ctx.fillStyle = MARKED;
			for (let x = 0; x < dm.w; x++)
				if (pm[x]) {
					const bh = Math.max(2, Math.log1p(pm[x]) / max * (h - 4));
					ctx.fillRect(LABEL + x / dm.w * pw, h - bh, Math.max(1, pw / dm.w), bh);
					lit++;
				}
		}
		hook.overviewMarked = dm ? lit : null;
	}
	const span = state.sum.span_ns, v = state.view;
	const x0 = LABEL + v.t0 / span * pw, x1 = LABEL + v.t1 / span * pw;
	ctx.fillStyle = 'rgba(255,179,0,0.3)';
	ctx.fillRect(x0, 0, Math.max(2, x1 - x0), h);
	ctx.strokeStyle = '#ff8f00';
	ctx.strokeRect(x0, 0.5, Math.max(2, x1 - x0), h - 1);
	ctx.fillStyle = '#333';
	ctx.font = '11px system-ui, sans-serif';
	ctx.fillText(`whole trace: ${seconds(span, span / 1000)} s`, 6, h / 2 + 4);
}

// The whole trace at the overview's width, under the filter.
function fetchOverview() {
	const w = Math.max(1, state.overview.clientWidth - LABEL);
	getWindow(0, state.sum.span_ns, w).then((d) => {
		state.overviewData = d;
		redraw();
	});
	fetchOverviewMarked();
}

// ---- the list (list.js): at the selected event while the view holds
// it, else at the view's middle ---------------------------------------

let listTimer = 0;
function fetchListSoon() {
	clearTimeout(listTimer);
	listTimer = setTimeout(() => {
		const sel = state.selected && state.selected.ts >= state.view.t0 &&
			state.selected.ts <= state.view.t1 ? state.selected : null;
		state.list.follow(sel ? sel.ts : (state.view.t0 + state.view.t1) / 2, sel);
	}, 150);
}

function fetchList(t) {
	state.list.follow(t, state.selected);
}

function showTab(id) {
	for (const b of document.querySelectorAll('#tabs button')) {
		b.classList.toggle('on', b.id === id);
		$(b.dataset.pane).hidden = b.id !== id;
	}
	fetchStatsSoon();
}

// The thread whose breakdown the statistics show: the selected event's,
// or that of a thread row clicked (its states, intervals, running strip).
function selectThread(tid) {
	if (tid === state.thread)
		return;
	state.thread = tid;
	fetchStatsSoon();
}

function select(e) {
	state.selected = e;
	hook.selected = e;
	selectThread(e.tid);
	showEvent($('details'), e, state.sum.names);
	redraw();
}

// A click in the list: that event, centred in the timeline.
function pickFromList(e) {
	select(e);
	const half = (state.view.t1 - state.view.t0) / 2;
	setView(e.ts - half, e.ts + half);
}

// What a hit is, in words, for the details and the tooltip: a title and
// rows; null for a mark (its event comes from the server).
function words(h, x) {
	if (h.kind === 'interval') {
		const typed = state.tl.typed, k = typed ? h.ikind - typed.base : -1;
		const kind = state.sum.kinds[h.ikind] ||
			(typed && typed.kinds[k] ? `typed: ${typed.kinds[k]}` : `kind ${h.ikind}`);
		const rows = [['thread', h.row.label], ['start', `${seconds(h.t0)} s`],
			['end', `${seconds(h.t1)} s`], ['duration', duration(h.t1 - h.t0)],
			['depth', h.depth]];
		if (!h.exact)
			rows.push(['note', 'short intervals, too many to draw one by one: ' +
				'the ends of the pixels where they begin; zoom in']);
		return { title: kind, rows };
	}
	if (h.kind === 'state')
		return { title: h.state.words, rows: stateRows(h) };
	if (h.kind === 'arrow') {
		const who = (tid) => tid ? `${state.sum.names[tid] || 'tid'} ${tid}` : 'idle';
		const rows = [['waker', `${who(h.waker)} on CPU ${h.cpu}`], ['wakee', who(h.wakee)],
			['woken at', `${seconds(h.t)} s`]];
		if (h.run >= 0)
			rows.push(['ran at', `${seconds(h.run)} s`], ['latency', duration(h.run - h.t)]);
		else
			rows.push(['ran at', 'not in the trace']);
		return { title: 'wakeup', rows };
	}
	if (h.kind === 'flow') {
		const who = (tid, cpu) => tid < 0 ? 'not in the trace' :
			`${state.sum.names[tid] || 'tid'} ${tid} on CPU ${cpu}`;
		const at = (t) => t < 0 ? 'not in the trace' : `${seconds(t)} s`;
		const rows = [['key', h.key], ['sender', who(h.sender, h.scpu)],
			['receiver', who(h.receiver, h.rcpu)], ['sent at', at(h.ts)],
			['received at', at(h.tr)]];
		if (h.ts >= 0 && h.tr >= 0)
			rows.push(['latency', duration(h.tr - h.ts)]);
		return { title: 'message', rows };
	}
	if (h.kind === 'slice')
		return { title: `CPU ${h.cpu}`, rows: [['running',
			`${state.sum.names[h.tid] || ''} ${h.tid}`], ['at', `${seconds(timeAt(x))} s`]] };
	return null;
}

// The first event of a mark, from the server.
async function markEvent(h) {
	const row = h.row.kind === 'cpu' ? `cpu=${h.row.id}` : `tid=${h.tid ?? h.row.id}`;
	const l = await get(`api/list?t=${h.ts}&before=0&after=1&${row}${filterQuery()}`);
	return l.events[0] || null;
}

// A click in the timeline: the event under it, and the list around it.
async function pickAt(x, y) {
	const h = state.tl.hit(x, y);
	if (!h)
		return;
	if (h.kind === 'mark') {
		const e = await markEvent(h);
		if (e) {
			select(e);
			fetchList(e.ts);
		}
		return;
	}
	const w = words(h, x);
	if (!w)
		return;
	if (h.row && h.row.kind === 'thread')
		selectThread(h.row.id);
	state.selected = null;
	showSpan($('details'), w.title, w.rows);
	if (h.kind === 'interval') {
		hook.selected = { interval: w.title };
		fetchList(h.t0);
	} else if (h.kind === 'arrow') {
		hook.selected = { arrow: [h.waker, h.wakee, h.t] };
	} else if (h.kind === 'flow') {
		hook.selected = { flow: [h.sender, h.receiver, h.ts, h.tr, h.key] };
	} else if (h.kind === 'state') {
		hook.selected = { state: h.state.name, t0: h.t0, t1: h.t1 };
	} else {
		hook.selected = { cpu: h.cpu, tid: h.tid };
	}
}

// ---- the tooltip: what is under the pointer, every field of an event ----

const tip = { hit: null, seq: 0, timer: 0, cache: new Map() };

function tipKey(h) {
	if (h.kind === 'arrow')
		return `arrow:${h.t}:${h.wakee}`;
	if (h.kind === 'flow')
		return `flow:${h.ts}:${h.tr}:${h.key}`;
	return `${h.kind}:${h.row.kind}:${h.row.id}:${h.x0 ?? h.x}:${h.ts ?? h.t0}`;
}

function showTip(title, rows, cx, cy) {
	const box = $('tip');
	box.innerHTML = spanHtml(title, rows);
	box.hidden = false;
	const w = box.offsetWidth, h = box.offsetHeight;
	box.style.left = `${Math.min(cx + 14, window.innerWidth - w - 4)}px`;
	box.style.top = `${cy + 16 + h > window.innerHeight ? cy - h - 8 : cy + 16}px`;
}

function hideTip() {
	$('tip').hidden = true;
	tip.hit = null;
	clearTimeout(tip.timer);
	hook.tip = null;
}

function hover(x, y, cx, cy) {
	const h = x > LABEL ? state.tl.hit(x, y) : null;
	if (!h || h.kind === 'row') {
		hideTip();
		return;
	}
	const key = tipKey(h);
	if (tip.hit === key) {
		showTip(tip.title, tip.rows, cx, cy); // follow the pointer
		return;
	}
	tip.hit = key;
	clearTimeout(tip.timer);
	const put = (title, rows) => {
		Object.assign(tip, { title, rows });
		showTip(title, rows, cx, cy);
		hook.tip = { kind: h.kind, title };
	};
	const w = words(h, x);
	if (w) {
		put(w.title, w.rows);
		return;
	}
	// a mark: its first event's fields, asked once the pointer rests
	$('tip').hidden = true;
	hook.tip = null;
	const many = h.count > 1 ? [['events here', h.count]] : [];
	const done = (e) => e ? put(e.name, [...many, ...eventRows(e, state.sum.names)]) :
		put(`${h.count} events`, []);
	if (tip.cache.has(key)) {
		done(tip.cache.get(key));
		return;
	}
	const seq = ++tip.seq;
	tip.timer = setTimeout(async () => {
		const e = await markEvent(h);
		if (tip.cache.size > 200)
			tip.cache.clear();
		tip.cache.set(key, e);
		if (seq === tip.seq && tip.hit === key)
			done(e);
	}, 60);
}

// A state strip's words: exact ends, or the pixels' when it sums a run
// of pixels by their dominant state.
function stateRows(h) {
	const rows = [['thread', h.row.label], ['state', h.state.words],
		['start', `${seconds(h.t0)} s`], ['duration', duration(h.t1 - h.t0)]];
	if (h.mixed)
		rows.push(['note', 'the state most of each pixel; others too']);
	return rows;
}


// The colours of the thread states, where the trace has them.
function legend(s) {
	const box = $('legend');
	if (!s.threads.some((t) => t.states)) {
		box.hidden = true;
		return;
	}
	box.hidden = false;
	box.textContent = '';
	for (const name of s.states) {
		const [c, words] = STATES[name];
		const item = document.createElement('span');
		item.className = 'state';
		item.dataset.state = name;
		const sw = document.createElement('i');
		sw.style.background = c;
		item.append(sw, words);
		box.append(item);
	}
}

// ---- search: the n-th match, found by the server -------------------------

const search = { q: null, n: 0, cur: null, rank: 0 };

// ---- filters: CPUs, processes, threads, event names, a field expression,
// applied by the server to the marks, the list and the search at once ---

function filterArgs(f = state.filter || {}) {
	const a = {};
	for (const k of ['cpus', 'pids', 'tids', 'ev', 'expr'])
		if (f[k])
			a[k] = f[k];
	return a;
}

function filterQuery(f) {
	const p = new URLSearchParams(filterArgs(f)).toString();
	return p ? `&${p}` : '';
}

const ids = (s) => s.split(/[\s,]+/).filter(Boolean).join(',');

async function applyFilter() {
	const f = { cpus: ids($('f-cpus').value), pids: ids($('f-pids').value),
		tids: ids($('f-tids').value),
		ev: $('f-ev').value.trim(), expr: $('f-expr').value.trim() };
	// the server checks it (a bad expression: 400 and why) before the
	// page's requests carry it
	const r = await fetch(`api/list?t=0&before=0&after=0${filterQuery(f)}`);
	if (!r.ok) {
		const why = (await r.json().catch(() => ({}))).error || `error ${r.status}`;
		$('f-said').textContent = why;
		hook.filter = { error: why };
		return;
	}
	state.filter = f;
	$('f-said').textContent = '';
	const on = (list) => list ? new Set(list.split(',').map(Number)) : null;
	state.tl.setFilter(on(f.cpus), on(f.tids), on(f.pids));
	Object.assign(search, { q: null, n: 0, cur: null, rank: 0 });
	hook.filter = { ...f, seq: (hook.filter?.seq || 0) + 1 };
	fetchOverview();
	setView(state.view.t0, state.view.t1);
}

// A query: a field expression when it has an operator, else an event
// name glob (a plain word: the names that contain it).
function searchArgs(q) {
	if (/[=<>!&|()]/.test(q))
		return { where: q };
	return { find: /[*?[]/.test(q) ? q : `*${q}*` };
}

async function find(dir) {
	const q = $('find').value.trim();
	if (!q)
		return;
	if (q !== search.q)
		Object.assign(search, { q, n: 0, cur: null, rank: 0 });
	if (dir < 0 && !search.cur)
		return;
	// next: the match after the current one (rank: those at its time
	// up to it); previous: the last before its time; the first: from
	// the trace's start, so that n counts matches in the whole trace
	const t = search.cur ? search.cur.ts : 0;
	const skip = search.cur && dir > 0 ? search.rank : 0;
	const p = new URLSearchParams({ t: Math.floor(t), dir, skip, ...filterArgs(),
		...searchArgs(q) });
	const r = await fetch(`api/search?${p}`);
	const a = await r.json();
	if (q !== search.q)
		return; // typed on meanwhile
	if (!r.ok) {
		$('found').textContent = a.error || `error ${r.status}`;
		hook.search = { error: a.error };
		return;
	}
	if (!a.match) {
		$('found').textContent = search.cur ? `match ${search.n}; no ${dir > 0 ? 'later' :
			'earlier'} one` : 'no match';
		hook.search = { n: search.n, match: search.cur, none: true };
		return;
	}
	search.cur = a.match;
	search.rank = a.rank;
	search.n += dir;
	$('found').textContent = `match ${search.n}`;
	hook.search = { n: search.n, match: a.match };
	pickFromList(a.match);
}

// ---- marked and counted (kmon): the events the mark field matches, drawn
// over the marks in their own colour and counted in the view, under the
// filter; one window request more per view, with the filter and the mark
// together, whose marks are those events' -----------------------------------

const mark = { q: '', seq: 0, lastSeq: 0 };

// An event name glob as fnmatch(3) without flags (the server's) reads it.
function globRe(g) {
	let re = '';
	for (let i = 0; i < g.length; i++) {
		const c = g[i], close = c === '[' ? g.indexOf(']', i + 2) : -1;
		if (c === '*')
			re += '.*';
		else if (c === '?')
			re += '.';
		else if (close > 0) {
			const set = g.slice(i + 1, close);
			re += `[${set[0] === '!' ? '^' + set.slice(1) : set}]`;
			i = close;
		} else
			re += c.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
	}
	return new RegExp(`^${re}$`);
}

// The window's parameters for the marked events: the filter's, AND-ed
// with the mark as the search box reads it. An expression joins the
// filter's with &&; a glob under the filter's globs (which the API ORs)
// becomes the names of the classes both keep; null: none can match.
function markArgs(q) {
	const a = filterArgs(), m = searchArgs(q);
	if (m.where)
		a.expr = a.expr ? `(${a.expr}) && (${m.where})` : m.where;
	else if (a.ev) {
		const re = globRe(m.find), kept = a.ev.split(',').map(globRe);
		const names = (state.sum.classes || []).filter((n) => re.test(n) &&
			kept.some((k) => k.test(n)));
		if (!names.length)
			return null;
		a.ev = names.map((n) => n.replace(/[*?[\\]/g, '\\$&')).join(',');
	} else
		a.ev = m.find;
	return a;
}

function showMarked(said, m) {
	$('mark-n').textContent = said;
	hook.marked = m;
	redraw();
}

// The marked events of the view: exact where the window was read (its
// CPU rows count every event kept, kernel and user), from the bins where
// it was too wide (whole bins at its ends); an expression, or a thread
// filter on the CPU rows, is in no bins: neither drawn nor counted then.
async function fetchMarked() {
	const seq = ++mark.seq, q = mark.q;
	if (!q) {
		state.tl.marked = null;
		mark.lastSeq = seq;
		showMarked('', null);
		return;
	}
	const v = state.view, w = state.tl.plotWidth();
	const t0 = Math.floor(v.t0), t1 = Math.ceil(v.t1), a = markArgs(q);
	if (!a) {
		state.tl.marked = null;
		mark.lastSeq = seq;
		showMarked('0 (the filter keeps none of these names)',
			{ q, t0, t1, n: 0, exact: true, filtered: true });
		return;
	}
	const asked = performance.now();
	const r = await fetch(`api/window?t0=${t0}&t1=${t1}&w=${w}&` +
		`${new URLSearchParams(a)}&marks=only&fmt=bin`);
	const d = r.ok ? decodeWindow(await r.arrayBuffer()) :
		await r.json().catch(() => ({ error: `error ${r.status}` }));
	if (seq < mark.lastSeq || q !== mark.q)
		return; // a newer answer is drawn, or the mark changed
	mark.lastSeq = seq;
	if (d.error) {
		state.tl.marked = null;
		showMarked(d.error, { q, error: d.error });
		return;
	}
	const ms = performance.now() - asked;
	if (!d.filtered) {
		state.tl.marked = null;
		showMarked('zoom in to mark and count (an expression is in no bins)',
			{ q, t0, t1, n: null, exact: false, filtered: false, ms });
		return;
	}
	let n = 0;
	for (const c of d.cpus)
		for (let i = 2; i < c.marks.length; i += 5)
			n += c.marks[i];
	state.tl.marked = d;
	showMarked(d.exact ? `${n} in view` : `≈ ${n} in view (from the bins: whole bins ` +
		'at the ends; zoom in for the exact count)',
	{ q, t0, t1, n, exact: d.exact, filtered: true, ms });
}

// The marked events over the whole trace at the overview's width (from
// the bins; nothing where they cannot count them: an expression).
async function fetchOverviewMarked() {
	const q = mark.q, a = q ? markArgs(q) : null;
	const w = Math.max(1, state.overview.clientWidth - LABEL);
	if (!a) {
		state.overviewMarked = null;
		redraw();
		return;
	}
	const r = await fetch(`api/window?t0=0&t1=${state.sum.span_ns}&w=${w}&` +
		`${new URLSearchParams(a)}&marks=only&fmt=bin`);
	if (!r.ok || q !== mark.q)
		return;
	const d = decodeWindow(await r.arrayBuffer());
	state.overviewMarked = d.filtered ? d : null;
	redraw();
}

function applyMark() {
	mark.q = $('mark').value.trim();
	fetchMarked();
	fetchOverviewMarked();
}

// ---- markers: placed with M (at the selected event, else the pointer) or
// a shift-click; a shift-click on one takes it away ----------------------

function toggleMarker(t, x) {
	const pw = state.tl.plotWidth(), v = state.view;
	const near = state.markers.findIndex((m) =>
		Math.abs((m - t) / (v.t1 - v.t0) * pw) <= 4 && x !== undefined);
	if (near >= 0)
		state.markers.splice(near, 1);
	else
		state.markers.push(Math.round(t));
	state.markers.sort((a, b) => a - b);
	const m = state.markers;
	$('markers').textContent = m.map((t, i) => `M${i + 1} ${seconds(t)} s`).concat(
		m.slice(1).map((t, i) => `M${i + 1}→M${i + 2} ${duration(t - m[i])}`)).join(' · ');
	hook.markers = [...m];
	redraw();
	fetchStatsSoon();
}

// ---- process rows: collapsed and expanded by a click on the header's
// name or C, sorted by the menu ---------------------------------------------

function showRows() {
	hook.sortBy = state.tl.sortBy;
	hook.collapsed = [...state.tl.collapsed].sort((a, b) => a - b);
	hideTip();
	redraw();
}

// C: the process of the row under the pointer (or of the selected event);
// with Shift, or with none, every process: collapsed if one is open.
function toggleRows(all) {
	const r = state.pointerY !== null ? state.tl.rowAt(state.pointerY) : null;
	const pid = r && r.kind === 'proc' ? r.id : r && r.kind === 'thread' ? r.pid :
		state.selected ? state.selected.pid : undefined;
	const procs = state.tl.rows.filter((q) => q.kind === 'proc');
	if (!all && procs.some((q) => q.id === pid)) {
		state.tl.toggle(pid);
	} else {
		const shut = procs.some((q) => !q.collapsed);
		for (const q of procs)
			state.tl.toggle(q.id, shut);
	}
	showRows();
}

// ---- export: the timeline as it is now, drawn by its own code as SVG ---

function download(blob, name) {
	const a = document.createElement('a');
	a.href = URL.createObjectURL(blob);
	a.download = name;
	document.body.append(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function exportSvg() {
	const tl = state.tl, svg = new SvgContext(tl.canvas.clientWidth, tl.height);
	tl.selected = state.selected;
	tl.markers = state.markers;
	tl.draw(state.view, svg);
	const text = svg.document(`strata view: ${state.sum.trace}, ${$('range').textContent}`);
	hook.svg = text.length;
	download(new Blob([text], { type: 'image/svg+xml' }), 'strata-view.svg');
}

// The same as a PNG image at the screen's resolution: every row, not only
// those the box shows, drawn by the same code onto a canvas of its own.
function exportPng() {
	const tl = state.tl, dpr = window.devicePixelRatio || 1;
	const c = document.createElement('canvas');
	c.width = Math.round(tl.canvas.clientWidth * dpr);
	c.height = Math.round(tl.height * dpr);
	const ctx = c.getContext('2d');
	ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
	tl.selected = state.selected;
	tl.markers = state.markers;
	tl.draw(state.view, ctx);
	// white under what is drawn, as the page shows it (not transparent)
	ctx.globalCompositeOperation = 'destination-over';
	ctx.fillStyle = '#fff';
	ctx.fillRect(0, 0, tl.canvas.clientWidth, tl.height);
	c.toBlob((blob) => {
		hook.png = blob ? blob.size : 0;
		if (blob)
			download(blob, 'strata-view.png');
	}, 'image/png');
}

// ---- keys and mouse, as Perfetto: W/S zoom, A/D pan ----------------------

// ---- the history of views: every zoom, the whole trace and a zoom to a
// selection are a step that Back (Backspace, Alt+Left) undoes and Forward
// (Shift+Backspace, Alt+Right) redoes; a new step drops the forward ones --

const HISTORY_MAX = 200;

function showHistory() {
	$('back').disabled = !state.history.length;
	$('fwd').disabled = !state.future.length;
	hook.history = { back: state.history.length, forward: state.future.length };
}

function go(t0, t1) {
	state.history.push(state.view);
	if (state.history.length > HISTORY_MAX)
		state.history.shift();
	state.future = [];
	setView(t0, t1);
	showHistory();
}

function back(dir) {
	const [from, to] = dir < 0 ? [state.history, state.future] : [state.future, state.history];
	if (!from.length)
		return;
	to.push(state.view);
	const v = from.pop();
	setView(v.t0, v.t1);
	showHistory();
}

function zoom(f, at) {
	const v = state.view;
	const c = at ?? (v.t0 + v.t1) / 2;
	go(c - (c - v.t0) * f, c + (v.t1 - c) * f);
}

// Shift-drag on the timeline: the range between press and pointer, drawn
// as a band, then zoomed to on release; with the statistics shown, kept
// as their range instead (Perfetto's area selection), until Escape or the
// next shift-drag.
function selectRange(x0, x1) {
	const a = timeAt(Math.max(LABEL, Math.min(x0, x1)));
	const b = timeAt(Math.max(LABEL, Math.max(x0, x1)));
	state.tl.range = { t0: a, t1: b };
	redraw();
	return state.tl.range;
}

function pan(frac) {
	const v = state.view, d = (v.t1 - v.t0) * frac;
	setView(v.t0 + d, v.t1 + d);
}

function timeAt(x) {
	const v = state.view;
	return v.t0 + (x - LABEL) / state.tl.plotWidth() * (v.t1 - v.t0);
}

function input() {
	const cv = $('timeline');
	$('find').addEventListener('keydown', (e) => {
		if (e.key === 'Enter') {
			find(e.shiftKey ? -1 : 1);
			e.preventDefault();
		}
	});
	$('next').addEventListener('click', () => find(1));
	$('mark').addEventListener('keydown', (e) => {
		if (e.key === 'Enter') {
			applyMark();
			e.preventDefault();
		}
	});
	$('mark').addEventListener('change', applyMark);
	$('mark-swatch').style.background = MARKED;
	$('export').addEventListener('click', exportSvg);
	$('export-png').addEventListener('click', exportPng);
	$('filters').addEventListener('submit', (e) => {
		e.preventDefault();
		applyFilter();
	});
	$('f-clear').addEventListener('click', () => {
		for (const k of ['f-cpus', 'f-pids', 'f-tids', 'f-ev', 'f-expr', 'f-sub'])
			$(k).value = '';
		applyFilter();
	});
	// a subsystem (the part of the event names before ':', as KernelShark
	// and Perfetto group them): its glob into the events field, applied
	$('f-sub').addEventListener('change', () => {
		const sub = $('f-sub').value;
		$('f-ev').value = sub ? `${sub}:*` : '';
		applyFilter();
	});
	$('f-ev').addEventListener('input', () => {
		const m = /^([^:,*?[\]\s]+):\*$/.exec($('f-ev').value.trim());
		$('f-sub').value = m && [...$('f-sub').options].some((o) => o.value === m[1]) ? m[1] : '';
	});
	$('prev').addEventListener('click', () => find(-1));
	for (const b of document.querySelectorAll('#tabs button'))
		b.addEventListener('click', () => showTab(b.id));
	$('st-kind').addEventListener('change', fetchStatsSoon);
	$('st-of').addEventListener('change', fetchStatsSoon);
	$('act-kind').addEventListener('change', fetchStatsSoon);
	$('act-rules').addEventListener('submit', (e) => {
		e.preventDefault();
		applyRules();
	});
	$('rows-by').addEventListener('change', () => {
		state.tl.sort($('rows-by').value);
		showRows();
	});
	$('arrows').addEventListener('change', () => {
		state.tl.showArrows = $('arrows').checked;
		redraw();
	});
	$('back').addEventListener('click', () => back(-1));
	$('fwd').addEventListener('click', () => back(1));
	document.addEventListener('keydown', (e) => {
		if (e.target.tagName === 'INPUT' || e.ctrlKey || e.metaKey)
			return;
		const k = e.key.toLowerCase();
		const hist = { backspace: e.shiftKey ? 1 : -1, arrowleft: e.altKey ? -1 : 0,
			arrowright: e.altKey ? 1 : 0 }[k];
		if (hist) {
			back(hist);
			e.preventDefault();
			return;
		}
		const acts = { w: () => zoom(0.7), '+': () => zoom(0.7), '=': () => zoom(0.7),
			s: () => zoom(1 / 0.7), '-': () => zoom(1 / 0.7),
			a: () => pan(-0.2), arrowleft: () => pan(-0.2),
			d: () => pan(0.2), arrowright: () => pan(0.2),
			0: () => go(0, state.sum.span_ns), home: () => go(0, state.sum.span_ns),
			end: followNewest,
			escape: () => {
				state.tl.range = null;
				hook.range = null;
				redraw();
				fetchStatsSoon();
			},
			c: () => toggleRows(e.shiftKey),
			m: () => state.selected ? toggleMarker(state.selected.ts) :
				state.pointer !== null && toggleMarker(state.pointer) };
		if (acts[k]) {
			acts[k]();
			e.preventDefault();
		}
	});
	cv.addEventListener('wheel', (e) => {
		e.preventDefault();
		const x = e.offsetX;
		if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY))
			pan((e.deltaX || e.deltaY) / 1000);
		else if (x > LABEL)
			zoom(Math.exp(e.deltaY / 300), timeAt(x));
	}, { passive: false });
	let drag = null;
	cv.addEventListener('mousedown', (e) => {
		drag = { x: e.offsetX, y: e.offsetY, v: state.view, moved: false,
			select: e.shiftKey && e.offsetX > LABEL };
		cv.focus();
	});
	cv.addEventListener('mousemove', (e) => {
		state.pointer = e.offsetX > LABEL ? timeAt(e.offsetX) : null;
		state.pointerY = e.offsetY;
		if (!drag)
			hover(e.offsetX, e.offsetY, e.clientX, e.clientY);
	});
	cv.addEventListener('mouseleave', () => {
		state.pointer = null;
		state.pointerY = null;
		hideTip();
	});
	window.addEventListener('mousemove', (e) => {
		if (!drag || !(e.buttons & 1))
			return;
		hideTip();
		const dx = e.clientX - cv.getBoundingClientRect().left - drag.x;
		if (Math.abs(dx) > 3)
			drag.moved = true;
		if (drag.moved && drag.select) {
			selectRange(drag.x, drag.x + dx);
		} else if (drag.moved) {
			const v = drag.v, d = dx / state.tl.plotWidth() * (v.t1 - v.t0);
			setView(v.t0 - d, v.t1 - d);
		}
	});
	window.addEventListener('mouseup', (e) => {
		if (drag && drag.moved && drag.select && state.tl.range &&
		    $('tab-stats').classList.contains('on')) {
			hook.range = state.tl.range;
			$('st-of').value = 'selection';
			fetchStatsSoon();
		} else if (drag && drag.moved && drag.select && state.tl.range) {
			const r = state.tl.range;
			state.tl.range = null;
			hook.range = r;
			go(r.t0, r.t1);
		} else if (drag && !drag.moved && e.target === cv && drag.x > LABEL && e.shiftKey)
			toggleMarker(timeAt(drag.x), drag.x);
		else if (drag && !drag.moved && e.target === cv && drag.x > LABEL)
			pickAt(drag.x, drag.y);
		else if (drag && !drag.moved && e.target === cv) {
			// a click on a process's name: collapse or expand it
			const r = state.tl.rowAt(drag.y);
			if (r && r.kind === 'proc') {
				state.tl.toggle(r.id);
				showRows();
			}
		}
		drag = null;
	});
	const ov = state.overview;
	const moveTo = (e) => {
		const pw = ov.clientWidth - LABEL;
		const t = (e.offsetX - LABEL) / pw * state.sum.span_ns;
		const half = (state.view.t1 - state.view.t0) / 2;
		setView(t - half, t + half);
	};
	ov.addEventListener('mousedown', moveTo);
	ov.addEventListener('mousemove', (e) => e.buttons & 1 && moveTo(e));
	window.addEventListener('resize', () => {
		redraw();
		fetchWindow();
		fetchMarked();
	});
	// the timeline draws the rows its box shows (timeline.js): a scroll
	// shows others
	$('timeline-box').addEventListener('scroll', redraw, { passive: true });
}

async function main() {
	initPanels({ state, hook, $, get, filterQuery, go, redraw });
	try {
		state.sum = await get('api/summary');
		if (state.sum.building) // the coarse paint until the model is ready
			state.sum = await awaitModel({ get, $, hook, sum: state.sum });
	} catch (err) {
		$('banner').hidden = false;
		$('banner').textContent = `the server did not answer: ${err.message}`;
		return;
	}
	const s = state.sum;
	describe(s);
	const warn = [];
	if (s.partial)
		warn.push('still being written: this is what was there when strata view ' +
			'started (strata view --live follows it)');
	if (s.lost_events || s.lost_packets)
		warn.push(`${s.lost_events} events and ${s.lost_packets} packets lost`);
	if (s.problems)
		warn.push(`${s.problems} problems reading the trace (damaged parts skipped; ` +
			'red ticks on the time axis mark where)');
	if (!s.have_sched)
		warn.push('no kernel sched_switch events: CPU rows show events only');
	if (warn.length) {
		$('banner').hidden = false;
		$('banner').textContent = warn.join(' · ');
	}
	legend(s);
	subsystems(s);
	s.kinds.forEach((k, i) => $('st-kind').add(new Option(k, i)));
	// the command's --activity rules first, then the trace's own kinds
	for (const i of [...s.activities, ...s.kinds.keys()].filter((k, j, all) =>
		all.indexOf(k) === j))
		$('act-kind').add(new Option(s.kinds[i], i));
	state.overview = $('overview');
	state.tl = new Timeline($('timeline'), s);
	state.list = initList({ get, filterQuery, hook, onPick: pickFromList,
		span: () => state.sum.span_ns },
		$('list-box'), $('list').tBodies[0], $('list-bar'));
	hook.summary = s;
	input();
	state.view = { t0: 0, t1: s.span_ns };
	fetchOverview();
	setView(0, s.span_ns);
	showHistory();
	showRows();
	initLive({ state, hook, $, get, go, setView, fetchOverview, describe });
	$('timeline').focus();
}

// The filter's subsystems: the event names' parts before ':' (strata's
// own records left out), in name order.
function subsystems(s) {
	const subs = [...new Set((s.classes || []).map((n) => n.split(':')[0])
		.filter((n) => n && n !== 'strata'))].sort();
	for (const sub of subs)
		$('f-sub').add(new Option(sub, sub));
	hook.subsystems = subs;
}

// The header's line on the trace (again as a live trace grows).
function describe(s) {
	$('trace').textContent = `${s.trace} · ${s.events} events · ${s.cpus.length} CPUs · ` +
		`${s.threads.length} threads`;
}

hook.colour = colour;
hook.go = (t0, t1) => go(t0, t1); // the tests' way to a view
main();
