// SPDX-License-Identifier: MIT
// strata view: api/window's binary form (docs/view.md, "The binary window") read into the JSON answer's shape.

const MAGIC = 0x42575653; // "SVWB", little-endian
const VERSION = 1;
const HEAD = 64;          // bytes before the preamble
// Each table's columns (src/view/wire.c): f float32, d float64, i int32,
// u uint32, b uint8; a row of a table is one flat list of the JSON.
const TABLES = ['ffib', 'ffbbdd', 'ffuuddb', 'uuudi', 'ddiuidd', 'ddiuiudd'];
const ARRAY = { f: Float32Array, d: Float64Array, i: Int32Array, u: Uint32Array, b: Uint8Array };
const pad = (n) => (n + 7) & ~7;

// The table's columns, viewed in place (each starts on 8 bytes), and a
// reader of its rows in order, each as the JSON's flat list.
function table(buf, at, rows, n, spec) {
	const counts = new Uint32Array(buf, at, rows);
	at += pad(4 * rows);
	const cols = [...spec].map((c) => {
		const a = new ARRAY[c](buf, at, n);
		at += pad(a.BYTES_PER_ELEMENT * n);
		return a;
	});
	let row = 0, first = 0, tmp = new Float64Array(0);
	const next = (extra = null) => {
		const k = counts[row++], nc = cols.length + (extra ? 1 : 0);
		// a Float64Array holds every column's values exactly; the
		// flows' keys are strings, so theirs is a plain array
		const out = extra ? new Array(k * nc) : new Float64Array(k * nc);
		if (tmp.length < k)
			tmp = new Float64Array(k);
		for (let c = 0; c < cols.length; c++) {
			// converted by the engine, then interleaved from one
			// type: a loop over the columns' five types was slower
			tmp.set(cols[c].subarray(first, first + k));
			for (let i = 0; i < k; i++)
				out[i * nc + c] = tmp[i];
		}
		for (let i = 0; extra && i < k; i++)
			out[i * nc + nc - 1] = extra[first + i];
		first += k;
		return out;
	};
	return { end: at, next };
}

// The answer (an ArrayBuffer) as api/window's JSON would be: the same
// fields, the lists as flat arrays of numbers (Float64Array but the
// flows'), pixels at float32's precision where the JSON has them to the
// hundredth.
export function decodeWindow(buf) {
	const dv = new DataView(buf);
	if (buf.byteLength < HEAD || dv.getUint32(0, true) !== MAGIC ||
	    dv.getUint32(4, true) !== VERSION || dv.getUint32(12, true) !== TABLES.length)
		throw new Error('api/window: not a binary window of version 1');
	const plen = dv.getUint32(8, true);
	const p = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, HEAD, plen)));
	let at = HEAD + pad(plen);
	const t = TABLES.map((spec, k) => {
		const tab = table(buf, at, dv.getUint32(16 + 8 * k, true),
			dv.getUint32(20 + 8 * k, true), spec);
		at = tab.end;
		return tab;
	});
	const [slices, states, ivs, marks, arrows, flows] = t;
	const d = { t0: p.t0, t1: p.t1, w: p.w, exact: p.exact, filtered: p.filtered,
		events: p.events, cpus: [], threads: [] };
	for (let i = 0; i < p.ncpus; i++)
		d.cpus.push({ cpu: i, slices: slices.next(), marks: null });
	for (const c of d.cpus) // the CPUs' marks, then the threads'
		c.marks = marks.next();
	for (const tid of p.tids)
		d.threads.push({ tid, running: slices.next(), states: states.next(),
			intervals: ivs.next(), marks: null });
	for (const th of d.threads)
		th.marks = marks.next();
	d.arrows = arrows.next();
	d.arrows_left = p.arrows_left;
	d.flows = flows.next(p.keys);
	d.flows_left = p.flows_left;
	return d;
}
