// SPDX-License-Identifier: MIT
// strata view: the statistics panel — events per name, CPU and thread in the view, and a histogram of an interval kind's durations.
import { STATES, duration, seconds } from './timeline.js';

function esc(s) {
	return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;',
		'"': '&quot;' })[c]);
}

// A table of [label, count] rows, largest first, each with a bar.
function counts(title, rows) {
	rows.sort((a, b) => b[1] - a[1]);
	const max = Math.max(1, ...rows.map((r) => r[1]));
	return `<table class="counts" data-of="${esc(title)}"><thead><tr><th>${esc(title)}</th>` +
		'<th>events</th><th></th></tr></thead><tbody>' + rows.map(([k, n]) =>
		`<tr><td>${esc(k)}</td><td class="n">${n}</td><td><i style="width:` +
		`${Math.max(1, Math.round(n / max * 120))}px"></i></td></tr>`).join('') +
		'</tbody></table>';
}

// The durations of the chosen kind: count, min, median, max, and one bar
// per log-scale bin ([lo, hi) ns, flat in the answer).
function histogram(du) {
	if (!du)
		return '<p class="hint">Choose an interval kind for its durations.</p>';
	if (!du.count)
		return '<p class="hint">No interval of this kind begins in the range.</p>';
	const h = du.hist, max = Math.max(1, ...h.filter((_, i) => i % 3 === 2));
	let s = `<p id="st-dur">${du.exact ? '' : '≈ '}${du.count} intervals · min ` +
		`${duration(du.min)} · median ${duration(du.median)} · max ${duration(du.max)}` +
		(du.exact ? '' : ` (every ${du.step}th read)`) + '</p><table class="hist">';
	for (let i = 0; i < h.length; i += 3)
		s += `<tr><td>${duration(h[i])} – ${duration(h[i + 1])}</td><td class="n">` +
			`${h[i + 2]}</td><td><i style="width:${Math.max(1, Math.round(h[i + 2] / max *
			160))}px"></i></td></tr>`;
	return s + '</table>';
}

// The selected thread's time per state over the range (api/breakdown:
// ns by the summary's `states`, then unseen), a bar each in its colour.
function breakdown(bd, sum) {
	if (!bd)
		return '<p class="hint">Select an event or click a thread\'s row for its breakdown.</p>';
	const who = `${esc(bd.name || (sum.names || {})[bd.tid] || 'tid')} ${bd.tid}`;
	if (!bd.have_states)
		return `<p id="st-bd">${who}: no states in the trace for this thread</p>`;
	const total = Math.max(1, bd.t1 - bd.t0);
	const rows = sum.states.map((name, i) => [name, bd.ns[i]]).concat([['unseen', bd.ns.at(-1)]])
		.filter(([, ns]) => ns > 0);
	return `<p id="st-bd">breakdown of ${who}, the states of strata breakdown:</p>` +
		'<table class="counts" id="st-bd-table"><tbody>' + rows.map(([name, ns]) => {
			const [c, words] = STATES[name] || ['#eceff1', 'not seen (before its first ' +
				'event, after its exit)'];
			return `<tr data-state="${name}"><td>${esc(words)}</td><td class="n">` +
				`${duration(ns)}</td><td class="n">${(ns / total * 100).toFixed(1)}%</td>` +
				`<td><i style="background:${c};width:${Math.max(1, Math.round(ns / total *
				160))}px"></i></td></tr>`;
		}).join('') + '</tbody></table>' + syscalls(bd, total);
}

// Its system calls over the range (api/breakdown's `syscalls`: the time
// of each inside the range, the calls that began and ended there), the
// most time first; null when the range is too wide to read.
function syscalls(bd, total) {
	if (bd.syscalls === undefined)
		return '';
	if (bd.syscalls === null)
		return '<p class="hint" id="st-sc">its system calls: zoom in to read them</p>';
	if (!bd.syscalls.length)
		return '<p class="hint" id="st-sc">no system call in the range</p>';
	return '<p id="st-sc">its system calls (time in the range, calls begun and ended there):</p>' +
		'<table class="counts" id="st-sc-table"><tbody>' + bd.syscalls.map((c) =>
			`<tr data-nr="${c.nr}"><td>${esc(c.name || `#${c.nr}`)}${c.open ? ' (open at the end)' : ''}` +
			`</td><td class="n">${c.count}</td><td class="n">${duration(c.ns)}</td>` +
			`<td><i style="background:${STATES.syscall[0]};width:${Math.max(1,
				Math.round(c.ns / total * 160))}px"></i></td></tr>`).join('') +
		'</tbody></table>';
}

// The panel for one /api/stats answer, and the selected thread's
// /api/breakdown answer (or null).
export function renderStats(box, a, sum, bd = null) {
	const names = sum.names || {};
	const note = a.exact ? 'exact' : 'from the per-bin counts: whole bins at the ends' +
		(a.filtered ? '' : '; the expression (or a thread filter on CPUs) is not applied, zoom in');
	box.innerHTML = `<p id="st-range">${seconds(a.t0)} – ${seconds(a.t1)} s: ` +
		`<b id="st-events">${a.events}</b> events (${note})</p>` +
		'<div class="st-tables">' +
		counts('event', a.names.map((x) => [x.name, x.count])) +
		counts('CPU', a.cpus.map((x) => [`CPU ${x.cpu}`, x.count])) +
		counts('thread', a.threads.map((x) => [`${x.name || names[x.tid] || 'tid'} ${x.tid}`,
			x.count])) + '</div>' + histogram(a.durations) +
		(sum.have_sched ? breakdown(bd, sum) : '');
}
