// An Express 4 origin for the fuzz-routes scenario (loadtest/fuzzroutes),
// with Express's default routing (case-insensitive, trailing slash
// optional, no dot-segment resolution) and the method-override middleware
// reading X-HTTP-Method-Override, a query's _method and a parsed body's
// _method, as its README shows. Each run of a protected handler is one
// JSON line appended to $ORIGIN_LOG; it listens on $ORIGIN_ADDR
// (host:port) and prints "ready" once it does.
'use strict';
const fs = require('fs');
const express = require('express');
const methodOverride = require('method-override');

const [host, port] = splitAddr(process.env.ORIGIN_ADDR);
const logFile = process.env.ORIGIN_LOG;

function splitAddr(addr) {
  const i = (addr || '').lastIndexOf(':');
  if (i < 0) throw new Error('ORIGIN_ADDR: want host:port');
  return [addr.slice(0, i), Number(addr.slice(i + 1))];
}

const app = express();
app.use(express.urlencoded({ extended: false }));
app.use(express.json());
app.use(methodOverride('X-HTTP-Method-Override'));
app.use(methodOverride('_method'));
app.use(methodOverride((req) => {
  if (req.body && typeof req.body === 'object' && '_method' in req.body) {
    const m = req.body._method;
    delete req.body._method;
    return m;
  }
}));

const protectedHandler = (name) => (req, res) => {
  const rec = { handler: name, method: req.method, sent: req.originalMethod, target: req.originalUrl,
    pass: req.get('Waitingroom-Pass') !== undefined, case: req.get('Fuzz-Case') || '' };
  fs.appendFileSync(logFile, JSON.stringify(rec) + '\n');
  res.type('text').send('protected');
};

app.get('/__ready', (req, res) => res.type('text').send('ready'));
app.get('/checkout', protectedHandler('checkout'));
app.get('/checkout/*', protectedHandler('checkout/*'));
app.post('/api/orders', protectedHandler('orders'));
app.all('*', (req, res) => res.type('text').send('open'));

app.listen(port, host, () => process.stdout.write('ready\n'));
