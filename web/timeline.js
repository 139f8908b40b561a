// SPDX-License-Identifier: MIT
// strata view: the timeline canvas — axis, CPU rows, thread rows — and what a click hits.

import { Raster } from './raster.js';

export const LABEL = 170;     // px of row names at the left
const AXIS = 22;              // px of time axis at the top
const CPU_H = 22, THREAD_H = 30, PROC_H = 18;

// The thread rows by process: [{pid, name, threads, events}], processes
// and their threads sorted by `by`: 'id' (pid, tid), 'events' (the trace's
// counts, most first) or 'view' (counts in `view`, a Map tid -> events).
export function groupProcesses(threads, names, by = 'id', view = null) {
	const procs = new Map();
	const count = (t) => by === 'view' ? (view && view.get(t.tid)) || 0 : t.events;
	for (const t of threads) {
		let p = procs.get(t.pid);
		if (!p)
			procs.set(t.pid, p = { pid: t.pid, name: names[t.pid] || '', threads: [], events: 0 });
		p.threads.push(t);
		p.events += count(t);
	}
	const list = [...procs.values()];
	const byId = (a, b) => a - b;
	for (const p of list) {
		p.name = p.name || p.threads[0].name || '';
		p.threads.sort((a, b) => by === 'id' ? byId(a.tid, b.tid) :
			count(b) - count(a) || byId(a.tid, b.tid));
	}
	return list.sort((a, b) => by === 'id' ? byId(a.pid, b.pid) :
		b.events - a.events || byId(a.pid, b.pid));
}

// The colours a draw sets, each string made once: a wide window draws tens
// of thousands of rectangles, and a new string per rectangle (built, then
// parsed) cost more than the rectangles themselves. Keyed by numbers:
// a key string would be a string per rectangle again.
const tidColours = new Map(), kindColours = new Map(), classColours = [], greys = [];
function memo(map, key, make) {
	let c = map.get(key);
	if (c === undefined) {
		if (map.size > 65536) // tids without end in a long session
			map.clear();
		map.set(key, c = make());
	}
	return c;
}

// A colour per thread: the same tid is the same colour on every row.
export function colour(tid, light = 60) {
	return memo(tidColours, tid * 128 + light,
		() => `hsl(${(tid * 137.508) % 360},55%,${light}%)`);
}

// An interval's colour: its kind's hue, darker as it nests deeper.
function kindColour(kind, light) {
	return memo(kindColours, kind * 128 + light,
		() => `hsl(${(kind * 83 + 200) % 360},45%,${light}%)`);
}

// A mark's: its event class's hue; from bins (class -1), grey as dark as
// the pixel is full (in hundredths).
function markColour(cls, n) {
	if (cls >= 0)
		return classColours[cls] || (classColours[cls] = `hsl(${(cls * 47) % 360},70%,32%)`);
	const a = Math.round(Math.min(1, 0.35 + Math.log10(n) / 4) * 100);
	return greys[a] || (greys[a] = `rgba(33,33,33,${a / 100})`);
}

// Thread states (the summary's `states`, analysis.h's bd_state): their
// colours, as KernelShark and Perfetto draw them, and words for people.
export const STATES = {
	running: ['#43a047', 'running'],
	syscall: ['#1e88e5', 'in a system call'],
	runnable: ['#c5e1a5', 'runnable (preempted or woken)'],
	sleeping: ['#cfd8dc', 'sleeping (S)'],
	io: ['#ff7043', 'I/O wait (D)'],
	irq: ['#8e24aa', 'in an interrupt handler'],
	unknown: ['#9e9e9e', 'unknown (the trace lost track)'],
};

const stateCache = new WeakMap(); // per summary: its states' list
export function stateOf(sum, i) {
	let known = stateCache.get(sum);
	if (!known)
		stateCache.set(sum, known = []);
	if (!known[i]) {
		const name = sum.states[i] || 'unknown';
		known[i] = { name, colour: (STATES[name] || STATES.unknown)[0],
			words: (STATES[name] || STATES.unknown)[1] };
	}
	return known[i];
}

export const MARKER = '#1565c0';
export const ARROW = '#d81b60';
export const FLOW = '#00897b'; // message arrows: not the wakeups' colour
export const MARKED = '#ffd600'; // the mark field's events: no state's, mark's or arrow's colour

// A duration in the unit that suits it.
export function duration(ns) {
	if (ns >= 1e9)
		return `${(ns / 1e9).toFixed(6)} s`;
	if (ns >= 1e6)
		return `${(ns / 1e6).toFixed(3)} ms`;
	return `${(ns / 1e3).toFixed(3)} us`;
}

// Seconds from the trace start, with the digits the step needs.
export function seconds(ns, step = 1) {
	const digits = Math.max(0, Math.min(9, Math.ceil(-Math.log10(step / 1e9))));
	return (ns / 1e9).toFixed(digits);
}

function niceStep(ns) {
	const p = 10 ** Math.floor(Math.log10(ns));
	for (const m of [1, 2, 5, 10])
		if (m * p >= ns)
			return m * p;
	return 10 * p;
}

export class Timeline {
	constructor(canvas, summary) {
		this.canvas = canvas;
		this.sum = summary;
		this.data = null;     // the last /api/window answer
		this.rows = [];       // {kind: 'cpu'|'thread', id, y, h, label}
		this.layers = [];     // what the last draw put where, for clicks (hit)
		this.raster = new Raster(); // the rows' pixels (raster.js)
		this.drawn = {};      // counts for the test hook
		this.collapsed = new Set(); // pids shown as one summary row
		this.sortBy = 'id';
		this.activity = null; // events per tid in the last window
		this.layout();
	}

	// Only these CPUs and threads (Sets; null: all), as the filter says.
	setFilter(cpus, tids, pids) {
		this.only = { cpus, tids, pids };
		this.data = null;
		this.layout();
	}

	layout() {
		let y = AXIS;
		const only = this.only || {};
		this.rows = [];
		for (const c of this.sum.cpus) {
			if (only.cpus && !only.cpus.has(c.cpu))
				continue;
			this.rows.push({ kind: 'cpu', id: c.cpu, y, h: CPU_H, label: `CPU ${c.cpu}` });
			y += CPU_H;
		}
		// the threads under their process's header row, in the order
		// the sort control asks for; a collapsed process is its header
		// alone, drawn as a summary of its threads
		const threads = this.sum.threads.filter((t) => (!only.tids || only.tids.has(t.tid)) &&
			(!only.pids || only.pids.has(t.pid)));
		for (const p of groupProcesses(threads, this.sum.names, this.sortBy, this.activity)) {
			const shut = this.collapsed.has(p.pid);
			this.rows.push({ kind: 'proc', id: p.pid, y, h: shut ? THREAD_H : PROC_H,
				label: `${shut ? '▸' : '▾'} ${p.name || 'pid'} ${p.pid}` +
					` · ${p.threads.length} thread${p.threads.length > 1 ? 's' : ''}`,
				collapsed: shut, tids: p.threads.map((t) => t.tid) });
			y += shut ? THREAD_H : PROC_H;
			if (shut)
				continue;
			for (const t of p.threads) {
				const label = `${t.name || 'tid'} ${t.tid}`;
				this.rows.push({ kind: 'thread', id: t.tid, pid: p.pid, y, h: THREAD_H, label });
				y += THREAD_H;
			}
		}
		this.height = y + 4;
	}

	// A process's header: shown with its threads under it, or collapsed
	// into one summary row.
	toggle(pid, shut = !this.collapsed.has(pid)) {
		if (shut)
			this.collapsed.add(pid);
		else
			this.collapsed.delete(pid);
		this.layout();
	}

	// Rows sorted by 'id' (pid, then tid), 'events' (in the trace) or
	// 'view' (in the last window's answer: its marks' counts).
	sort(by) {
		this.sortBy = by;
		this.layout();
	}

	// The events of each thread in the window answer d, for sorting by
	// the visible window's activity; true when the order changed.
	countView(d) {
		const a = new Map();
		for (const t of d.threads) {
			let n = 0;
			for (let i = 2; i < t.marks.length; i += 5)
				n += t.marks[i];
			a.set(t.tid, n);
		}
		this.activity = a;
		if (this.sortBy !== 'view')
			return false;
		const before = this.rows.map((r) => `${r.kind}${r.id}`).join();
		this.layout();
		return this.rows.map((r) => `${r.kind}${r.id}`).join() !== before;
	}

	// The canvas sized to its box, in device pixels; returns its CSS width.
	size() {
		const dpr = window.devicePixelRatio || 1;
		const w = this.canvas.clientWidth;
		this.canvas.style.height = `${this.height}px`;
		if (this.canvas.width !== Math.round(w * dpr) ||
		    this.canvas.height !== Math.round(this.height * dpr)) {
			this.canvas.width = Math.round(w * dpr);
			this.canvas.height = Math.round(this.height * dpr);
		}
		const ctx = this.canvas.getContext('2d');
		ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
		return w;
	}

	// Width in pixels of the time area, what /api/window is asked for.
	plotWidth() {
		return Math.max(1, this.canvas.clientWidth - LABEL);
	}

	// Onto the canvas, or onto `into` (a context of the same calls, e.g.
	// svg.js's for the export).
	draw(view, into = null) {
		const w = into ? this.canvas.clientWidth : this.size();
		const ctx = into || this.canvas.getContext('2d');
		const pw = w - LABEL;
		ctx.clearRect(0, 0, w, this.height);
		const xOf = (ns) => LABEL + (ns - view.t0) / (view.t1 - view.t0) * pw;
		this.layers = [];
		this.arrowHits = [];
		const drawn = { rows: this.rows.filter((r) => r.kind !== 'proc').length,
			procs: this.rows.filter((r) => r.kind === 'proc').length, summaries: 0, slices: 0, running: 0, marks: 0, intervals: 0,
			states: 0, exact: false, markList: [], arrows: 0, arrowList: [], typed: 0, typedList: [],
			flows: 0, flowList: [], flowsLeft: 0, marked: 0, markedList: [] };
		this.axis(ctx, view, pw, xOf);
		// the rows' rectangles: into a pixel buffer (raster.js), the band
		// of the canvas its box shows (the box's scroll redraws), then
		// onto the canvas at once; an export draws them as they are
		let dense = ctx;
		if (!into) {
			const box = this.canvas.parentElement;
			const top = Math.min(this.height - 1, Math.max(0, box.scrollTop));
			const bottom = Math.min(this.height, top + Math.max(1, box.clientHeight));
			this.raster.begin(w, top, bottom, window.devicePixelRatio || 1, LABEL);
			dense = this.raster;
		}
		for (const [i, r] of this.rows.entries()) {
			dense.fillStyle = i % 2 ? '#fafafa' : '#f0f3f5';
			dense.fillRect(LABEL, r.y, pw, r.h);
		}
		const d = this.data;
		let rowOf = null, dx = null;
		if (d) {
			// the answer's pixels are for its own window: map them onto
			// the view, so a pan draws at once with what is known
			dx = (x) => xOf(d.t0 + x / d.w * (d.t1 - d.t0));
			if (into) {
				ctx.save();
				ctx.beginPath();
				ctx.rect(LABEL, 0, pw, this.height);
				ctx.clip();
			}
			drawn.exact = d.exact;
			const rows = new Map(this.rows.map((r) => [`${r.kind}${r.id}`, r]));
			const byId = (kind, id) => rows.get(`${kind}${id}`);
			for (const c of d.cpus) {
				const r = byId('cpu', c.cpu);
				if (r)
					this.cpuRow(dense, r, c, dx, drawn);
			}
			const shut = new Map();
			for (const r of this.rows)
				if (r.kind === 'proc' && r.collapsed)
					for (const tid of r.tids)
						shut.set(tid, r);
			for (const t of d.threads) {
				const r = byId('thread', t.tid);
				if (r)
					this.threadRow(dense, r, t, dx, drawn);
				else if (shut.has(t.tid))
					this.summaryRow(dense, shut.get(t.tid), t, dx, drawn);
			}
			// an arrow to or from a thread of a collapsed process ends
			// on its summary row
			rowOf = (kind, id) => byId(kind, id) || (kind === 'thread' && shut.get(id));
			if (this.marked)
				this.markedMarks(dense, xOf, rowOf, drawn);
			if (this.typed)
				this.typedIntervals(dense, xOf, rowOf, drawn);
			if (into)
				ctx.restore();
		}
		if (!into)
			this.raster.end(ctx);
		if (d && this.showArrows !== false) {
			ctx.save();
			ctx.beginPath();
			ctx.rect(LABEL, 0, pw, this.height);
			ctx.clip();
			this.arrows(ctx, d, dx, rowOf, drawn);
			this.flows(ctx, d, dx, rowOf, drawn);
			ctx.restore();
		}
		this.labels(ctx);
		this.damage(ctx, view, xOf);
		if (this.selected) {
			const x = xOf(this.selected.ts);
			ctx.strokeStyle = '#e53935';
			ctx.beginPath();
			ctx.moveTo(x, AXIS);
			ctx.lineTo(x, this.height);
			ctx.stroke();
		}
		this.drawMarkers(ctx, view, xOf);
		if (this.range) {
			// a shift-drag's range, before it is zoomed to
			const a = Math.max(LABEL, xOf(this.range.t0)), b = xOf(this.range.t1);
			ctx.fillStyle = 'rgba(30,136,229,0.18)';
			ctx.fillRect(a, AXIS, Math.max(1, b - a), this.height - AXIS);
			ctx.fillStyle = '#1e88e5';
			ctx.fillRect(a, AXIS, 1, this.height - AXIS);
			ctx.fillRect(b - 1, AXIS, 1, this.height - AXIS);
			ctx.font = '11px system-ui, sans-serif';
			ctx.fillText(duration(this.range.t1 - this.range.t0), a + 3, AXIS + 11);
		}
		drawn.damage = this.drawnDamage;
		drawn.damageRanges = this.drawnRanges;
		if (!into)
			this.drawn = drawn;
	}

	axis(ctx, view, pw, xOf) {
		const step = niceStep((view.t1 - view.t0) / Math.max(1, pw / 90));
		ctx.fillStyle = '#fff';
		ctx.fillRect(0, 0, LABEL + pw, AXIS);
		ctx.fillStyle = '#333';
		ctx.strokeStyle = '#ccc';
		ctx.font = '11px system-ui, sans-serif';
		for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
			const x = xOf(t);
			ctx.beginPath();
			ctx.moveTo(x, AXIS - 6);
			ctx.lineTo(x, this.height);
			ctx.stroke();
			ctx.fillText(`${seconds(t, step)} s`, x + 2, AXIS - 8);
		}
	}

	// Lost events and damaged bytes (the summary's `damage`: [ts, kind,
	// count, from, to, cpu] each): a red tick on the axis where the
	// reader met it and a thin line down the rows; the range of its
	// stream it spoils, red over the axis and hatched across its CPU's
	// row (docs/view.md, "Damage and loss").
	damage(ctx, view, xOf) {
		const d = this.sum.damage || [];
		const cpuRow = (cpu) => this.rows.find((r) => r.kind === 'cpu' && r.id === cpu);
		let n = 0;
		this.drawnRanges = [];
		for (let i = 0; i < d.length; i += 6) {
			const [ts, , , from, to, cpu] = d.slice(i, i + 6);
			if (to < view.t0 || from > view.t1)
				continue;
			const x0 = Math.max(LABEL, xOf(from)), x1 = Math.max(x0 + 1, xOf(to));
			ctx.fillStyle = 'rgba(213,0,0,0.25)';
			ctx.fillRect(x0, AXIS - 4, x1 - x0, 4);
			const r = cpuRow(cpu);
			if (r && to > from) {
				ctx.fillStyle = 'rgba(213,0,0,0.18)';
				ctx.fillRect(x0, r.y, x1 - x0, r.h);
				if (this.drawnRanges.length < 50)
					this.drawnRanges.push({ cpu, x0, x1, y: r.y + r.h / 2 });
			}
			if (ts >= view.t0 && ts <= view.t1) {
				const x = xOf(ts);
				ctx.fillStyle = '#d50000';
				ctx.strokeStyle = 'rgba(213,0,0,0.35)';
				ctx.fillRect(x - 2, AXIS - 7, 4, 7);
				ctx.beginPath();
				ctx.moveTo(x, AXIS);
				ctx.lineTo(x, this.height);
				ctx.stroke();
			}
			n++;
		}
		this.drawnDamage = n;
	}

	// Markers (ns, in time order): a blue line down the rows each, named
	// on the axis, and the time between two neighbours over the axis.
	drawMarkers(ctx, view, xOf) {
		const ms = this.markers || [];
		ctx.save();
		ctx.font = '10px system-ui, sans-serif';
		ms.forEach((t, i) => {
			const x = xOf(t);
			if (t >= view.t0 && t <= view.t1) {
				ctx.fillStyle = MARKER;
				ctx.fillRect(Math.round(x) - 1, AXIS, 2, this.height - AXIS);
				ctx.fillRect(Math.round(x) - 8, 0, 16, 11);
				ctx.fillStyle = '#fff';
				ctx.fillText(`M${i + 1}`, Math.round(x) - 7, 9);
			}
			if (i === 0)
				return;
			const x0 = Math.max(LABEL, xOf(ms[i - 1])), x1 = Math.min(this.canvas.clientWidth, x);
			if (x1 <= x0)
				return;
			const label = `Δ ${duration(t - ms[i - 1])}`;
			const w = ctx.measureText(label).width;
			ctx.fillStyle = MARKER;
			ctx.fillRect(x0, 12, x1 - x0, 1);
			ctx.fillStyle = 'rgba(255,255,255,0.85)';
			ctx.fillRect((x0 + x1) / 2 - w / 2 - 2, 12, w + 4, 10);
			ctx.fillStyle = MARKER;
			ctx.fillText(label, (x0 + x1) / 2 - w / 2, 20);
		});
		ctx.restore();
	}

	labels(ctx) {
		ctx.fillStyle = '#fff';
		ctx.fillRect(0, AXIS, LABEL, this.height);
		for (const r of this.rows) {
			ctx.font = r.kind === 'proc' ? 'bold 12px system-ui, sans-serif' :
				'12px system-ui, sans-serif';
			if (r.kind === 'proc') {
				ctx.fillStyle = '#eceff1';
				ctx.fillRect(0, r.y, LABEL, r.h);
			}
			ctx.fillStyle = r.kind === 'cpu' ? '#37474f' : r.kind === 'proc' ? '#263238' :
				colour(r.id, 35);
			const x = r.kind === 'thread' ? 16 : 4;
			ctx.fillText(r.label.slice(0, r.kind === 'thread' ? 24 : 28), x, r.y + r.h / 2 + 4);
		}
	}

	cpuRow(ctx, r, c, dx, drawn) {
		const s = c.slices;
		for (let i = 0; i < s.length; i += 4) {
			const x0 = dx(s[i]), x1 = dx(s[i + 1]), tid = s[i + 2];
			ctx.fillStyle = s[i + 3] ? colour(tid, 75) : colour(tid);
			ctx.fillRect(x0, r.y + 2, Math.max(1, x1 - x0), r.h - 8);
		}
		drawn.slices += s.length / 4;
		this.layers.push({ kind: 'cpu', row: r, a: s, n: 4, dx, cpu: c.cpu });
		this.marks(ctx, r, c.marks, dx, drawn, r.y + r.h - 6, 5);
	}

	threadRow(ctx, r, t, dx, drawn) {
		// on a CPU (kernel sched_switch): a strip above the intervals,
		// its thread states over it where the server has them
		const run = t.running || [], st = t.states || [];
		if (!st.length)
			for (let i = 0; i < run.length; i += 4) {
				const x0 = dx(run[i]), x1 = dx(run[i + 1]);
				ctx.fillStyle = run[i + 3] ? '#a5d6a7' : '#43a047';
				ctx.fillRect(x0, r.y + 2, Math.max(1, x1 - x0), 3);
			}
		drawn.running += run.length / 4;
		this.layers.push({ kind: 'running', row: r, a: run, n: 4, dx, tid: r.id });
		// [x0, x1, state, mixed, from ns, to ns]: a mixed pixel (other
		// states in it too) lighter
		for (let i = 0; i < st.length; i += 6) {
			const x0 = dx(st[i]), x1 = dx(st[i + 1]), s = stateOf(this.sum, st[i + 2]);
			ctx.globalAlpha = st[i + 3] ? 0.55 : 1;
			ctx.fillStyle = s.colour;
			ctx.fillRect(x0, r.y + 1, Math.max(1, x1 - x0), 5);
		}
		ctx.globalAlpha = 1;
		drawn.states += st.length / 6;
		this.layers.push({ kind: 'states', row: r, a: st, n: 6, dx });
		const iv = t.intervals;
		for (let i = 0; i < iv.length; i += 7) {
			const x0 = dx(iv[i]), x1 = dx(iv[i + 1]), depth = Math.min(iv[i + 2], 3);
			ctx.fillStyle = kindColour(iv[i + 3], 62 - depth * 8);
			ctx.fillRect(x0, r.y + 8 + depth * 3, Math.max(1, x1 - x0), 10);
		}
		drawn.intervals += iv.length / 7;
		this.layers.push({ kind: 'intervals', row: r, a: iv, n: 7, dx, nest: true });
		this.marks(ctx, r, t.marks, dx, drawn, r.y + r.h - 12, 10);
	}

	// A collapsed process: each of its threads' answer drawn over one row,
	// the running strips and states of running or in a system call on top,
	// the intervals as bars of depth 0, the marks (per pixel: the server's
	// counts) each still its thread's, for a click to find its event.
	summaryRow(ctx, r, t, dx, drawn) {
		const run = t.running || [], st = t.states || [];
		ctx.fillStyle = '#43a047';
		for (let i = 0; i < run.length; i += 4) {
			const x0 = dx(run[i]), x1 = dx(run[i + 1]);
			ctx.fillRect(x0, r.y + 2, Math.max(1, x1 - x0), 5);
		}
		this.layers.push({ kind: 'running', row: r, a: run, n: 4, dx, tid: t.tid });
		for (let i = 0; i < st.length; i += 6) {
			const s = stateOf(this.sum, st[i + 2]);
			if (s.name !== 'running' && s.name !== 'syscall')
				continue;
			const x0 = dx(st[i]), x1 = dx(st[i + 1]);
			ctx.fillStyle = s.colour;
			ctx.fillRect(x0, r.y + 1, Math.max(1, x1 - x0), 5);
		}
		const iv = t.intervals;
		for (let i = 0; i < iv.length; i += 7) {
			const x0 = dx(iv[i]), x1 = dx(iv[i + 1]);
			ctx.fillStyle = kindColour(iv[i + 3], 70);
			ctx.fillRect(x0, r.y + 8, Math.max(1, x1 - x0), 8);
		}
		this.layers.push({ kind: 'intervals', row: r, a: iv, n: 7, dx, nest: false });
		this.marks(ctx, r, t.marks, dx, drawn, r.y + r.h - 12, 10, t.tid);
		drawn.summaries++;
	}

	// The intervals of the rules typed in the page ({begin, end, depth,
	// kind, tid} in ns, api/activity's), as threadRow draws the answer's:
	// nested bars on the begin's thread row, or its collapsed process's.
	typedIntervals(ctx, xOf, rowOf, drawn) {
		const t = this.typed;
		for (const iv of t.intervals) {
			const r = rowOf('thread', iv.tid);
			if (!r)
				continue;
			const kind = t.base + iv.kind, depth = r.kind === 'proc' ? 0 : iv.depth;
			const x0 = xOf(iv.begin), x1 = xOf(iv.end);
			const y = r.y + 8 + Math.min(depth, 3) * 3;
			ctx.fillStyle = kindColour(kind, 62 - Math.min(depth, 3) * 8);
			ctx.fillRect(x0, y, Math.max(1, x1 - x0), 10);
			this.layers.push({ kind: 'hit', row: r, n: 1, a: [{ kind: 'interval', row: r, x0,
				x1, y0: y, y1: y + 10, depth: iv.depth, ikind: kind, t0: iv.begin, t1: iv.end,
				exact: true }] });
			drawn.typed++;
			if (drawn.typedList.length < 50)
				drawn.typedList.push({ tid: iv.tid, x0, x1, y, rule: iv.kind });
		}
	}

	// Wakeups: flat [x0, x1, waker, cpu, wakee, t, run] from the waker's
	// row (its thread's, else the CPU's where it ran: idle, an interrupt)
	// to the wakee's at the time it next ran; both rows must be shown.
	arrows(ctx, d, dx, byId, drawn) {
		const a = d.arrows || [];
		ctx.save();
		ctx.strokeStyle = ARROW;
		for (let i = 0; i < a.length; i += 7) {
			const from = byId('thread', a[i + 2]) || byId('cpu', a[i + 3]);
			const to = byId('thread', a[i + 4]);
			if (!from || !to)
				continue;
			const x0 = dx(a[i]), x1 = dx(a[i + 1]);
			const y0 = from.y + from.h / 2, y1 = to.y + to.h / 2;
			this.arrow(ctx, x0, y0, x1, y1);
			const hit = { kind: 'arrow', x0, y0, x1, y1, waker: a[i + 2], cpu: a[i + 3],
				wakee: a[i + 4], t: a[i + 5], run: a[i + 6], from, to };
			this.arrowHits.push(hit);
			if (drawn.arrowList.length < 50)
				drawn.arrowList.push({ x0, y0, x1, y1, from: [from.kind, from.id],
					to: [to.kind, to.id], t: hit.t, run: hit.run });
			drawn.arrows++;
		}
		drawn.arrowsLeft = d.arrows_left || 0;
		ctx.restore();
	}

	// An arrow from (x0, y0) to (x1, y1), its head two strokes back
	// along the line.
	arrow(ctx, x0, y0, x1, y1) {
		const len = Math.hypot(x1 - x0, y1 - y0) || 1;
		const ux = (x1 - x0) / len, uy = (y1 - y0) / len;
		ctx.beginPath();
		ctx.moveTo(x0, y0);
		ctx.lineTo(x1, y1);
		ctx.moveTo(x1 - 6 * ux - 3 * uy, y1 - 6 * uy + 3 * ux);
		ctx.lineTo(x1, y1);
		ctx.lineTo(x1 - 6 * ux + 3 * uy, y1 - 6 * uy - 3 * ux);
		ctx.stroke();
	}

	// Messages: flat [x0, x1, sender, scpu, receiver, rcpu, ts, tr, key]
	// from the sender's row (its thread's, else its CPU's) to the
	// receiver's; an end not in the trace (tid -1, time -1) is at the
	// window's edge, on the other end's row.
	flows(ctx, d, dx, byId, drawn) {
		const a = d.flows || [];
		ctx.save();
		ctx.strokeStyle = FLOW;
		for (let i = 0; i < a.length; i += 9) {
			const row = (tid, cpu) => tid < 0 ? null : byId('thread', tid) || byId('cpu', cpu);
			let from = row(a[i + 2], a[i + 3]), to = row(a[i + 4], a[i + 5]);
			if ((a[i + 2] >= 0 && !from) || (a[i + 4] >= 0 && !to) || (!from && !to))
				continue;
			from = from || to;
			to = to || from;
			const x0 = dx(a[i]), x1 = dx(a[i + 1]);
			const y0 = from.y + from.h / 2, y1 = to.y + to.h / 2;
			this.arrow(ctx, x0, y0, x1, y1);
			const hit = { kind: 'flow', x0, y0, x1, y1, sender: a[i + 2], scpu: a[i + 3],
				receiver: a[i + 4], rcpu: a[i + 5], ts: a[i + 6], tr: a[i + 7],
				key: a[i + 8], from, to };
			this.arrowHits.push(hit);
			if (drawn.flowList.length < 50)
				drawn.flowList.push({ x0, y0, x1, y1, from: [from.kind, from.id],
					to: [to.kind, to.id], ts: hit.ts, tr: hit.tr, key: hit.key });
			drawn.flows++;
		}
		drawn.flowsLeft = d.flows_left || 0;
		ctx.restore();
	}

	// The mark field's events (kmon's "marked and counted"): the marks of
	// a second window answer, asked with the filter and the mark together,
	// drawn over the ordinary ones where they are, a little larger, in
	// their own colour; mapped from that answer's own window as the
	// ordinary marks are, so a pan draws them at once.
	markedMarks(ctx, xOf, rowOf, drawn) {
		const d = this.marked, dx = (x) => xOf(d.t0 + x / d.w * (d.t1 - d.t0));
		const rows = d.cpus.map((c) => [rowOf('cpu', c.cpu), c.marks, 6, 5]).concat(
			d.threads.map((t) => [rowOf('thread', t.tid), t.marks, 12, 10]));
		ctx.fillStyle = MARKED;
		for (const [r, m, up, h] of rows) {
			if (!r)
				continue;
			const y = r.y + r.h - up;
			for (let i = 0; i < m.length; i += 5) {
				const x = dx(m[i]), span = Math.max(1, dx(m[i] + m[i + 1]) - x);
				ctx.fillRect(x - 1, y - 2, Math.max(3, span + 2), h + 3);
				if (drawn.markedList.length < 200)
					drawn.markedList.push({ x: x + span / 2, y: y + h / 2, ts: m[i + 3],
						row: r.kind, id: r.id, count: m[i + 2] });
				drawn.marked++;
			}
		}
	}

	// Marks: flat [x, span, count, ts, class] (class -1: from bins).
	marks(ctx, r, m, dx, drawn, y, h, tid = undefined) {
		for (let i = 0; i < m.length; i += 5) {
			const x = dx(m[i]), span = Math.max(1, dx(m[i] + m[i + 1]) - x);
			ctx.fillStyle = markColour(m[i + 4], m[i + 2]);
			ctx.fillRect(x, y, Math.max(1.5, span), h);
			if (drawn.markList.length < 200)
				drawn.markList.push({ x: x + 0.5, y: y + h / 2, ts: m[i + 3],
					row: r.kind, id: r.id, count: m[i + 2], tid });
		}
		drawn.marks += m.length / 5;
		this.layers.push({ kind: 'marks', row: r, a: m, n: 5, dx, tid });
	}

	// The layer's i-th record as what a click hits, its pixels x0..x1 in
	// the view (as drawn); null when x is not within `near` px of it.
	hitOf(l, i, x, near) {
		const a = l.a, r = l.row;
		if (l.kind === 'hit') // made at the draw (typed intervals: few)
			return x >= a[i].x0 - near && x <= a[i].x1 + near ? a[i] : null;
		const x0 = l.dx(a[i]);
		const x1 = l.kind === 'marks' ? x0 + Math.max(1, l.dx(a[i] + a[i + 1]) - x0) :
			l.dx(a[i + 1]);
		if (x < x0 - near || x > x1 + near)
			return null;
		switch (l.kind) {
		case 'marks':
			return { kind: 'mark', row: r, x: x0, x1, ts: a[i + 3], count: a[i + 2],
				cls: a[i + 4], tid: l.tid };
		case 'cpu':
			return { kind: 'slice', row: r, x0, x1, tid: a[i + 2], cpu: l.cpu };
		case 'running':
			return { kind: 'slice', row: r, x0, x1, y0: r.y, y1: r.y + 7, tid: l.tid,
				cpu: a[i + 2] - 1 };
		case 'states':
			return { kind: 'state', row: r, x0, x1, y0: r.y, y1: r.y + 7,
				state: stateOf(this.sum, a[i + 2]), mixed: !!a[i + 3], t0: a[i + 4],
				t1: a[i + 5] };
		default: { // intervals: nested on a thread's row, flat on a summary
			const depth = a[i + 2];
			const y0 = l.nest ? r.y + 8 + Math.min(depth, 3) * 3 : r.y + 8;
			return { kind: 'interval', row: r, x0, x1, y0, y1: y0 + (l.nest ? 10 : 8),
				depth, ikind: a[i + 3], t0: a[i + 4], t1: a[i + 5], exact: !!a[i + 6] };
		}
		}
	}

	rowAt(y) {
		return this.rows.find((r) => y >= r.y && y < r.y + r.h);
	}

	// What is under (x, y): the nearest mark within 4 px, else an interval
	// or slice covering x.
	hit(x, y) {
		// an arrow within 3 px of the pointer first: it crosses rows
		for (const a of this.arrowHits || []) {
			const vx = a.x1 - a.x0, vy = a.y1 - a.y0, l2 = vx * vx + vy * vy || 1;
			const k = Math.max(0, Math.min(1, ((x - a.x0) * vx + (y - a.y0) * vy) / l2));
			if (Math.hypot(x - a.x0 - k * vx, y - a.y0 - k * vy) <= 3)
				return { ...a, row: a.to };
		}
		const r = this.rowAt(y);
		if (!r)
			return null;
		// the row's layers only, and a record only where it is near x
		const mine = this.layers.filter((l) => l.row === r);
		let best = null, bd = 5;
		for (const l of mine) {
			if (l.kind !== 'marks')
				continue;
			for (let i = 0; i < l.a.length; i += l.n) {
				const h = this.hitOf(l, i, x, 5);
				const d = h && (x < h.x ? h.x - x : x > h.x1 ? x - h.x1 : 0);
				if (h && d < bd) {
					bd = d;
					best = h;
				}
			}
		}
		if (best)
			return best;
		const cover = [];
		for (const l of mine) {
			if (l.kind === 'marks')
				continue;
			for (let i = 0; i < l.a.length; i += l.n) {
				const h = this.hitOf(l, i, x, 1);
				if (h)
					cover.push(h);
			}
		}
		// what is drawn under the pointer first (a state strip over a
		// slice), then the deepest interval
		const under = (h) => h.y0 !== undefined && y >= h.y0 && y < h.y1 ? 0 : 1;
		const rank = (h) => h.kind === 'state' ? 0 : 1;
		cover.sort((a, b) => under(a) - under(b) || rank(a) - rank(b) ||
			(b.depth || 0) - (a.depth || 0));
		return cover[0] || { kind: 'row', row: r };
	}
}
