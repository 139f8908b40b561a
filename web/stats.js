// SPDX-License-Identifier: MIT
// strata view: the statistics panel — events per name, CPU and thread in the view, and a histogram of an interval kind's durations.
import { duration, seconds } from './timeline.js';

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

// The panel for one /api/stats answer.
export function renderStats(box, a, sum) {
	const names = sum.names || {};
	const note = a.exact ? 'exact' : 'from the per-bin counts: whole bins at the ends' +
		(a.filtered ? '' : '; the expression (or a thread filter on CPUs) is not applied, zoom in');
	box.innerHTML = `<p id="st-range">${seconds(a.t0)} – ${seconds(a.t1)} s: ` +
		`<b id="st-events">${a.events}</b> events (${note})</p>` +
		'<div class="st-tables">' +
		counts('event', a.names.map((x) => [x.name, x.count])) +
		counts('CPU', a.cpus.map((x) => [`CPU ${x.cpu}`, x.count])) +
		counts('thread', a.threads.map((x) => [`${x.name || names[x.tid] || 'tid'} ${x.tid}`,
			x.count])) + '</div>' + histogram(a.durations);
}
