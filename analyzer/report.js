/* SPDX-License-Identifier: MIT */
/*
 * report.js - the script of `ncclrr export --html` (embedded in the page by
 * export_html.c; no network, no library).  The SVG timeline zooms around
 * the cursor (wheel, pinch, + and - buttons or keys), pans by dragging,
 * resets (button or 0); a call's details show on hover; a failure clicked
 * in the diagnosis (or a call in flight waiting on a socket peer) zooms to
 * it and highlights its chain.
 *
 * Every rect of the plot keeps the x and width it was written with (the
 * whole run across pw pixels); a view [v0, v1] in ns maps them again.
 * The page's data (#nrr-data): end (ns), lw/pw (label and plot width),
 * top/rh (first row y, row height), doms ([name, colour]), rows (names),
 * calls ([row, tid, start, dur, depth, domain, failed, name, args, result]),
 * chain ({row, t, c: index in calls or -1, peer: row or -1, pt: time of
 * the last socket call to the peer, warn: [[t, text]]}).
 */
(function () {
	'use strict';
	var D = JSON.parse(document.getElementById('nrr-data').textContent);
	var svg = document.querySelector('svg.timeline');
	if (!svg)
		return;
	var NSV = svg.namespaceURI, LW = D.lw, PW = D.pw, END = Math.max(D.end, 1);
	var MIN_SPAN = 100; /* ns: the closest zoom */
	var v0 = 0, v1 = END;
	var tip = document.getElementById('tl-tip');
	var range = document.getElementById('tl-range');
	var axis = svg.querySelector('g.axis');
	var plotH = D.top + D.rows.length * D.rh;

	function fmt(ns) {
		var a = Math.abs(ns), s = ns < 0 ? '-' : '';
		if (a < 1e3)
			return s + a.toFixed(0) + ' ns';
		if (a < 1e6)
			return s + +(a / 1e3).toPrecision(4) + ' us';
		if (a < 1e9)
			return s + +(a / 1e6).toPrecision(5) + ' ms';
		return s + +(a / 1e9).toPrecision(6) + ' s';
	}

	function el(name, attrs, parent) {
		var e = document.createElementNS(NSV, name);
		for (var k in attrs)
			e.setAttribute(k, attrs[k]);
		if (parent)
			parent.appendChild(e);
		return e;
	}

	/* the details around the failures, drawn like the page's own rects */
	var detail = svg.querySelector('g.detail');
	D.calls.forEach(function (c, i) {
		var y = D.top + c[0] * D.rh, h = D.rh;
		if (c[4]) {
			y += D.rh * 0.45;
			h = D.rh * 0.55;
		}
		el('rect', {
			'data-c': i, x: LW + c[2] * PW / END, y: y, width: c[3] * PW / END, height: h,
			fill: c[6] ? '#e00000' : (D.doms[c[5]] || D.doms[D.doms.length - 1])[1],
			stroke: '#0006', 'stroke-width': 0.3, 'class': 'dcall'
		}, detail);
	});

	/* every rect of the plot with its whole-run geometry; a mark written
	 * wider than its call (a failure: 3 px, in flight: 2 px) takes its
	 * call's own from the details, else it is a moment */
	var items = [];
	svg.querySelectorAll('g.plot rect').forEach(function (r) {
		var cl = r.getAttribute('class') || '', dc = r.getAttribute('data-c');
		var it = {
			r: r, x: +r.getAttribute('x') - LW, w: +r.getAttribute('width'),
			min: /^error/.test(cl) ? 3 : cl === 'inflight' ? 2 : cl === 'dcall' ? 1 : 0
		};
		if (it.min && dc !== null) {
			it.x = D.calls[+dc][2] * PW / END;
			it.w = D.calls[+dc][3] * PW / END;
		} else if (it.min && it.w <= it.min) {
			it.w = 0;
		}
		items.push(it);
	});
	var overlay = [];   /* chain marks: {r, t0, t1, min} in ns */

	function xOf(t) {
		return LW + (t - v0) * PW / (v1 - v0);
	}

	function drawAxis() {
		while (axis.firstChild)
			axis.removeChild(axis.firstChild);
		var span = v1 - v0, step = 1;
		for (var base = 1; step < span / 10; base *= 10)
			for (var m of [2, 5, 10])
				if (step < span / 10)
					step = base * m;
		/* labels in the unit of the view's end, with the decimals the
		 * step needs (1.071720 s, 1.071725 s: not 1.07172 s twice) */
		var u = v1 >= 1e9 ? [1e9, ' s'] : v1 >= 1e6 ? [1e6, ' ms'] : v1 >= 1e3 ? [1e3, ' us'] : [1, ' ns'];
		var dec = Math.min(9, Math.max(0, Math.ceil(Math.log10(u[0] / step) - 1e-9)));
		for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
			var x = xOf(t);
			el('line', { x1: x, y1: D.top - 6, x2: x, y2: plotH, stroke: '#ccc' }, axis);
			el('text', { x: x, y: D.top - 10, 'text-anchor': 'middle' }, axis).textContent = (t / u[0]).toFixed(dec) + u[1];
		}
	}

	var pending = false;
	function redraw() {
		pending = false;
		var k = END / (v1 - v0), off = v0 * PW / END;
		items.forEach(function (it) {
			var w = Math.max(it.w * k, it.min);
			it.r.setAttribute('x', LW + (it.x - off) * k);
			it.r.setAttribute('width', w);
		});
		overlay.forEach(function (o) {
			var x0 = xOf(o.t0), x1 = xOf(o.t1);
			if (o.r.tagName === 'line') {
				o.r.setAttribute('x1', x0);
				o.r.setAttribute('x2', x0);
			} else {
				o.r.setAttribute('x', x0 - o.min / 2);
				o.r.setAttribute('width', Math.max(x1 - x0, 0) + o.min);
			}
		});
		drawAxis();
		/* a pixel's sum of calls, stretched, is no call: faded */
		svg.classList.toggle('zoomed', k > 2);
		svg.setAttribute('data-v0', Math.round(v0));
		svg.setAttribute('data-v1', Math.round(v1));
		range.textContent = 'showing ' + fmt(v0) + ' to ' + fmt(v1) + ' of ' + fmt(END) +
			(v0 <= 0 && v1 >= END ? ' (the whole run)' : ' (x' + (END / (v1 - v0)).toPrecision(3) + ')');
	}

	function schedule() {
		if (!pending) {
			pending = true;
			requestAnimationFrame(redraw);
		}
	}

	/* show [a, b], kept inside the run and no narrower than MIN_SPAN */
	function view(a, b) {
		var span = Math.min(Math.max(b - a, MIN_SPAN), END);
		a = Math.min(Math.max(a, 0), END - span);
		v0 = a;
		v1 = a + span;
		schedule();
	}

	/* zoom by @f (< 1: in) keeping the time under plot x @px in place */
	function zoom(f, px) {
		var frac = Math.min(Math.max((px - LW) / PW, 0), 1), at = v0 + frac * (v1 - v0);
		var span = Math.min(Math.max((v1 - v0) * f, MIN_SPAN), END);
		view(at - frac * span, at - frac * span + span);
	}

	function plotX(ev) {
		var b = svg.getBoundingClientRect();
		return (ev.clientX - b.left) * svg.viewBox.baseVal.width / b.width;
	}

	svg.addEventListener('wheel', function (ev) {
		ev.preventDefault();
		/* a pinch comes as a wheel event with ctrlKey: the same zoom */
		var d = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
		zoom(Math.exp(d * (ev.ctrlKey ? 0.01 : 0.002)), plotX(ev));
	}, { passive: false });

	var drag = null;
	svg.addEventListener('pointerdown', function (ev) {
		if (ev.button !== 0)
			return;
		drag = { x: plotX(ev), v0: v0, v1: v1 };
		svg.setPointerCapture(ev.pointerId);
		svg.style.cursor = 'grabbing';
	});
	svg.addEventListener('pointermove', function (ev) {
		if (!drag)
			return;
		var dt = (plotX(ev) - drag.x) * (drag.v1 - drag.v0) / PW;
		view(drag.v0 - dt, drag.v1 - dt);
	});
	function endDrag() {
		drag = null;
		svg.style.cursor = '';
	}
	svg.addEventListener('pointerup', endDrag);
	svg.addEventListener('pointercancel', endDrag);

	document.getElementById('tl-in').addEventListener('click', function () { zoom(0.5, LW + PW / 2); });
	document.getElementById('tl-out').addEventListener('click', function () { zoom(2, LW + PW / 2); });
	document.getElementById('tl-reset').addEventListener('click', function () { view(0, END); });
	document.addEventListener('keydown', function (ev) {
		if (/^(INPUT|TEXTAREA|SELECT)$/.test(ev.target.tagName) || ev.ctrlKey || ev.metaKey || ev.altKey)
			return;
		if (ev.key === '+' || ev.key === '=')
			zoom(0.5, LW + PW / 2);
		else if (ev.key === '-')
			zoom(2, LW + PW / 2);
		else if (ev.key === '0')
			view(0, END);
	});

	/* hover: the details of a call, else the element's own title */
	function details(c) {
		return c[7] + '\n' +
			(c[8] ? 'args: ' + c[8] + '\n' : '') +
			(c[9] ? 'result: ' + c[9] + '\n' : '') +
			'start: ' + fmt(c[2]) + '   duration: ' + fmt(c[3]) + '\n' +
			D.rows[c[0]] + '   thread ' + c[1];
	}
	svg.addEventListener('mousemove', function (ev) {
		var t = ev.target, txt = null, dc = t.closest && t.closest('[data-c]');
		if (drag)
			txt = null;
		else if (dc)
			txt = details(D.calls[+dc.getAttribute('data-c')]);
		else if (t.querySelector && t.querySelector('title') && t.tagName === 'rect')
			txt = t.querySelector('title').textContent;
		if (!txt) {
			tip.style.display = 'none';
			return;
		}
		tip.textContent = txt;
		tip.style.display = 'block';
		var x = ev.clientX + 14, y = ev.clientY + 14;
		if (x + tip.offsetWidth > window.innerWidth)
			x = Math.max(0, ev.clientX - tip.offsetWidth - 8);
		if (y + tip.offsetHeight > window.innerHeight)
			y = Math.max(0, ev.clientY - tip.offsetHeight - 8);
		tip.style.left = x + 'px';
		tip.style.top = y + 'px';
	});
	svg.addEventListener('mouseleave', function () { tip.style.display = 'none'; });

	/* the chain of a failure listed in the diagnosis */
	var chainG = svg.querySelector('g.chain');
	function rowG(r) {
		return svg.querySelector('g.tl-row[data-row="' + r + '"]');
	}
	function showChain(i) {
		var ch = D.chain[i];
		document.querySelectorAll('.chain-row,.chain-peer,.chain-call,li.active').forEach(function (e) {
			e.classList.remove('chain-row', 'chain-peer', 'chain-call', 'active');
		});
		while (chainG.firstChild)
			chainG.removeChild(chainG.firstChild);
		overlay = [];
		var li = document.querySelector('li[data-chain="' + i + '"]');
		if (li)
			li.classList.add('active');
		var g = rowG(ch.row);
		if (g)
			g.classList.add('chain-row');
		var t0 = ch.t, t1 = ch.t, y = D.top + ch.row * D.rh;
		if (ch.c >= 0) {
			var c = D.calls[ch.c];
			t0 = c[2];
			svg.querySelectorAll('[data-c="' + ch.c + '"]').forEach(function (e) { e.classList.add('chain-call'); });
		}
		/* the failure, framed on its row */
		overlay.push({
			r: el('rect', { 'class': 'chain-fail', y: y - 1, height: D.rh + 2, fill: 'none', stroke: '#e00000', 'stroke-width': 2 }, chainG),
			t0: t0, t1: ch.t, min: 8
		});
		if (ch.peer >= 0) {
			var pg = rowG(ch.peer);
			if (pg)
				pg.classList.add('chain-peer');
			var py = D.top + ch.peer * D.rh;
			/* the peer's row at the last socket call made to it */
			overlay.push({
				r: el('line', { 'class': 'chain-link', y1: Math.min(y, py) + D.rh / 2, y2: Math.max(y, py) + D.rh / 2,
					stroke: '#2050c0', 'stroke-width': 2, 'stroke-dasharray': '4 2' }, chainG),
				t0: ch.pt, t1: ch.pt, min: 0
			});
			overlay.push({
				r: el('rect', { 'class': 'chain-peer-mark', y: py - 1, height: D.rh + 2, fill: 'none', stroke: '#2050c0', 'stroke-width': 2 }, chainG),
				t0: ch.pt, t1: ch.pt, min: 8
			});
			t0 = Math.min(t0, ch.pt);
			t1 = Math.max(t1, ch.pt);
		}
		ch.warn.forEach(function (w) {
			var m = el('rect', { 'class': 'chain-warn', y: y, height: D.rh, fill: '#ff9f00', stroke: '#8a4b00' }, chainG);
			el('title', {}, m).textContent = w[1];
			overlay.push({ r: m, t0: w[0], t1: w[0], min: 4 });
			t1 = Math.max(t1, w[0]);
		});
		var pad = Math.max((t1 - t0) * 0.15, 2000);
		view(t0 - pad, t1 + pad);
		svg.scrollIntoView({ block: 'nearest' });
	}
	/* the failures listed, and the calls in flight that wait on a peer */
	document.querySelectorAll('li[data-chain]').forEach(function (li) {
		li.title = 'show this call and its chain on the timeline';
		li.addEventListener('click', function () { showChain(+li.getAttribute('data-chain')); });
	});
	redraw();
})();
