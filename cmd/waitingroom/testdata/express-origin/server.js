// An Express 4 origin with Express's default routing (case-insensitive,
// trailing slash optional), behind the gateway in
// cmd/waitingroom/gateway_routes_test.go. It logs every request it gets:
// method, originalUrl, whether a Waitingroom-Pass came with it, and which
// protected handler (if any) answered. The log is read at GET /__log,
// straight from the test, not through the gateway.
//
// It listens on 127.0.0.1, on a free port it prints as {"port":N}, and
// exits when its stdin closes (the test's end).
'use strict';
const express = require('express');

const app = express();
const log = [];

app.use((req, res, next) => {
  if (req.path === '/__log') return res.json(log);
  const entry = { method: req.method, url: req.originalUrl, pass: req.get('Waitingroom-Pass') !== undefined, handler: null };
  log.push(entry);
  res.locals.entry = entry;
  next();
});

const reached = (name) => (req, res) => {
  res.locals.entry.handler = name;
  res.status(name === 'orders' ? 201 : 200).json({ handler: name, pass: res.locals.entry.pass });
};

// The README's example: WR_PROTECT="POST /api/orders=sale, GET /checkout/*=sale".
app.post('/api/orders', reached('orders'));
app.get('/checkout/*', reached('checkout'));
app.get('/checkout', reached('checkout'));
// An unprotected neighbour, for the test's controls.
app.get('/api/orders-list', reached('list'));

const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
