// The integration guide's test loop, played by a client written in another
// language than the server, from the served guide (GET /v1/integration-guide)
// and /openapi.json alone: Node.js 20+, its built-in crypto (Ed25519,
// SHA-256, HMAC) and fetch, no npm package.
//
//   XPROMO_BASE_URL=http://127.0.0.1:8080 XPROMO_ADMIN_TOKEN=… node loop.mjs
//
// against a fresh test-mode server started with --webhooks-allow-loopback
// true. It registers two apps, waits for the gate's approval, tops up, starts
// a campaign, signs a fill, a click, a countersignature and heartbeats with
// the server's clock, runs the clearing, asks for a payout (refused below the
// minimum) and receives and verifies a webhook itself. With
// XPROMO_GUIDELOOP_PAUSE=1 it stops once mid-story (an offer issued, the
// clock advanced): it prints "PAUSE" and waits for a line on stdin, so that
// a harness can restart the server before it goes on. Exit status 0 when
// every step did what the guide says; each step is logged on stderr.
import crypto from "node:crypto";
import http from "node:http";
import readline from "node:readline";

const base = (process.env.XPROMO_BASE_URL || "").replace(/\/$/, "");
const admin = process.env.XPROMO_ADMIN_TOKEN || "";
if (!base || !admin) {
  console.error("set XPROMO_BASE_URL and XPROMO_ADMIN_TOKEN");
  process.exit(2);
}
const category = process.env.XPROMO_GUIDELOOP_CATEGORY || "productivity";
const log = (...a) => console.error("guideloop:", ...a);
function fail(msg) {
  throw new Error(msg);
}
function expect(cond, msg) {
  if (!cond) fail(msg);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- HTTP -----------------------------------------------------------------

// call sends one request. A JSON body goes with Content-Type:
// application/json ("Conventions"); the POSTs that take none send nothing.
async function call(method, path, { key, body, idem, want } = {}) {
  const headers = {};
  if (key) headers["Authorization"] = "Bearer " + key;
  if (idem) headers["Idempotency-Key"] = idem;
  let payload;
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const url = path.startsWith("http") ? path : base + path;
  const res = await fetch(url, { method, headers, body: payload });
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (want !== undefined && res.status !== want) {
    fail(`${method} ${path}: status ${res.status}, want ${want}: ${text.slice(0, 500)}`);
  }
  return { status: res.status, json, text };
}
const errorCode = (r) => r.json && r.json.error && r.json.error.code;

// ---- the wire formats ("The protocol, for other languages") ----------------

const b64url = (buf) => Buffer.from(buf).toString("base64url");
const sha256 = (data) => crypto.createHash("sha256").update(data).digest();

// An SDK key: Ed25519; the public key travels as its raw 32 bytes in
// base64url, which is the "x" of its JWK; the key id is "sk_" + base64url of
// the first 15 bytes of SHA-256 of the raw public key.
function newSDKKey() {
  const { publicKey, privateKey } = crypto.generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x;
  const raw = Buffer.from(x, "base64url");
  expect(raw.length === 32, "an Ed25519 public key is 32 bytes");
  return { privateKey, publicKey: x, kid: "sk_" + b64url(sha256(raw).subarray(0, 15)) };
}

// sign makes a JWS compact serialization: Ed25519 over the ASCII of
// base64url(header) "." base64url(claims).
function sign(key, typ, claims) {
  const h = b64url(JSON.stringify({ alg: "Ed25519", kid: key.kid, typ }));
  const c = b64url(JSON.stringify(claims));
  const sig = crypto.sign(null, Buffer.from(h + "." + c, "ascii"), key.privateKey);
  return h + "." + c + "." + b64url(sig);
}

// The server's time, in unix seconds: in test mode every signed message is
// dated by the server's clock, which POST /v1/admin/clock/advance moves.
async function serverClock() {
  const r = await call("GET", "/v1/admin/clock", { key: admin, want: 200 });
  return { now: Math.floor(Date.parse(r.json.now) / 1000), offset: r.json.offset_seconds, test: r.json.test_mode };
}
async function advance(seconds, why) {
  const r = await call("POST", "/v1/admin/clock/advance", { key: admin, body: { seconds }, want: 200 });
  log(`clock +${seconds} s (${why}): ${r.json.now}`);
  return r.json;
}

// ---- a webhook receiver ("Webhooks": Standard Webhooks, verified here) ----

function startReceiver() {
  const received = [];
  const secrets = [];
  const seen = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const id = req.headers["webhook-id"];
      const ts = req.headers["webhook-timestamp"];
      const sigs = String(req.headers["webhook-signature"] || "").split(" ");
      // v1,<base64 HMAC-SHA256 of id "." timestamp "." body>, keyed by the
      // base64-decoded bytes after "whsec_"; the timestamp is within 5
      // minutes of this machine's clock.
      const ok = secrets.some((secret) => {
        const key = Buffer.from(secret.slice("whsec_".length), "base64");
        const mac = crypto.createHmac("sha256", key).update(`${id}.${ts}.`).update(body).digest();
        return sigs.some((s) => {
          const [v, b] = s.split(",", 2);
          if (v !== "v1" || !b) return false;
          const got = Buffer.from(b, "base64");
          return got.length === mac.length && crypto.timingSafeEqual(got, mac);
        });
      });
      const fresh = Math.abs(Date.now() / 1000 - Number(ts)) <= 300;
      if (!ok || !fresh) {
        log(`webhook ${id}: refused (signature ${ok ? "ok" : "bad"}, timestamp ${fresh ? "ok" : "stale"})`);
        res.writeHead(400).end();
        return;
      }
      res.writeHead(204).end();
      if (seen.has(id)) return; // delivery is at least once
      seen.add(id);
      received.push(JSON.parse(body.toString("utf8")));
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}/webhooks`, received, secrets, close: () => server.close() });
    });
  });
}

// ---- the loop ("Test loop") -----------------------------------------------

async function waitApproved(app) {
  for (let i = 0; i < 600; i++) {
    const r = await call("GET", `/v1/apps/${app.id}/score`, { key: app.key, want: 200 });
    if (r.json.status === "approved") return r.json;
    if (r.json.status !== "pending") fail(`${app.name}: the gate answered ${r.json.status} (${JSON.stringify(r.json.reasons)})`);
    await sleep(200);
  }
  fail(`${app.name}: still pending after 2 minutes`);
}

async function pause() {
  if (process.env.XPROMO_GUIDELOOP_PAUSE !== "1") return;
  console.log("PAUSE");
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise((resolve) => rl.once("line", resolve));
  rl.close();
}

async function main() {
  const clock0 = await serverClock();
  expect(clock0.test, "the server is not in test mode");
  const receiver = await startReceiver();

  // 1. Two apps, approved by the test-mode gate's sandbox.
  const card = (await call("GET", "/v1/rate-card", { want: 200 })).json;
  const cat = card.categories.find((c) => c.key === category);
  expect(cat, `the rate card has no category ${category}`);
  const register = async (name, fields) => {
    const r = await call("POST", "/v1/apps", { body: { name, platform: "mac", ...fields }, want: 201 });
    log(`registered ${name}: ${r.json.app_id} (${r.json.status})`);
    return { name, id: r.json.app_id, key: r.json.api_key };
  };
  const pub = await register("Guide Publisher", {
    bundle_id: "com.example.guidepub", domain: "example.com", download_url: "https://example.com/GuidePub.zip",
    contact_email: "team@example.com", category,
  });
  const adv = await register("Guide Advertiser", {
    bundle_id: "org.example.guideadv", domain: "example.org", download_url: "https://example.org/GuideAdv.zip",
    contact_email: "hello@example.org",
  });
  for (const a of [pub, adv]) {
    await waitApproved(a);
    log(`${a.name} approved`);
  }

  // 2. Webhooks to this machine (the server runs with --webhooks-allow-loopback).
  for (const a of [pub, adv]) {
    const r = await call("POST", `/v1/apps/${a.id}/webhook-endpoints`, {
      key: a.key, body: { url: receiver.url, events: ["chain.state_changed", "chain.cleared"] }, want: 201,
    });
    expect(String(r.json.secret).startsWith("whsec_"), "the endpoint's secret is whsec_…");
    receiver.secrets.push(r.json.secret);
  }

  // 3. The advertiser tops up (the test checkout) and starts a campaign.
  const top = await call("POST", `/v1/apps/${adv.id}/top-up`, { key: adv.key, body: { amount_cents: 20000 }, want: 200 });
  await call("POST", top.json.checkout_url, { want: 200 });
  const topLines = (await call("GET", `/v1/apps/${adv.id}/ledger`, { key: adv.key, want: 200 })).json.lines;
  expect(topLines.some((l) => l.type === "topup" && l.amount_cents === 20000), `no topup line: ${JSON.stringify(topLines)}`);
  const campaign = (await call("POST", "/v1/campaigns", {
    key: adv.key, body: { app_id: adv.id, categories: [category], daily_budget_cents: 5000 }, want: 201,
  })).json;
  log(`campaign ${campaign.campaign_id}: ${campaign.status} (${campaign.status_reason}), floor ${campaign.floor_cents}`);
  // The floor of the category on the advertiser's platform, within the
  // rate card's span.
  const floor = campaign.floor_cents;
  expect(floor >= cat.floor_cents_min && floor <= cat.floor_cents_max, `floor ${floor} outside the rate card's ${cat.floor_cents_min}–${cat.floor_cents_max}`);
  expect(campaign.status === "throttled" && campaign.status_reason === "app_not_live",
    "an approved app's campaign is throttled, app_not_live (delivered within the daily cap)");

  // 4. SDK keys.
  for (const a of [pub, adv]) {
    a.sdk = newSDKKey();
    const r = await call("POST", `/v1/apps/${a.id}/sdk-keys`, { key: a.key, body: { public_key: a.sdk.publicKey }, want: 201 });
    expect(r.json.key_id === a.sdk.kid, `key id: server ${r.json.key_id}, computed ${a.sdk.kid}`);
  }
  const dev = "dev_" + b64url(crypto.randomBytes(16));

  // 5. Fill, with the offer checks; a canary is shown as no fill.
  let fill;
  for (let i = 0; i < 20 && !fill; i++) {
    const { now } = await serverClock();
    const req = { app_id: pub.id, slot: "onboarding_complete", platform: "mac", device_id: dev, locale: "en-US" };
    req.signature = sign(pub.sdk, "xpromo-fill+jwt", { app: req.app_id, slot: req.slot, platform: req.platform, dev, loc: req.locale, iat: now });
    const r = (await call("POST", "/v1/sdk/fill", { body: req, want: 200 })).json;
    expect(r.filled, `no fill: ${r.no_fill_reason}`);
    const o = r.offer;
    const good = o.iss === pub.id && o.aud === r.creative.advertiser_app_id && o.platform === "mac" &&
      Date.parse(r.expires_at) / 1000 > now;
    if (!good) {
      log("a canary: shown as no fill");
      continue;
    }
    fill = r;
  }
  expect(fill, "no fill passed the checks");
  const offer = fill.offer;
  expect(offer.aud === adv.id, "the fill is the campaign's");
  expect(offer.price_cents === floor, `price ${offer.price_cents}, want the floor ${floor}`);
  log(`filled at ${offer.price_cents} cents (floor ${floor})`);

  // The user reads the ad; the server may restart meanwhile.
  await advance(30, "the user reads the ad");
  const before = await serverClock();
  await pause();
  const after = await serverClock();
  expect(after.offset >= before.offset, `the clock went back after the pause: offset ${before.offset} → ${after.offset}`);

  // 6. Click: the offer's ten members, iat and exp = iat + 900, signed.
  const clickAt = after.now;
  const token = sign(pub.sdk, "xpromo-click+jwt", { ...offer, iat: clickAt, exp: clickAt + 900 });
  const th = b64url(sha256(Buffer.from(token, "ascii")));
  const click = (await call("POST", "/v1/sdk/click", { body: { token }, idem: "click_" + th, want: 200 })).json;
  log(`clicked: chain ${click.chain_id}`);

  // 7. Claim: 10 s at least after the click, so advance the clock first.
  await advance(60, "the download and the install");
  const claimAt = (await serverClock()).now;
  const countersignature = sign(adv.sdk, "xpromo-install+jwt", { th, dev, cat: claimAt, app: adv.id });
  const inst = (await call("POST", "/v1/sdk/install", { body: { token, countersignature }, idem: "install_" + th, want: 200 })).json;
  expect(inst.chain_id === click.chain_id && inst.state === "installed", `install: ${JSON.stringify(inst)}`);

  // 8. Heartbeats, each signed when sent with the server's time, one
  // Idempotency-Key per seq.
  const heartbeat = async (seq) => {
    const { now } = await serverClock();
    const hb = sign(adv.sdk, "xpromo-heartbeat+jwt", { app: adv.id, dev, th, seq, ts: now });
    return (await call("POST", "/v1/sdk/heartbeat", { body: { heartbeat: hb }, idem: `hb_${th}_${seq}`, want: 200 })).json;
  };
  expect((await heartbeat(1)).state === "installed", "the heartbeat at launch leaves the chain installed");
  await advance(48 * 3600, "48 hours of use");
  expect((await heartbeat(2)).state === "activated_48h", "the heartbeat of the 48th hour activates the chain");

  // 9. The clearing.
  const sweep = (await call("POST", "/v1/admin/attribution/sweep", { key: admin, want: 200 })).json;
  log(`sweep: ${JSON.stringify(sweep)}`);
  const chain = (await call("GET", `/v1/chains/${click.chain_id}`, { key: pub.key, want: 200 })).json;
  expect(chain.state === "cleared", `chain ${chain.chain_id} is ${chain.state}, not cleared`);
  const lines = (await call("GET", `/v1/apps/${pub.id}/ledger`, { key: pub.key, want: 200 })).json.lines;
  const earn = lines.find((l) => l.type === "earn" && l.event_chain_id === chain.chain_id);
  const share = offer.price_cents - Math.floor(offer.price_cents * card.take_rate);
  expect(earn && earn.amount_cents === share, `the publisher's earn line: ${JSON.stringify(earn)}, want ${share}`);
  log(`cleared: the publisher earned ${earn.amount_cents} cents`);
  const advLines = (await call("GET", `/v1/apps/${adv.id}/ledger`, { key: adv.key, want: 200 })).json.lines
    .filter((l) => l.event_chain_id === chain.chain_id).map((l) => `${l.type} ${l.amount_cents}`);
  const p = offer.price_cents;
  expect(JSON.stringify(advLines) === JSON.stringify([`escrow_hold ${-p}`, `escrow_release ${p}`, `charge ${-p}`]),
    `the advertiser's lines of the install: ${JSON.stringify(advLines)}`);

  // 10. A payout below EUR 50 of cash earnings is refused.
  const payout = await call("POST", `/v1/apps/${pub.id}/payout`, { key: pub.key, want: 409 });
  expect(errorCode(payout) === "below_minimum", `payout: ${payout.text}`);
  log("payout refused: below_minimum");

  // 11. The chain.cleared webhook, verified by the receiver.
  for (let i = 0; i < 600; i++) {
    const got = receiver.received.filter((e) => e.type === "chain.cleared" && e.data.chain.chain_id === chain.chain_id);
    if (new Set(got.map((e) => e.app_id)).size === 2) break;
    await sleep(100);
  }
  const cleared = receiver.received.filter((e) => e.type === "chain.cleared" && e.data.chain.chain_id === chain.chain_id);
  expect(cleared.some((e) => e.app_id === pub.id) && cleared.some((e) => e.app_id === adv.id),
    `chain.cleared for both apps, verified: got ${JSON.stringify(receiver.received.map((e) => [e.type, e.app_id]))}`);
  log(`webhooks verified: ${receiver.received.length} events`);
  receiver.close();
  console.log(JSON.stringify({ ok: true, chain_id: chain.chain_id, price_cents: offer.price_cents, earned_cents: earn.amount_cents, payout_refusal: errorCode(payout), webhooks: receiver.received.length }));
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error("guideloop: FAILED:", err.message);
    process.exit(1);
  },
);
