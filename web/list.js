// SPDX-License-Identifier: MIT
// strata view: the event list under the timeline and the details panel.
import { seconds } from './timeline.js';

function esc(s) {
	return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;',
		'"': '&quot;' })[c]);
}

export const same = (a, b) => a && b && a.stream === b.stream && a.offset === b.offset;

// Rows of events; `at` marks the first event at or after the list's time.
export function renderList(tbody, events, nbefore, selected, onPick) {
	tbody.textContent = '';
	let scrollTo = null;
	events.forEach((e, i) => {
		const tr = document.createElement('tr');
		tr.innerHTML = `<td>${seconds(e.ts)}</td><td>${e.cpu}</td><td>${e.tid}</td>` +
			`<td>${esc(e.name)}</td><td>${esc(e.desc)}</td>`;
		if (i === nbefore)
			tr.className = 'now';
		if (same(e, selected)) {
			tr.classList.add('selected');
			scrollTo = tr;
		}
		tr.addEventListener('click', () => onPick(e));
		tbody.appendChild(tr);
		if (i === nbefore && !scrollTo)
			scrollTo = tr;
	});
	if (scrollTo)
		scrollTo.scrollIntoView({ block: 'center' });
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

export function showEvent(box, e, names) {
	box.innerHTML = `<h3 id="detail-name">${esc(e.name)}</h3>` + table(eventRows(e, names));
}

export function spanHtml(title, pairs) {
	return `<h3>${esc(title)}</h3>` + table(pairs);
}

export function showSpan(box, title, pairs) {
	box.innerHTML = `<h3 id="detail-name">${esc(title)}</h3>` + table(pairs);
}
