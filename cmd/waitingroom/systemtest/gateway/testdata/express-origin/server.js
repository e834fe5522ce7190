// An Express 4 origin with Express's default routing (case-insensitive,
// trailing slash optional), behind the gateway in
// cmd/waitingroom/gateway_routes_test.go and behind nginx and Caddy in
// forward auth (cmd/waitingroom/proxies_*_test.go). It logs every request
// it gets: method, originalUrl, whether a Waitingroom-Pass came with it
// and its value (the forward-auth tests verify it), which handler (if
// any) answered, and every header a client could forge to pass or to
// reroute (any spelling of Waitingroom-Pass, the method and path
// overrides, the decision headers) as the raw "name: value" lines it got.
// The log is read at GET /__log, straight from the test, not through the
// gateway.
//
// It listens on 127.0.0.1, on a free port it prints as {"port":N}, and
// exits when its stdin closes (the test's end).
'use strict';
const crypto = require('crypto');
const express = require('express');

const app = express();
const log = [];

// suspect: header names a client could forge to pass or to reroute, in
// any case and with - or _.
const suspect = /^(waitingroom[-_]pass|x[-_]http[-_]method([-_]override)?|x[-_]method[-_]override|x[-_]original[-_](url|uri|method)|x[-_]rewrite[-_]url|x[-_]forwarded[-_](method|uri))$/i;

function logEntry(req, handler = null) {
  const forged = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    if (suspect.test(req.rawHeaders[i])) forged.push(req.rawHeaders[i] + ': ' + req.rawHeaders[i + 1]);
  }
  const pass = req.headers['waitingroom-pass'];
  return { method: req.method, url: req.originalUrl || req.url, pass: pass !== undefined, passValue: pass ?? null, handler, suspect: forged };
}

app.use((req, res, next) => {
  if (req.path === '/__log') return res.json(log);
  const entry = logEntry(req);
  log.push(entry);
  res.locals.entry = entry;
  next();
});

const reached = (name) => (req, res) => {
  res.locals.entry.handler = name;
  res.status(name === 'orders' ? 201 : 200).json({ handler: name, pass: res.locals.entry.pass });
};

const sends = (name, type, body) => (req, res) => {
  res.locals.entry.handler = name;
  res.type(type).send(body);
};

// The README's example: WR_PROTECT="POST /api/orders=sale, GET /checkout/*=sale".
// The order says how many bytes of body it got.
app.post('/api/orders', (req, res) => {
  let bytes = 0;
  req.on('data', (chunk) => { bytes += chunk.length; });
  req.on('end', () => {
    res.locals.entry.handler = 'orders';
    res.status(201).json({ handler: 'orders', pass: res.locals.entry.pass, bytes });
  });
});
// A checkout page and what it loads under the protected prefix: its
// stylesheet, an image, a call.
app.get('/checkout/page', sends('page', 'html',
  '<!doctype html><link rel="stylesheet" href="/checkout/style.css"><img src="/checkout/logo.svg"><p>checkout</p>'));
app.get('/checkout/style.css', sends('style', 'css', 'p { color: green }'));
app.get('/checkout/logo.svg', sends('logo', 'image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg"/>'));
app.get('/checkout/api/cart', reached('cart'));
app.get('/checkout/*', reached('checkout'));
app.get('/checkout', reached('checkout'));
// Unprotected neighbours, for the tests' controls.
app.get('/api/orders-list', reached('list'));
app.get('/public', sends('public', 'html', '<!doctype html><p>public</p>'));

const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
});

// WebSocket at /checkout/ws (protected) and /public/ws: the handshake is
// logged like a request, answered with 101 (RFC 6455), and the socket
// sends one text frame naming its handler, then echoes nothing.
server.on('upgrade', (req, socket) => {
  const path = req.url.split('?')[0].toLowerCase();
  const handler = { '/checkout/ws': 'ws', '/public/ws': 'public-ws' }[path] || null;
  log.push(logEntry(req, handler));
  const key = req.headers['sec-websocket-key'];
  if (!handler || !key) {
    socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    return;
  }
  const accept = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  const text = Buffer.from('hello from ' + handler);
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
    'Sec-WebSocket-Accept: ' + accept + '\r\n\r\n');
  socket.write(Buffer.concat([Buffer.from([0x81, text.length]), text]));
  socket.on('error', () => {});
  socket.on('data', () => {});
});

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
