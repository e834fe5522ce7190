// The checkout page's call for the cart (an XHR under the protected
// prefix, passed with the visit the page opened).
'use strict';
fetch('cart.json', { headers: { Accept: 'application/json' } })
  .then((r) => (r.ok ? r.json() : Promise.reject(new Error('HTTP ' + r.status))))
  .then((cart) => { document.getElementById('cart').textContent = 'Your cart: ' + cart.items + ' items, ' + cart.total; })
  .catch((e) => { document.getElementById('cart').textContent = 'The cart could not be loaded (' + e.message + ')'; });
