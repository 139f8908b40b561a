// SPDX-License-Identifier: MIT
// strata view: rectangles filled into a pixel buffer, for the timeline's dense rows.
//
// A wide window is tens of thousands of rectangles a pixel or a few wide
// (states, intervals, marks: docs/view.md, "Speed"). The canvas's fillRect
// costs about a microsecond each, as a call into the renderer with its
// state, and a draw of 27 000 of them took 25-45 ms on the main thread,
// where the next answer waited for it. Here the same calls fill a
// Uint32Array, a row of pixels at a time (TypedArray.fill where the colour
// is opaque), and one putImageData hands the band to the canvas.
//
// Only what the rows use: fillStyle (any CSS colour, parsed once by a
// canvas of one pixel and remembered), globalAlpha, fillRect, in CSS
// pixels scaled by the device's ratio with edges on whole device pixels,
// clipped to a band of the canvas.

const parsed = new Map();
let probe = null;

// A CSS colour as [r, g, b, a] (a in 0..1), as the canvas itself reads it.
function parse(style) {
	let c = parsed.get(style);
	if (c)
		return c;
	if (!probe) {
		const cv = document.createElement('canvas');
		cv.width = cv.height = 1;
		probe = cv.getContext('2d', { willReadFrequently: true });
	}
	probe.clearRect(0, 0, 1, 1);
	probe.fillStyle = '#000';
	probe.fillStyle = style;
	// the colour's own alpha: drawn over nothing, the pixel keeps it
	// (premultiplied, then unpremultiplied by getImageData: the colour
	// read back may differ by one in a channel where a < 1)
	probe.fillRect(0, 0, 1, 1);
	const d = probe.getImageData(0, 0, 1, 1).data;
	c = [d[0], d[1], d[2], d[3] / 255];
	if (parsed.size > 4096)
		parsed.clear();
	parsed.set(style, c);
	return c;
}

export class Raster {
	constructor() {
		this.img = null;
		this.px = null;
		this.fillStyle = '#000';
		this.globalAlpha = 1;
	}

	// A band of the canvas: CSS pixels [0, w) x [top, bottom), cleared
	// to transparent; x below clipX (the row names) is left alone.
	begin(w, top, bottom, dpr, clipX) {
		const W = Math.max(1, Math.round(w * dpr));
		const H = Math.max(1, Math.round((bottom - top) * dpr));
		if (!this.img || this.img.width !== W || this.img.height !== H) {
			this.img = new ImageData(W, H);
			this.px = new Uint32Array(this.img.data.buffer);
		} else {
			this.px.fill(0);
		}
		this.W = W;
		this.H = H;
		this.dpr = dpr;
		this.top = top;
		this.clip = Math.round(clipX * dpr);
		this.fillStyle = '#000';
		this.globalAlpha = 1;
	}

	fillRect(x, y, w, h) {
		const dpr = this.dpr, W = this.W;
		let x0 = Math.round(x * dpr), x1 = Math.round((x + w) * dpr);
		let y0 = Math.round((y - this.top) * dpr), y1 = Math.round((y - this.top + h) * dpr);
		if (x1 <= x0)
			x1 = x0 + 1;
		if (y1 <= y0)
			y1 = y0 + 1;
		if (x0 < this.clip)
			x0 = this.clip;
		if (x1 > W)
			x1 = W;
		if (y0 < 0)
			y0 = 0;
		if (y1 > this.H)
			y1 = this.H;
		if (x0 >= x1 || y0 >= y1)
			return;
		const [r, g, b, ca] = parse(this.fillStyle);
		const a = ca * this.globalAlpha, px = this.px;
		if (a >= 1) {
			// ImageData's bytes are R, G, B, A: little-endian words
			const v = (0xff000000 | (b << 16) | (g << 8) | r) >>> 0;
			for (let row = y0; row < y1; row++)
				px.fill(v, row * W + x0, row * W + x1);
			return;
		}
		if (a <= 0)
			return;
		// over what is there (source-over); the rows' backgrounds are
		// opaque, a transparent pixel (none under it) takes the colour
		const k = 1 - a, ra = r * a, ga = g * a, ba = b * a;
		for (let row = y0; row < y1; row++)
			for (let i = row * W + x0, end = row * W + x1; i < end; i++) {
				const d = px[i];
				if (d >>> 24 === 255) {
					px[i] = (0xff000000 | (((ba + ((d >>> 16) & 255) * k + 0.5) | 0) << 16) |
						(((ga + ((d >>> 8) & 255) * k + 0.5) | 0) << 8) |
						((ra + (d & 255) * k + 0.5) | 0)) >>> 0;
					continue;
				}
				const da = (d >>> 24) / 255 * k, oa = a + da;
				const mix = (s, t) => ((s * a + t * da) / oa + 0.5) | 0;
				px[i] = ((((oa * 255 + 0.5) | 0) << 24) | (mix(b, (d >>> 16) & 255) << 16) |
					(mix(g, (d >>> 8) & 255) << 8) | mix(r, d & 255)) >>> 0;
			}
	}

	// The band onto ctx (whose own transform and clip putImageData
	// ignores), right of the clip.
	end(ctx) {
		ctx.putImageData(this.img, 0, Math.round(this.top * this.dpr), this.clip, 0,
			this.W - this.clip, this.H);
	}
}
