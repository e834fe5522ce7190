// Proof-of-work solver: a dedicated Web Worker, one challenge per worker.
//
// In:  {token, difficulty} (the server's challenge; difficulty 1–32).
// Out: {progress: hashes tried, expected: 2^difficulty} about every 100 ms,
//      then {solution} (a decimal string), or {error} for a bad challenge.
//
// It tries the counters 0, 1, 2, … in turn and answers the first whose
// SHA-256(token + ":" + counter) starts with `difficulty` zero bits: the
// same search as the server's reference solver (server/pow Solve), so both
// find the same solution. The search is synchronous; to cancel it, the page
// terminates the worker.
//
// SHA-256 is computed here in plain JavaScript on bytes: crypto.subtle is
// asynchronous per call, far slower for millions of small messages. The
// blocks of token + ":" that come before the counter never change, so they
// are hashed once; each try hashes only the last one or two blocks.
'use strict';

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const IV = new Int32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

const PROGRESS_MS = 100;

// load reads the 64-byte block of bytes at off into W[0..15] (big-endian).
function load(W, bytes, off) {
  for (let i = 0; i < 16; i++, off += 4) {
    W[i] = (bytes[off] << 24) | (bytes[off + 1] << 16) | (bytes[off + 2] << 8) | bytes[off + 3];
  }
}

// compress runs SHA-256's compression of the block in W[0..15] on state H.
function compress(H, W) {
  for (let i = 16; i < 64; i++) {
    const x = W[i - 15];
    const y = W[i - 2];
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g; g = f; f = e; e = (d + t1) | 0;
    d = c; c = b; b = a; a = (t1 + t2) | 0;
  }
  H[0] = (H[0] + a) | 0; H[1] = (H[1] + b) | 0; H[2] = (H[2] + c) | 0; H[3] = (H[3] + d) | 0;
  H[4] = (H[4] + e) | 0; H[5] = (H[5] + f) | 0; H[6] = (H[6] + g) | 0; H[7] = (H[7] + h) | 0;
}

// pad ends the message in tail after its first len bytes: 0x80, zeros and
// the whole message's length in bits (total bytes). It returns how many
// blocks tail holds, 1 or 2.
function pad(tail, len, total) {
  const blocks = len + 9 <= 64 ? 1 : 2;
  tail.fill(0, len);
  tail[len] = 0x80;
  const bits = total * 8; // tokens are far below 2^29 bytes
  const end = blocks * 64;
  tail[end - 4] = bits >>> 24;
  tail[end - 3] = bits >>> 16;
  tail[end - 2] = bits >>> 8;
  tail[end - 1] = bits;
  return blocks;
}

// increment adds one to the decimal digits tail[from..from+n) and returns
// their new count (n + 1 when they were all nines).
function increment(tail, from, n) {
  let i = from + n - 1;
  while (i >= from && tail[i] === 0x39) {
    tail[i] = 0x30;
    i--;
  }
  if (i >= from) {
    tail[i]++;
    return n;
  }
  tail[from] = 0x31;
  tail[from + n] = 0x30;
  return n + 1;
}

// solve returns the first counter, in decimal, that solves the challenge;
// report(tried) is called about every PROGRESS_MS.
function solve(token, difficulty, report) {
  const prefix = new TextEncoder().encode(token + ':');
  const head = prefix.length - (prefix.length % 64);
  const W = new Int32Array(64);
  const mid = new Int32Array(IV);
  for (let off = 0; off < head; off += 64) {
    load(W, prefix, off);
    compress(mid, W);
  }
  const tail = new Uint8Array(128);
  const from = prefix.length - head;
  tail.set(prefix.subarray(head));
  tail[from] = 0x30; // the counter 0
  let digits = 1;
  let blocks = pad(tail, from + digits, prefix.length + digits);
  const shift = 32 - difficulty;
  const H = new Int32Array(8);
  let next = performance.now() + PROGRESS_MS;
  for (let tried = 0; ; tried++) {
    H.set(mid);
    load(W, tail, 0);
    compress(H, W);
    if (blocks === 2) {
      load(W, tail, 64);
      compress(H, W);
    }
    if (H[0] >>> shift === 0) {
      return new TextDecoder().decode(tail.subarray(from, from + digits));
    }
    const n = increment(tail, from, digits);
    if (n !== digits) {
      digits = n;
      blocks = pad(tail, from + digits, prefix.length + digits);
    }
    if ((tried & 0xfff) === 0 && performance.now() >= next) {
      report(tried + 1);
      next = performance.now() + PROGRESS_MS;
    }
  }
}

self.onmessage = (event) => {
  const { token, difficulty } = event.data || {};
  if (typeof token !== 'string' || token === '' || !Number.isInteger(difficulty) || difficulty < 1 || difficulty > 32) {
    self.postMessage({ error: 'bad challenge' });
    return;
  }
  const expected = 2 ** difficulty;
  const solution = solve(token, difficulty, (tried) => self.postMessage({ progress: tried, expected }));
  self.postMessage({ solution });
};
