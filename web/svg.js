// SPDX-License-Identifier: MIT
// strata view: a 2D-canvas-like context that writes SVG, so the timeline draws its export with its own code.

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;',
	'"': '&quot;' })[c]);
const n = (v) => Number(v.toFixed(2));

// The calls Timeline.draw makes of a CanvasRenderingContext2D, as SVG
// elements: rectangles, text, stroked paths, and clips as clipPaths.
export class SvgContext {
	constructor(width, height) {
		this.width = width;
		this.height = height;
		this.out = [];
		this.fillStyle = '#000';
		this.strokeStyle = '#000';
		this.globalAlpha = 1;
		this.font = '10px sans-serif';
		this.path = [];
		this.stack = [];      // groups opened since each save()
		this.open = 0;
		this.clips = 0;
	}

	setTransform() {}       // device pixels are the canvas's business
	clearRect() {}

	save() {
		this.stack.push({ open: this.open, fill: this.fillStyle, stroke: this.strokeStyle,
			alpha: this.globalAlpha, font: this.font });
		this.open = 0;
	}

	restore() {
		const s = this.stack.pop();
		if (!s)
			return;
		for (; this.open > 0; this.open--)
			this.out.push('</g>');
		Object.assign(this, { open: s.open, fillStyle: s.fill, strokeStyle: s.stroke,
			globalAlpha: s.alpha, font: s.font });
	}

	opacity() {
		return this.globalAlpha < 1 ? ` fill-opacity="${n(this.globalAlpha)}"` : '';
	}

	fillRect(x, y, w, h) {
		this.out.push(`<rect x="${n(x)}" y="${n(y)}" width="${n(Math.max(0, w))}" ` +
			`height="${n(Math.max(0, h))}" fill="${esc(this.fillStyle)}"${this.opacity()}/>`);
	}

	fontSize() {
		const m = /([\d.]+)px/.exec(this.font);
		return m ? Number(m[1]) : 10;
	}

	fillText(text, x, y) {
		const family = this.font.replace(/^.*?px\s*/, '') || 'sans-serif';
		this.out.push(`<text x="${n(x)}" y="${n(y)}" font-size="${this.fontSize()}" ` +
			`font-family="${esc(family)}" fill="${esc(this.fillStyle)}"${this.opacity()}>` +
			`${esc(text)}</text>`);
	}

	measureText(text) {
		return { width: String(text).length * this.fontSize() * 0.6 };
	}

	beginPath() {
		this.path = [];
	}

	moveTo(x, y) {
		this.path.push(`M${n(x)} ${n(y)}`);
	}

	lineTo(x, y) {
		this.path.push(`L${n(x)} ${n(y)}`);
	}

	rect(x, y, w, h) {
		this.path.push(`M${n(x)} ${n(y)}h${n(w)}v${n(h)}h${n(-w)}Z`);
	}

	stroke() {
		if (this.path.length)
			this.out.push(`<path d="${this.path.join('')}" fill="none" ` +
				`stroke="${esc(this.strokeStyle)}" stroke-width="1"/>`);
	}

	clip() {
		const id = `clip${++this.clips}`;
		this.out.push(`<clipPath id="${id}"><path d="${this.path.join('')}"/></clipPath>` +
			`<g clip-path="url(#${id})">`);
		this.open++;
	}

	// The document: one standalone SVG file.
	document(title) {
		while (this.stack.length)
			this.restore();
		return '<?xml version="1.0" encoding="UTF-8"?>\n' +
			`<svg xmlns="http://www.w3.org/2000/svg" width="${n(this.width)}" ` +
			`height="${n(this.height)}" viewBox="0 0 ${n(this.width)} ${n(this.height)}">\n` +
			`<title>${esc(title)}</title>\n<rect width="100%" height="100%" fill="#fff"/>\n` +
			this.out.join('\n') + '\n</svg>\n';
	}
}
