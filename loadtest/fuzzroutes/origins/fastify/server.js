// A Fastify origin for the fuzz-routes scenario (loadtest/fuzzroutes),
// with Fastify's default router (find-my-way: case-sensitive, a trailing
// slash significant, percent-escapes decoded once, no dot-segment
// resolution, HEAD answered by each GET route). Each run of a protected
// handler is one JSON line appended to $ORIGIN_LOG; it listens on
// $ORIGIN_ADDR (host:port) and prints "ready" once it does.
'use strict';
const fs = require('fs');
const fastify = require('fastify')({ logger: false });

const addr = process.env.ORIGIN_ADDR || '';
const i = addr.lastIndexOf(':');
if (i < 0) throw new Error('ORIGIN_ADDR: want host:port');
const logFile = process.env.ORIGIN_LOG;

const protectedHandler = (name) => async (req, reply) => {
  const rec = { handler: name, method: req.method, target: req.raw.url,
    pass: req.headers['waitingroom-pass'] !== undefined, case: req.headers['fuzz-case'] || '' };
  fs.appendFileSync(logFile, JSON.stringify(rec) + '\n');
  reply.type('text/plain').send('protected');
};

fastify.get('/__ready', async (req, reply) => reply.type('text/plain').send('ready'));
fastify.get('/checkout', protectedHandler('checkout'));
fastify.get('/checkout/*', protectedHandler('checkout/*'));
fastify.post('/api/orders', protectedHandler('orders'));
fastify.all('*', async (req, reply) => reply.type('text/plain').send('open'));

fastify.listen({ host: addr.slice(0, i), port: Number(addr.slice(i + 1)) }).then(
  () => process.stdout.write('ready\n'),
  (err) => { console.error(err); process.exit(1); });
