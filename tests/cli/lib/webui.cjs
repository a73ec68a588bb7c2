// The page of `sluice serve` (GET /) driven in headless Chromium through
// playwright-core (tests/cli/webui.sh installs it; Debian's chromium).
//
// usage: node webui.cjs PORT KEYED_PORT KEY SHOTS_DIR CHROMIUM
//
// PORT serves a streamed model without a key, KEYED_PORT the same model
// with --api-key KEY. Checks: a message streams (the answer's text grows in
// several steps while the message is marked streaming) and ends equal to
// the server's own non-streamed answer to the same messages, system prompt
// and sampling; Stop ends a long answer mid-way, the text stops growing and
// the server's slot is free again; during a streamed run the telemetry
// receives ticks, shows a decode rate and its plot's pixels change; after a
// reload the conversation and its messages are there; hostile text (a user
// message through the server, and an answer, reasoning and tool call served
// by an intercepted stream in the server's chunk format) shows as text with
// no element made from it and no script run; the keyed server's page asks
// for the key, refuses a wrong one and works with the right one; the page
// asks nothing of any other origin. Screenshots go to SHOTS_DIR.
// Prints "ok   NAME" / "FAIL NAME" lines and "client-finished" at the end.
"use strict";
const { chromium } = require("playwright-core");
const [port, kport, key, shots, exe] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const kbase = `http://127.0.0.1:${kport}`;
const SYSTEM = "You are a terse assistant.";
const HOSTILE_USER = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`;

function report(name, cond, detail) {
  console.log((cond ? "ok   " : "FAIL ") + name + (cond || detail === undefined ? "" : ": " + detail));
}

async function shot(page, name) {
  await page.screenshot({ path: `${shots}/${name}.png` });
}

// A MutationObserver in the page records the streaming answer's text
// length at each change (window.__lens).
async function recordStream(page) {
  await page.evaluate(() => {
    window.__lens = [];
    const box = document.getElementById("messages");
    if (window.__obs) window.__obs.disconnect();
    window.__obs = new MutationObserver(() => {
      const t = box.querySelector(".msg.assistant.streaming .text");
      if (t) window.__lens.push(t.textContent.length);
    });
    window.__obs.observe(box, { subtree: true, childList: true, characterData: true });
  });
}

async function setSettings(page, s) {
  await page.click("#open-settings");
  await page.fill("#s-system", s.system || "");
  for (const n of ["temperature", "top_p", "top_k", "max_tokens", "seed"])
    await page.fill("#s-" + n, s[n] === undefined ? "" : String(s[n]));
  await page.click("#s-save");
}

async function send(page, text) {
  await page.fill("#input", text);
  await page.click("#send");
}

const lastAnswer = (page) => page.evaluate(() => {
  const m = [...document.querySelectorAll("#messages .msg.assistant")].pop();
  return m ? { text: m.querySelector(".text").textContent, meta: m.querySelector(".meta").textContent,
               streaming: m.classList.contains("streaming") } : null;
});

async function api(path, body, k) {
  const h = { "Content-Type": "application/json" };
  if (k) h.Authorization = "Bearer " + k;
  const r = await fetch((k ? kbase : base) + path, body ? { method: "POST", headers: h, body: JSON.stringify(body) } : { headers: h });
  return r.json();
}

// The server's chunks, as server_openai.c streams them, with hostile text.
function hostileStream() {
  const chunk = (delta, finish) => "data: " + JSON.stringify({
    id: "chatcmpl-x", object: "chat.completion.chunk", created: 1, model: "m",
    choices: [{ index: 0, delta, finish_reason: finish || null }] }) + "\n\n";
  return chunk({ role: "assistant", content: "" }) +
    chunk({ reasoning_content: "think <img src=x onerror=\"window.__pwned = 3\">" }) +
    chunk({ reasoning_content: " <script>window.__pwned = 4</script>" }) +
    chunk({ content: "Answer: <script>window.__pwned = 5</script>" }) +
    chunk({ content: " <img src=x onerror=\"window.__pwned = 6\"> <b>bold</b>" }) +
    chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function",
                           function: { name: "<img src=x onerror=\"window.__pwned = 7\">", arguments: "" } }] }) +
    chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"html\": \"<script>window.__pwned = 8</script>\"}" } }] }) +
    chunk({}, "tool_calls") + "data: [DONE]\n\n";
}

let current = null; // the page a failure is photographed on

async function main() {
  const browser = await chromium.launch({ executablePath: exe, headless: true,
                                          args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 820 } });
  const page = await context.newPage();
  current = page;
  const errors = [], foreign = [], dialogs = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("dialog", (d) => { dialogs.push(d.message()); d.dismiss(); });
  page.on("request", (r) => { if (!r.url().startsWith(base + "/")) foreign.push(r.url()); });

  await page.goto(base + "/");
  await page.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  report("the page loads and names the model", (await page.textContent("#model")) === "m.gguf",
         await page.textContent("#model"));
  await page.waitForFunction(() => Number(document.getElementById("telemetry").dataset.ticks) >= 1,
                             null, { timeout: 10000 });
  const plan = await page.textContent("#plan");
  report("the telemetry panel shows the memory plan", /memory budget/.test(plan) && /expert cache/.test(plan), plan);

  // 1. a streamed answer, equal to the server's own
  const sampling = { temperature: 0, max_tokens: 400, seed: 7 };
  await setSettings(page, Object.assign({ system: SYSTEM }, sampling));
  await recordStream(page);
  await send(page, "Tell me a long story");
  await page.waitForFunction(() => document.querySelectorAll(".msg.assistant").length === 1 &&
                             !document.querySelector(".msg.streaming"), null, { timeout: 120000 });
  const lens = await page.evaluate(() => window.__lens);
  const steps = new Set(lens.filter((n) => n > 0)).size;
  report("the answer streamed: its text grew in several steps", steps >= 3, JSON.stringify(lens.slice(0, 40)));
  const answer = await lastAnswer(page);
  const want = await api("/v1/chat/completions", Object.assign({
    messages: [{ role: "system", content: SYSTEM }, { role: "user", content: "Tell me a long story" }] }, sampling));
  if (!want.choices) throw new Error("the API answered " + JSON.stringify(want).slice(0, 400));
  const wantText = want.choices[0].message.content;
  report("the streamed text equals the server's non-streamed answer (system prompt and sampling sent)",
         answer.text === wantText && wantText.length > 0, JSON.stringify([answer.text, wantText]));
  report("the answer's footer says how it finished", /finished: (length|stop)/.test(answer.meta), answer.meta);
  await shot(page, "01-answer");

  // 2. a second turn, stopped mid-answer; the telemetry moves during the run
  await setSettings(page, { system: SYSTEM, temperature: 0, max_tokens: 3500 });
  const before = await page.evaluate(() => ({ img: document.getElementById("c-tok").toDataURL(),
                                              ticks: Number(document.getElementById("telemetry").dataset.ticks) }));
  await send(page, "Go on");
  await page.waitForFunction(() => {
    const t = document.querySelector(".msg.assistant.streaming .text");
    return t && t.textContent.length > 40;
  }, null, { timeout: 60000 });
  const t0 = Date.now();
  await page.waitForFunction((n) => Number(document.getElementById("telemetry").dataset.ticks) >= n + 3 &&
                             parseFloat(document.getElementById("v-tok").textContent) > 0,
                             before.ticks, { timeout: 20000 }).catch(() => {});
  const during = await page.evaluate(() => ({ img: document.getElementById("c-tok").toDataURL(),
                                              tok: document.getElementById("v-tok").textContent,
                                              hit: document.getElementById("v-hit").textContent,
                                              mib: document.getElementById("v-mib").textContent,
                                              streaming: !!document.querySelector(".msg.streaming") }));
  report("during the run the telemetry shows a decode rate, the hit rate and MiB per token",
         parseFloat(during.tok) > 0 && /%/.test(during.hit) && parseFloat(during.mib) > 0,
         JSON.stringify([during.tok, during.hit, during.mib]));
  report("the tokens/s plot moved (its pixels changed)", during.img !== before.img);
  report("the answer was still streaming then (the checks saw a live run)", during.streaming,
         `${Date.now() - t0} ms`);
  await shot(page, "02-streaming");
  await page.click("#stop");
  await page.waitForFunction(() => !document.querySelector(".msg.streaming"), null, { timeout: 10000 });
  const stopped = await lastAnswer(page);
  await page.waitForTimeout(800);
  const later = await lastAnswer(page);
  report("Stop ends the answer: marked stopped, the text no longer grows",
         /stopped/.test(stopped.meta) && later.text === stopped.text && stopped.text.length > 40,
         JSON.stringify([stopped.meta, stopped.text.length, later.text.length]));
  report("the Stop button is hidden and Send usable again",
         await page.evaluate(() => document.getElementById("stop").hidden && !document.getElementById("send").disabled));
  let free = false;
  for (let i = 0; i < 30 && !free; i++) {
    const slots = await api("/slots");
    free = slots.every((s) => !s.is_processing);
    if (!free) await page.waitForTimeout(100);
  }
  report("the server's slot is free again (the stop reached it)", free);
  await shot(page, "03-stopped");

  // 3. reload: the conversation is kept
  const texts = await page.evaluate(() => [...document.querySelectorAll("#messages .msg .text")].map((e) => e.textContent));
  await page.reload();
  await page.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  const after = await page.evaluate(() => ({
    texts: [...document.querySelectorAll("#messages .msg .text")].map((e) => e.textContent),
    list: [...document.querySelectorAll("#conv-list .title")].map((e) => e.textContent),
    metas: [...document.querySelectorAll("#messages .msg .meta")].map((e) => e.textContent) }));
  report("after a reload the conversation is listed",
         after.list.length === 1 && after.list[0] === "Tell me a long story",
         JSON.stringify(after.list));
  report("and its four messages are back as they were",
         texts.length === 4 && JSON.stringify(after.texts) === JSON.stringify(texts),
         JSON.stringify([texts.length, after.texts.length]));
  report("the stopped answer is still marked stopped", /stopped/.test(after.metas[3] || ""), JSON.stringify(after.metas));
  await shot(page, "04-reloaded");

  // 4. hostile text is shown as text
  await page.click("#new-chat");
  await setSettings(page, { temperature: 0, max_tokens: 8 });
  await send(page, HOSTILE_USER);
  await page.waitForFunction(() => document.querySelector(".msg.assistant") &&
                             !document.querySelector(".msg.streaming"), null, { timeout: 60000 });
  const userShown = await page.evaluate(() => document.querySelector("#messages .msg.user .text").textContent);
  report("a user message with <script> and <img onerror> shows as its text", userShown === HOSTILE_USER,
         userShown);
  await page.route("**/v1/chat/completions", (route) => route.fulfill({
    status: 200, headers: { "Content-Type": "text/event-stream" }, body: hostileStream() }));
  await send(page, "and now a hostile answer");
  await page.waitForFunction(() => document.querySelectorAll(".msg.assistant").length === 2 &&
                             !document.querySelector(".msg.streaming"), null, { timeout: 20000 });
  await page.unroute("**/v1/chat/completions");
  await page.waitForTimeout(300);
  const shown = await page.evaluate(() => {
    const m = [...document.querySelectorAll("#messages .msg.assistant")].pop();
    return { text: m.querySelector(".text").textContent, reasoning: m.querySelector(".rtext").textContent,
             tool: m.querySelector(".tool") ? m.querySelector(".tool").textContent : "",
             summary: m.querySelector("details.reasoning summary").textContent,
             hidden: m.querySelector("details.reasoning").hidden };
  });
  report("an answer with <script> and <img onerror> shows as text",
         shown.text === "Answer: <script>window.__pwned = 5</script> <img src=x onerror=\"window.__pwned = 6\"> <b>bold</b>",
         shown.text);
  report("its reasoning is shown apart, in a collapsible block, as text",
         !shown.hidden && shown.summary === "Reasoning" &&
         shown.reasoning === "think <img src=x onerror=\"window.__pwned = 3\"> <script>window.__pwned = 4</script>",
         JSON.stringify(shown));
  report("its tool call is shown, name and arguments as text",
         shown.tool.includes("<img src=x onerror=\"window.__pwned = 7\">") &&
         shown.tool.includes("{\"html\": \"<script>window.__pwned = 8</script>\"}"), shown.tool);
  const opened = await page.evaluate(() => {
    const det = [...document.querySelectorAll("#messages details.reasoning")].pop();
    const was = det.open;
    det.querySelector("summary").click();
    return [was, det.open];
  });
  report("the reasoning block is closed once the answer came, and opens on a click",
         opened[0] === false && opened[1] === true, JSON.stringify(opened));
  const dom = async () => page.evaluate(() => ({
    pwned: window.__pwned === undefined ? null : window.__pwned,
    made: document.querySelectorAll("#messages img, #messages script, #messages b, #conv-list img, #conv-list script").length }));
  let d = await dom();
  report("no element was made from the text and no script ran", d.made === 0 && d.pwned === null, JSON.stringify(d));
  await shot(page, "05-hostile");
  await page.reload();
  await page.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  d = await dom();
  const again = await page.evaluate(() => [...document.querySelectorAll("#messages .msg .text")].map((e) => e.textContent));
  report("after a reload (from the browser's storage) still text, nothing made or run",
         d.made === 0 && d.pwned === null && again[0] === HOSTILE_USER, JSON.stringify([d, again[0]]));

  report("no page errors", errors.length === 0, JSON.stringify(errors));
  report("no alert or other dialog opened", dialogs.length === 0, JSON.stringify(dialogs));
  report("the page asked nothing of any other origin", foreign.length === 0, JSON.stringify(foreign));
  await context.close();

  // 5. a server with --api-key: the page asks for the key
  const kctx = await browser.newContext({ viewport: { width: 1280, height: 820 } });
  const kpage = await kctx.newPage();
  current = kpage;
  const kerrors = [];
  kpage.on("pageerror", (e) => kerrors.push(e.message));
  await kpage.goto(kbase + "/");
  await kpage.waitForSelector("#keydlg[open]", { timeout: 20000 });
  report("with --api-key the page asks for the key", await kpage.isVisible("#k-key"));
  await shot(kpage, "06-key");
  await kpage.fill("#k-key", key + "-wrong");
  await kpage.click("#k-save");
  await kpage.waitForFunction(() => /refused/.test(document.getElementById("k-error").textContent), null,
                              { timeout: 10000 }).catch(() => {});
  report("a wrong key is refused and asked again",
         await kpage.evaluate(() => document.getElementById("keydlg").open &&
                              /refused/.test(document.getElementById("k-error").textContent)));
  await kpage.fill("#k-key", key);
  await kpage.click("#k-save");
  await kpage.waitForSelector("body[data-ready='1']", { timeout: 20000 });
  await kpage.waitForFunction(() => Number(document.getElementById("telemetry").dataset.ticks) >= 1, null,
                              { timeout: 10000 }).catch(() => {});
  report("with the right key the model is named and the telemetry flows",
         (await kpage.textContent("#model")) === "m.gguf" &&
         Number(await kpage.getAttribute("#telemetry", "data-ticks")) >= 1);
  await setSettings(kpage, { temperature: 0, max_tokens: 6 });
  await send(kpage, "Hello");
  await kpage.waitForFunction(() => document.querySelector(".msg.assistant") &&
                              !document.querySelector(".msg.streaming"), null, { timeout: 60000 });
  const kans = await lastAnswer(kpage);
  report("and a chat answer streams with the key", /finished/.test(kans.meta) && !/error/.test(kans.meta), kans.meta);
  await shot(kpage, "07-keyed-chat");
  report("no page errors on the keyed server's page", kerrors.length === 0, JSON.stringify(kerrors));
  await browser.close();
}

main().then(() => console.log("client-finished"), async (e) => {
  console.log("FAIL the browser run: " + (e && e.stack ? e.stack.split("\n").slice(0, 4).join(" | ") : e));
  if (current) await shot(current, "99-failure").catch(() => {});
  process.exit(1);
});
