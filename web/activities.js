// SPDX-License-Identifier: MIT
// strata view: the activities tab — the intervals of a kind (an --activity rule's, or the trace's own), longest first or in time order.
import { duration, seconds } from './timeline.js';

function esc(s) {
	return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;',
		'"': '&quot;' })[c]);
}

// One /api/intervals answer as rows; a click on one calls onPick with it.
export function renderIntervals(box, a, names, onPick) {
	const note = (a.complete ? '' : ' (the first 200 000 intervals of the range read: ' +
		'zoom in for all)') + (a.more ? ` · the first ${a.intervals.length} shown` : '');
	const kinds = a.kinds && a.kinds.length > 1 ? a.kinds : null; // typed rules
	box.innerHTML = `<p id="act-count">${a.intervals.length} intervals in the view, ` +
		`${a.by ? 'in time order' : 'longest first'}${note}</p>` +
		'<table class="counts" id="act-table"><thead><tr>' +
		'<th data-by="1" title="sort by start">start (s)</th>' +
		'<th data-by="0" title="sort by duration, longest first">duration</th>' +
		'<th>thread</th><th>depth</th>' + (kinds ? '<th>rule</th>' : '') +
		'</tr></thead><tbody></tbody></table>';
	const tbody = box.querySelector('tbody');
	for (const iv of a.intervals) {
		const tr = document.createElement('tr');
		tr.innerHTML = `<td>${seconds(iv.begin)}</td><td class="n">${duration(iv.dur)}</td>` +
			`<td>${esc(`${names[iv.tid] || 'tid'} ${iv.tid}`)}</td><td class="n">${iv.depth}</td>` +
			(kinds ? `<td>${esc(kinds[iv.kind])}</td>` : '');
		tr.addEventListener('click', () => onPick(iv));
		tbody.append(tr);
	}
}
