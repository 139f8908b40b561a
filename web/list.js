// SPDX-License-Identifier: MIT
// strata view: the virtualised event list under the timeline (every event of the trace, paged from the server) and the details panel.
import { seconds } from './timeline.js';

function esc(s) {
	return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;',
		'"': '&quot;' })[c]);
}

export const same = (a, b) => a && b && a.stream === b.stream && a.offset === b.offset;

// What the list needs of main.js ({ get, filterQuery, hook, onPick, span }),
// given once by initList.
let page = null;

const PAGE = 300;     // events a request asks for (the server's most: 1000)
const KEEP = 3000;    // events held at most: the far end is dropped past it
const BAR = 10000;    // the scroll bar's range, in its own pixels

// The list holds a window of the trace's events (buf, in print's order),
// shows `rows` of them from `top`, and pages more in as it scrolls, each
// page anchored on the event at the end it grows (docs/view.md, "List"):
// so it scrolls from the first event to the last of any trace, one page
// at a time, and a jump of the scroll bar asks for a position instead.
class EventList {
	constructor(box, tbody, bar) {
		Object.assign(this, { box, tbody, bar, buf: [], top: 0, atStart: false,
			atEnd: false, first: 0, total: 0, selected: null, query: null,
			work: Promise.resolve(), barAt: -1 });
		box.addEventListener('wheel', (e) => {
			e.preventDefault();
			const n = Math.round(e.deltaY / this.rowHeight()) || Math.sign(e.deltaY);
			this.run(() => this.scroll(n));
		}, { passive: false });
		box.addEventListener('keydown', (e) => this.key(e));
		// a resize, or the tab shown again: as many rows as now fit
		new ResizeObserver(() => this.buf.length && this.run(() => this.settle())).observe(box);
		bar.addEventListener('scroll', () => {
			if (Math.abs(bar.scrollTop - this.barAt) < 1)
				return; // the list placed it
			clearTimeout(this.barTimer);
			this.barTimer = setTimeout(() => {
				const max = bar.scrollHeight - bar.clientHeight;
				this.run(() => this.jump(max > 0 ? bar.scrollTop / max : 0));
			}, 60);
		});
	}

	// One change at a time, in the order asked: each reads what the one
	// before left.
	run(fn) {
		this.work = this.work.then(fn).catch((err) => {
			this.tbody.innerHTML = `<tr><td colspan="5">${esc(err.message)}</td></tr>`;
		});
		return this.work;
	}

	rowHeight() {
		const r = this.tbody.rows[0];
		return r && r.offsetHeight > 4 ? r.offsetHeight : 18;
	}

	rows() {
		const head = this.box.querySelector('thead');
		const h = this.box.clientHeight - (head ? head.offsetHeight : 20);
		return Math.max(1, Math.floor(h / this.rowHeight()));
	}

	async fetch(args) {
		const q = page.filterQuery();
		const l = await page.get(`api/list?${args}${q}`);
		this.query = q;
		this.total = l.total;
		return l;
	}

	// A fresh window from one answer; `at`: the buffer's row to show.
	fill(l, nbefore, nafter, at) {
		this.buf = l.events;
		this.atStart = l.before < nbefore;
		this.atEnd = l.events.length - l.before < nafter;
		this.first = l.index - l.before;
		this.top = at(l);
	}

	// The events around time t (ns), or around the event sel; the
	// selected row a third down, as a debugger's source view shows it.
	async goTo(t, sel) {
		const anchor = sel ? `&stream=${sel.stream}&offset=${sel.offset}` : '';
		const at = sel ? sel.ts : Math.floor(t);
		const l = await this.fetch(`t=${at}&before=${PAGE}&after=${PAGE}${anchor}`);
		this.fill(l, PAGE, PAGE, (a) => a.before - Math.floor(this.rows() / 3));
		await this.settle();
	}

	// The first or the last event of the list (Home, End).
	async home() {
		this.fill(await this.fetch(`t=0&before=0&after=${PAGE}`), 0, PAGE, () => 0);
		this.atStart = true;
	}

	async end() {
		// the events at the last ns come after t: `after` holds them
		const l = await this.fetch(`t=${page.span()}&before=${PAGE}&after=1000`);
		this.fill(l, PAGE, 1001, (a) => a.events.length);
		this.atEnd = true;
	}

	// The scroll bar dragged to fraction f of the list: without a filter,
	// the trace's event at that position (exact); with one, the time at
	// that fraction of the trace, as the thumb shows it (the bins count
	// no filter's events).
	async jump(f) {
		const filtered = page.filterQuery() !== '';
		const l = await this.fetch(filtered ? `t=${Math.floor(f * page.span())}&before=${PAGE}` +
			`&after=${PAGE}` : `index=${Math.floor(f * this.total)}&before=${PAGE}&after=${PAGE}`);
		this.fill(l, PAGE, PAGE, (a) => a.before);
		await this.settle();
	}

	// More events past either end of the buffer, anchored on its last
	// (which the answer repeats first) or its first; the far end dropped
	// past KEEP.
	async more(forward) {
		if (forward) {
			const e = this.buf[this.buf.length - 1];
			const l = await this.fetch(`t=${e.ts}&stream=${e.stream}&offset=${e.offset}` +
				`&before=0&after=${PAGE + 1}`);
			this.buf.push(...l.events.slice(1));
			this.atEnd = l.events.length < PAGE + 1;
		} else {
			const e = this.buf[0];
			const l = await this.fetch(`t=${e.ts}&stream=${e.stream}&offset=${e.offset}` +
				`&before=${PAGE}&after=0`);
			this.buf.unshift(...l.events);
			this.top += l.events.length;
			this.first -= l.events.length;
			this.atStart = l.before < PAGE;
		}
		const drop = this.buf.length - KEEP;
		if (drop > 0 && forward) {
			this.buf.splice(0, drop);
			this.top -= drop;
			this.first += drop;
			this.atStart = false;
		} else if (drop > 0) {
			this.buf.length = KEEP;
			this.atEnd = false;
		}
	}

	// Rows top..top+rows in the buffer, paging in what they need.
	async settle() {
		const n = this.rows();
		if (this.query !== null && this.query !== page.filterQuery())
			return this.goTo(0, null); // the filter changed under it
		while (this.top < 0 && !this.atStart && this.buf.length)
			await this.more(false);
		while (this.top + n > this.buf.length && !this.atEnd && this.buf.length)
			await this.more(true);
		this.top = Math.max(0, Math.min(this.top, this.buf.length - n));
		this.render();
	}

	async scroll(k) {
		this.top += k;
		await this.settle();
	}

	// The selection moved by k rows (arrows, page up and down), or to
	// either end: it is picked as a click picks it (the timeline follows).
	async move(k) {
		let i = this.buf.findIndex((e) => same(e, this.selected));
		if (i < 0)
			i = k > 0 ? this.top - 1 : this.top + this.rows();
		i += k;
		while (i >= this.buf.length && !this.atEnd) {
			const first = this.first;
			await this.more(true);
			i -= this.first - first;
		}
		while (i < 0 && !this.atStart) {
			const first = this.first;
			await this.more(false);
			i += first - this.first;
		}
		i = Math.max(0, Math.min(i, this.buf.length - 1));
		if (i < this.top)
			this.top = i;
		else if (i >= this.top + this.rows())
			this.top = i - this.rows() + 1;
		await this.settle();
		this.pick(this.buf[i]);
	}

	async edge(last) {
		await (last ? this.end() : this.home());
		await this.settle();
		this.pick(this.buf[last ? this.buf.length - 1 : 0]);
	}

	pick(e) {
		if (!e)
			return;
		this.selected = e;
		this.render();
		page.onPick(e);
	}

	key(e) {
		const n = this.rows();
		const acts = { ArrowDown: () => this.move(1), ArrowUp: () => this.move(-1),
			PageDown: () => this.move(n), PageUp: () => this.move(-n),
			Home: () => this.edge(false), End: () => this.edge(true) };
		if (!acts[e.key] || e.ctrlKey || e.metaKey || e.altKey)
			return;
		// the list's keys, not the timeline's (main.js listens on the document)
		e.preventDefault();
		e.stopPropagation();
		this.run(acts[e.key]);
	}

	// Whether e is among the rows shown.
	shows(e) {
		const i = this.buf.findIndex((x) => same(x, e));
		return i >= this.top && i < this.top + this.rows();
	}

	// The view moved (or an event was picked elsewhere): the list goes to
	// the selected event unless it already shows it, else to time t.
	follow(t, sel) {
		this.selected = sel || null;
		return this.run(() => {
			if (sel && this.shows(sel) && this.query === page.filterQuery())
				return this.render();
			return this.goTo(t, sel);
		});
	}

	render() {
		const n = this.rows(), tb = this.tbody;
		const shown = this.buf.slice(Math.max(0, this.top), Math.max(0, this.top) + n);
		tb.textContent = '';
		for (const e of shown) {
			const tr = document.createElement('tr');
			tr.innerHTML = `<td>${seconds(e.ts)}</td><td>${e.cpu}</td><td>${e.tid}</td>` +
				`<td>${esc(e.name)}</td><td>${esc(e.desc)}</td>`;
			if (same(e, this.selected))
				tr.className = 'selected';
			tr.addEventListener('click', () => {
				this.box.focus({ preventScroll: true });
				this.pick(e);
			});
			tb.appendChild(tr);
		}
		// the thumb: the first row's place among the trace's events
		// (by time under a filter: the bins count none of its events)
		const f = !shown.length ? 0 : this.atEnd && this.top + n >= this.buf.length ? 1 :
			page.filterQuery() ? shown[0].ts / Math.max(1, page.span()) :
				(this.first + this.top) / Math.max(1, this.total - n);
		const max = this.bar.scrollHeight - this.bar.clientHeight;
		this.barAt = Math.round(Math.min(1, Math.max(0, f)) * max);
		this.bar.scrollTop = this.barAt;
		page.hook.list = shown.length;
		page.hook.listFirst = shown[0] ? shown[0].ts : null;
		page.hook.listRows = shown.map((e) => [e.ts, e.stream, e.offset]);
		page.hook.listAt = { top: this.first + this.top, total: this.total,
			start: this.atStart && this.top <= 0,
			end: this.atEnd && this.top + n >= this.buf.length };
	}
}

let list = null;

export function initList(p, box, tbody, bar) {
	page = p;
	bar.firstElementChild.style.height = `${BAR}px`;
	list = new EventList(box, tbody, bar);
	return list;
}

function table(pairs) {
	return '<table>' + pairs.map(([k, v]) =>
		`<tr><td>${esc(k)}</td><td>${esc(v)}</td></tr>`).join('') + '</table>';
}

// An event's rows: where and when, then every field.
export function eventRows(e, names) {
	const f = Object.entries(e.fields).map(([k, v]) =>
		[k, typeof v === 'object' ? JSON.stringify(v) : v]);
	return [['time', `${seconds(e.ts)} s`], ['cpu', e.cpu],
		['thread', `${names[e.tid] || ''} ${e.tid} (pid ${e.pid})`],
		['description', e.desc], ...f, ...(e.damaged ? [['payload', 'damaged']] : [])];
}

let chainSeq = 0;

// A sample's call chain, symbolized by the server (api/event), under its
// fields: the interrupted function first, then its callers.
async function showChain(box, e) {
	const seq = ++chainSeq;
	page.hook.chain = null;
	const a = await page.get(`api/event?t=${e.ts}&stream=${e.stream}&offset=${e.offset}`);
	if (seq !== chainSeq || !a.chain)
		return;
	const frames = a.chain.map((f) => f.frame);
	const div = document.createElement('div');
	div.id = 'chain';
	div.innerHTML = '<h3>call chain</h3>' + (a.symbols ?
		`<p class="hint">${esc(a.symbols)}: addresses only</p>` : '') +
		'<ol>' + a.chain.map((f) => `<li title="${esc(f.addr)}">${esc(f.frame)}</li>`)
		.join('') + '</ol>';
	box.appendChild(div);
	page.hook.chain = frames;
}

export function showEvent(box, e, names) {
	box.innerHTML = `<h3 id="detail-name">${esc(e.name)}</h3>` + table(eventRows(e, names));
	chainSeq++;
	if (page && e.name.startsWith('sample:'))
		showChain(box, e).catch((err) => {
			box.insertAdjacentHTML('beforeend', `<p class="hint">call chain: ${esc(err.message)}</p>`);
		});
}

export function spanHtml(title, pairs) {
	return `<h3>${esc(title)}</h3>` + table(pairs);
}

export function showSpan(box, title, pairs) {
	chainSeq++;
	box.innerHTML = `<h3 id="detail-name">${esc(title)}</h3>` + table(pairs);
}
