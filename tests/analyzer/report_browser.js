// SPDX-License-Identifier: MIT
// report_browser.js REPORT.html SHOT.png ROW PEER_ROW CALL ERROR
//
// Opens an `ncclrr export --html` report in Debian's chromium through
// playwright-core and uses it as a person would: zooms with the wheel and
// the buttons, pans by dragging, resets, clicks the first failure of the
// diagnosis and hovers the failing call.  Checks: no console error and no
// page error; each gesture changes the visible time range the right way;
// the click highlights the chain (the failing row, its call, the peer row
// ROW -> PEER_ROW, the WARN marks) and brings the failure into view; the
// tooltip names CALL and ERROR.  Saves a screenshot to SHOT.png.
// ROW "-": any report: after reset, each listed failure (5 at most) is
// clicked and must come into view; no other check.
// Exit 0 ok, 1 a check failed, 77 playwright-core or chromium missing.
'use strict';
let chromium;
try {
	({ chromium } = require('playwright-core'));
} catch (e) {
	console.log('SKIP: playwright-core is not installed (see README.md, "Browser test of the report"): ' + e.message.split('\n')[0]);
	process.exit(77);
}
const [html, shot, row, peer, call, error] = process.argv.slice(2);

function check(cond, what) {
	if (!cond)
		throw new Error('check failed: ' + what);
}

async function view(page) {
	await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
	return page.evaluate(() => {
		const s = document.querySelector('svg.timeline');
		return { v0: +s.getAttribute('data-v0'), v1: +s.getAttribute('data-v1'),
			text: document.getElementById('tl-range').textContent };
	});
}

async function ticksApart(page) {
	const ticks = await page.evaluate(() => [...document.querySelectorAll('svg.timeline g.axis text')].map((e) => e.textContent));
	check(ticks.length >= 2 && new Set(ticks).size === ticks.length, 'axis labels apart when zoomed in: ' + ticks);
}

(async () => {
	let browser;
	try {
		browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
			args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
	} catch (e) {
		console.log('SKIP: chromium does not start here: ' + e.message.split('\n')[0]);
		process.exit(77);
	}
	const problems = [];
	try {
		const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
		page.on('console', (m) => { if (m.type() === 'error') problems.push('console error: ' + m.text()); });
		page.on('pageerror', (e) => problems.push('page error: ' + e.message));
		page.on('request', (r) => { if (!r.url().startsWith('file:')) problems.push('network request: ' + r.url()); });
		await page.goto('file://' + html);

		const all = await view(page);
		check(all.v0 === 0 && all.v1 > 0 && /whole run/.test(all.text), 'the whole run shown first: ' + JSON.stringify(all));

		// the wheel zooms in around the cursor: the time under it stays put
		const box = await page.locator('svg.timeline').boundingBox();
		const px = box.x + 170 + 1100 * 0.25, py = box.y + 40;
		await page.mouse.move(px, py);
		await page.mouse.wheel(0, -400);
		const z1 = await view(page);
		check(z1.v1 - z1.v0 < (all.v1 - all.v0) / 2 && z1.text !== all.text, 'wheel zoom narrows the range: ' + JSON.stringify(z1));
		const at = all.v0 + 0.25 * (all.v1 - all.v0), at1 = z1.v0 + 0.25 * (z1.v1 - z1.v0);
		check(Math.abs(at - at1) <= (all.v1 - all.v0) * 0.01, 'wheel zoom keeps the time under the cursor: ' + at + ' vs ' + at1);

		// the + button halves the span, - doubles it
		await page.click('#tl-in');
		const z2 = await view(page);
		check(Math.abs((z2.v1 - z2.v0) * 2 - (z1.v1 - z1.v0)) <= 2, '+ halves the range: ' + JSON.stringify([z1, z2]));
		await page.click('#tl-out');
		const z3 = await view(page);
		check(Math.abs((z3.v1 - z3.v0) - (z1.v1 - z1.v0)) <= 2, '- doubles it back: ' + JSON.stringify([z1, z3]));

		// dragging to the left shows later times, the span unchanged
		await page.mouse.move(px + 200, py);
		await page.mouse.down();
		await page.mouse.move(px, py, { steps: 5 });
		await page.mouse.up();
		const p1 = await view(page);
		check(p1.v0 > z3.v0 && Math.abs((p1.v1 - p1.v0) - (z3.v1 - z3.v0)) <= 2, 'drag pans: ' + JSON.stringify([z3, p1]));

		await page.click('#tl-reset');
		const r1 = await view(page);
		check(r1.v0 === all.v0 && r1.v1 === all.v1, 'reset shows the whole run: ' + JSON.stringify(r1));
		if (row === '-') {
			const d = await page.evaluate(() => JSON.parse(document.getElementById('nrr-data').textContent));
			for (let i = 0; i < d.chain.length && i < 5; i++) {
				await page.locator('li[data-chain="' + i + '"]').click();
				const v = await view(page);
				check(v.v0 <= d.chain[i].t && d.chain[i].t <= v.v1, 'failure ' + i + ' in view: ' + JSON.stringify(v));
				await ticksApart(page);
			}
			await page.screenshot({ path: shot, fullPage: false });
			console.log('screenshot: ' + shot);
			throw null;
		}

		// the first failure of the diagnosis: its chain
		const first = page.locator('ol.chain li[data-chain="0"]');
		check(await first.count() === 1, 'the diagnosis lists a failure to click');
		const data = await page.evaluate(() => JSON.parse(document.getElementById('nrr-data').textContent));
		const ch = data.chain[0];
		await first.click();
		const c1 = await view(page);
		check(c1.v1 - c1.v0 < (all.v1 - all.v0) / 10 && c1.v0 <= ch.t && ch.t <= c1.v1,
			'the click zooms to the failure at ' + ch.t + ': ' + JSON.stringify(c1));
		const hl = await page.evaluate(() => ({
			active: document.querySelectorAll('ol.chain li.active').length,
			row: [...document.querySelectorAll('g.tl-row.chain-row')].map((g) => g.getAttribute('data-row')),
			peer: [...document.querySelectorAll('g.tl-row.chain-peer')].map((g) => g.getAttribute('data-row')),
			call: document.querySelectorAll('g.marks rect.chain-call').length,
			warn: document.querySelectorAll('g.chain rect.chain-warn').length,
			link: document.querySelectorAll('g.chain line.chain-link').length,
		}));
		check(hl.active === 1, 'the clicked failure is marked active');
		await ticksApart(page);
		check(hl.row.join() === row, 'failing row ' + row + ' highlighted: ' + hl.row);
		check(hl.peer.join() === peer, 'peer row ' + peer + ' highlighted: ' + hl.peer);
		check(hl.call === 1, 'the failing call is highlighted on the timeline: ' + hl.call);
		check(hl.link === 1, 'a link to the peer');
		check(hl.warn === ch.warn.length && hl.warn > 0, 'the WARN lines marked: ' + hl.warn + ' of ' + ch.warn.length);

		// hover the failing call: the tooltip names it and its error
		const mark = page.locator('g.marks rect.chain-call');
		const mb = await mark.boundingBox();
		check(mb && mb.width >= 3 && mb.x >= box.x + 170 && mb.x <= box.x + 170 + 1100, 'the failing call is in view: ' + JSON.stringify(mb));
		await page.mouse.move(mb.x + mb.width / 2, mb.y + mb.height / 2);
		const tip = page.locator('#tl-tip');
		await tip.waitFor({ state: 'visible', timeout: 5000 });
		const txt = await tip.textContent();
		for (const want of [call, error, data.rows[+row], 'start:', 'duration:', 'thread'])
			check(txt.includes(want), 'the tooltip shows ' + JSON.stringify(want) + ': ' + JSON.stringify(txt));

		await page.screenshot({ path: shot, fullPage: false });
		console.log('screenshot: ' + shot);
		console.log('tooltip: ' + txt.replace(/\n/g, ' | '));
	} catch (e) {
		if (e !== null)
			problems.push(e.message);
	}
	await browser.close();
	if (problems.length) {
		console.log('FAIL: ' + problems.join('\nFAIL: '));
		process.exit(1);
	}
	console.log('browser ok');
})();
