// pay.mjs tops up an xpromo wallet with the official x402 TypeScript client
// (x402-fetch's wrapFetchWithPayment, x402's signer), nothing of xpromo's
// own: it proves the server's challenge and X-PAYMENT handling against a
// client nobody here wrote.
//
//   XPROMO_URL=<base URL> XPROMO_APP_ID=app_… XPROMO_API_KEY=xp_… \
//   X402_PRIVATE_KEY=0x… XPROMO_AMOUNT_CENTS=5000 node pay.mjs
//
// It prints one JSON line: {"status", "body", "paymentResponse"} (the decoded
// X-PAYMENT-RESPONSE, or null).
import { wrapFetchWithPayment, createSigner, decodeXPaymentResponse } from "x402-fetch";

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is required`);
  return v;
};

const signer = await createSigner("base-sepolia", env("X402_PRIVATE_KEY"));
// Up to 1,000 USDC: the default cap (0.10 USDC) is below any top-up.
const pay = wrapFetchWithPayment(fetch, signer, 1_000_000_000n);
const res = await pay(`${env("XPROMO_URL")}/v1/apps/${env("XPROMO_APP_ID")}/top-up`, {
  method: "POST",
  headers: {
    Authorization: `Bearer ${env("XPROMO_API_KEY")}`,
    "Content-Type": "application/json",
    // Ask for the x402 challenge rather than a checkout URL.
    Prefer: "payment=x402",
  },
  body: JSON.stringify({ amount_cents: Number(env("XPROMO_AMOUNT_CENTS")) }),
});
const header = res.headers.get("X-PAYMENT-RESPONSE");
console.log(JSON.stringify({
  status: res.status,
  body: await res.json(),
  paymentResponse: header ? decodeXPaymentResponse(header) : null,
}));
