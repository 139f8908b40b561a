// SPDX-License-Identifier: MIT
// strata view --live: the page asks for the trace's new end, grows with it, and follows the newest time until the user looks back (docs/view.md, "Live").

const POLL_MS = 500; // api/live twice a second, none while the tab is hidden

let ctx = null;

// Whether the view touches the newest time: then the next growth moves it.
export function touchesEnd(view, span) {
	return view.t1 >= span - Math.max(1, span * 1e-9);
}

function show() {
	const { state, hook, $ } = ctx;
	const b = $('live');
	b.hidden = false;
	if (!state.sum.live) {
		b.textContent = 'finished';
		b.disabled = true;
		b.title = 'the recording ended: this is the whole trace';
	} else {
		b.textContent = state.follow ? 'Live ●' : 'Paused: follow newest (End)';
		b.classList.toggle('on', state.follow);
		b.title = state.follow ? 'following the newest time; zoom or pan back to stay put' :
			'back to the newest time, following it (End)';
	}
	hook.live = { ...(hook.live || {}), live: state.sum.live, following: state.follow,
		span: state.sum.span_ns };
}

// The view follows the newest time again (the control, End).
export function followNewest() {
	if (!ctx || !ctx.state.sum.live)
		return;
	const { state, go } = ctx, v = state.view, span = state.sum.span_ns;
	const w = Math.min(v.t1 - v.t0, span);
	state.follow = true;
	go(span - w, span);
	show();
}

// A view the user chose: followed when it touches the newest time.
export function viewChosen(view) {
	if (!ctx || !ctx.state.sum.live || ctx.moving)
		return;
	ctx.state.follow = touchesEnd(view, ctx.state.sum.span_ns);
	show();
}

// The trace grew (or ended): the summary again, the rows, the overview,
// and the view moved to the newest time when following, else the same
// view asked again (its list and statistics refreshed).
async function grew() {
	const { state, hook, get, setView, fetchOverview, describe } = ctx;
	const sum = await get('api/summary');
	const v = state.view, old = state.sum.span_ns;
	state.sum = sum;
	state.tl.sum = sum;
	state.tl.layout();
	hook.summary = sum;
	describe(sum);
	ctx.moving = true;
	if (state.follow && v.t0 <= 0)
		setView(0, sum.span_ns); // the whole trace stays whole
	else if (state.follow)
		setView(sum.span_ns - (v.t1 - v.t0), sum.span_ns); // its width kept
	else
		setView(v.t0, Math.min(v.t1, sum.span_ns));
	ctx.moving = false;
	fetchOverview();
	hook.live.grown = (hook.live.grown || 0) + 1;
	hook.live.from = old;
	show();
}

async function poll() {
	const { state, hook, get } = ctx;
	if (document.hidden)
		return; // visibilitychange polls again
	try {
		const l = await get('api/live');
		hook.live.polls = (hook.live.polls || 0) + 1;
		if (l.seq !== ctx.seq || l.live !== state.sum.live || l.span_ns !== state.sum.span_ns) {
			ctx.seq = l.seq;
			await grew();
		}
	} catch (err) {
		hook.live.error = err.message; // the server gone: try again later
	}
	if (state.sum.live)
		ctx.timer = setTimeout(poll, POLL_MS);
}

// c: { state, hook, $, get, go, setView, fetchOverview, describe }.
export function initLive(c) {
	ctx = { ...c, seq: -1, timer: 0, moving: false };
	const { state, $ } = ctx;
	if (!state.sum.live)
		return;
	state.follow = true;
	$('live').addEventListener('click', followNewest);
	document.addEventListener('visibilitychange', () => {
		clearTimeout(ctx.timer);
		if (!document.hidden && state.sum.live)
			poll();
	});
	show();
	ctx.timer = setTimeout(poll, POLL_MS);
}
