// SPDX-License-Identifier: MIT
// strata view: the coarse paint while the server builds the model (docs/view.md, "Serve at once"): the packets' density per CPU, a banner with the build's progress, until the model is ready.
import { LABEL } from './timeline.js';

const ROW = 18; // a CPU row's height in the coarse paint, px
const POLL_MS = 300;

// Bytes per pixel as a shade: log scale against the busiest pixel.
function shade(v, max) {
	if (!v)
		return null;
	const f = Math.log1p(v) / Math.log1p(max);
	return `rgba(70, 110, 170, ${(0.15 + 0.85 * f).toFixed(3)})`;
}

function fit(canvas, height) {
	const w = Math.max(LABEL + 1, canvas.clientWidth);
	canvas.width = w;
	canvas.height = height;
	const g = canvas.getContext('2d');
	g.clearRect(0, 0, w, height);
	return { g, w: w - LABEL };
}

// One strip of density at y, h high; returns the pixels drawn.
function strip(g, bytes, y, h) {
	const max = Math.max(1, ...bytes);
	let n = 0;
	bytes.forEach((v, x) => {
		const c = shade(v, max);
		if (!c)
			return;
		g.fillStyle = c;
		g.fillRect(LABEL + x, y, 1, h);
		n++;
	});
	return n;
}

// The overview strip and one row per CPU, from api/overview.
function paint($, ov, drawn) {
	const top = fit($('overview'), $('overview').clientHeight || 40);
	drawn.overview = strip(top.g, ov.all, 0, top.g.canvas.height);
	const tl = fit($('timeline'), Math.max(60, 24 + ov.cpus.length * ROW));
	const g = tl.g;
	g.font = '12px sans-serif';
	g.fillStyle = '#555';
	g.fillText('coarse: bytes per pixel, from the packets (no events read yet)', LABEL, 14);
	drawn.cpus = ov.cpus.map((c, i) => {
		const y = 24 + i * ROW;
		g.fillStyle = '#333';
		g.fillText(`CPU ${c.cpu}`, 4, y + ROW - 5);
		return { cpu: c.cpu, y, pixels: strip(g, c.bytes, y, ROW - 2) };
	});
}

// While sum.building: paint coarsely, say the progress, and come back with
// the model's summary once the server has it. hook.building is the tests'.
export async function awaitModel({ get, $, hook, sum }) {
	const banner = $('banner');
	const b = hook.building = { shown: true, percent: 0, polls: 0, done: false,
		drawn: { overview: 0, cpus: [] }, span: sum.span_ns };
	const say = (s) => {
		b.percent = Math.floor(100 * (s.progress || 0));
		banner.hidden = false;
		banner.textContent = `building the summary: ${b.percent} % · ` +
			`${sum.packets} packets, ${(sum.bytes / 1048576).toFixed(1)} MiB` +
			(sum.lost_events ? ` · ${sum.lost_events} events lost` : '');
	};
	say(sum);
	const w = Math.max(1, $('overview').clientWidth - LABEL);
	try {
		paint($, await get(`api/overview?w=${w}`), b.drawn);
	} catch (err) {
		b.error = err.message; // the banner still says the progress
	}
	for (;;) {
		await new Promise((r) => setTimeout(r, POLL_MS));
		let s;
		try {
			s = await get('api/summary');
		} catch (err) {
			banner.textContent = `the server did not answer: ${err.message}`;
			b.error = err.message;
			throw err;
		}
		b.polls++;
		if (!s.building) {
			banner.hidden = true;
			banner.textContent = '';
			b.done = true;
			return s;
		}
		say(s);
	}
}
