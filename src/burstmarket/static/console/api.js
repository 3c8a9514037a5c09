// The public HTTP API as the console calls it: the cluster token in the Authorization header
// (kept in sessionStorage, this browser tab only), and every refusal turned into a sentence
// with its figures. The page can do nothing the API would not let the token do.

const KEY = "burstmarket.console.token";

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

// A refusal of the API: its code, its figures, and what it means in words.
export class Refusal extends Error {
  constructor(status, body) {
    super(explain(body));
    this.status = status;
    this.code = body.error;
    this.body = body;
  }
}

async function call(method, path, body, accept = "application/json") {
  const headers = { Authorization: `Bearer ${token.get()}`, Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new Refusal(0, { error: "unreachable", detail: String(error) });
  }
  if (response.ok) return accept === "text/csv" ? response.text() : response.json();
  let refusal;
  try {
    refusal = await response.json();
  } catch {
    refusal = { error: "internal", detail: `HTTP ${response.status}` };
  }
  throw new Refusal(response.status, refusal);
}

export const api = {
  get: (path) => call("GET", path),
  put: (path, body) => call("PUT", path, body),
  post: (path, body) => call("POST", path, body),
  patch: (path, body) => call("PATCH", path, body),
  delete: (path) => call("DELETE", path),
  csv: (path) => call("GET", path, undefined, "text/csv"),
};

// --- figures as the page writes them (units on every one; times in UTC, said once) --------

const grouped = (v, digits) => Number(v).toLocaleString("en-US", {
  minimumFractionDigits: digits, maximumFractionDigits: digits,
});
export const usd = (v) => (v === null || v === undefined ? "–" : `${grouped(v, 2)} USD`);
export const rate = (v) => (v === null || v === undefined ? "–" : `${Number(v).toFixed(4)} USD/GPU-h`);
export const price4 = (v) => (v === null || v === undefined ? "–" : Number(v).toFixed(4));
export const amount2 = (v) => (v === null || v === undefined ? "–" : grouped(v, 2));
export const time = (iso) => (iso ? iso.slice(0, 16).replace("T", " ") : "–");
// A moment beside the latest tick's: its time of day (seconds only when it has some), with
// the date as well when it falls on another day.
export const moment = (iso, today) => {
  const hms = iso.slice(17, 19) === "00" ? iso.slice(11, 16) : iso.slice(11, 19);
  return today && iso.slice(0, 10) === today.slice(0, 10) ? hms : `${iso.slice(5, 10)} ${hms}`;
};
export const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
export const hours = (h) => (h % 24 === 0 ? `${plural(h / 24, "day")} (${h} h)` : `${h} h`);

// --- refusals in words ---------------------------------------------------------------------

const WORDS = {
  unauthorized: () => "This token is not known: check it and sign in again.",
  forbidden: (b) => `Not allowed for this cluster: ${b.detail}.`,
  "off-grid": (b) => {
    const g = b.gpus_per_node, low = Math.floor(b.max_gpus / g) * g;
    return `${b.max_gpus} GPUs is not a whole number of nodes: nodes on this island have ${g} `
      + `GPUs each, so ask for ${low} or ${low + g} GPUs (the market never rounds).`;
  },
  "bid-too-low": (b) => `${rate(b.price_per_gpu_hour)} is under the island's reserve price of `
    + `${rate(b.reserve_price)}: such a bid could never win capacity.`,
  "spend-limit": (b) => `This would commit ${usd(b.worst_case_usd)}, and ${usd(b.left_usd)} is left `
    + `in this 24 h window of your spend limit of ${usd(b.usd_per_day)} per day.`,
  "billing-hold": (b) => `The account's balance is ${usd(b.balance_usd)}: nothing new is granted `
    + "until it is above zero again.",
  "one-per-cluster": () => "This cluster already holds a live base load block: another can be "
    + "bought once it ends.",
  "sold-out": (b) => (b.until ? `${b.size_gpus} GPUs are sold out until ${time(b.until)}: `
    + "earlier blocks hold the island's reservable inventory until then."
    : "No rate is posted for this size and term: sold out."),
  "not-available": (b) => `${b.size_gpus} GPUs is more than this island's reservable inventory `
    + `of ${b.reservable_nodes} nodes: not available on this island.`,
  "buying-closed": () => "Buying base load is not open on this island: your account team "
    + "arranges the block.",
  "insufficient-balance": (b) => `The block costs ${usd(b.price_usd)}; its security deposit of `
    + `${usd(b.deposit_usd)} is more than the account's balance of ${usd(b.balance_usd)}.`,
  invalid: (b) => `Not accepted: ${b.detail}.`,
  conflict: (b) => `${b.detail}.`,
  "not-found": (b) => `Not found: ${b.detail}.`,
  "unknown-island": (b) => `No such island: ${b.island}.`,
  "not-ticked-yet": (b) => `Island ${b.island} has not ticked yet.`,
  "rate-limited": (b) => `Too many requests: try again in ${b.retry_after_seconds} s.`,
  "store-unavailable": (b) => "The service cannot save anything right now, and nothing was "
    + `changed: try again in ${b.retry_after_seconds} s.`,
  unreachable: () => "The service cannot be reached: check the connection and try again.",
};

export function explain(body) {
  const words = WORDS[body.error];
  return words ? words(body) : `The service refused this (${body.error}): ${body.detail}`;
}
