/**
 * The hosted checkout pages, rendered by the service: server-side HTML with one small script and one
 * stylesheet, both served by the service (no external asset, works offline). The checkout token in the path is
 * the page's only credential. Every page carries a strict Content-Security-Policy (this origin only, no inline
 * script or style) and sends no Referer, so the token does not leak to the shop the payer lands on.
 *
 * Accessibility: every input has a visible label, the methods are a radio group in a fieldset, errors and the
 * payment's progress are announced (role=alert / aria-live) and take the focus, focus is always visible, and
 * the colours keep a contrast ratio of at least 7:1 on white.
 */
import type { Catalog } from '../catalog/catalog.ts';
import type { CheckoutSessionView, PaymentLinkView } from './ports.ts';
import { formatAmount } from '../domain/money.ts';
import { effectiveStatus } from './decider.ts';

export const PAGE_ASSETS_PATH = '/checkout-assets';

export const PAGE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
  "form-action 'self'", "base-uri 'none'", "frame-ancestors 'none'",
].join('; ');

export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': PAGE_CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

/** Labels of the customer fields a session may require. */
const CUSTOMER_FIELDS: Record<string, { label: string; type: string; autocomplete: string }> = {
  firstName: { label: 'First name', type: 'text', autocomplete: 'given-name' },
  lastName: { label: 'Last name', type: 'text', autocomplete: 'family-name' },
  email: { label: 'Email', type: 'email', autocomplete: 'email' },
  phoneNumberPrefix: { label: 'Phone prefix (e.g. +56)', type: 'text', autocomplete: 'tel-country-code' },
  phoneNumber: { label: 'Phone number (digits)', type: 'text', autocomplete: 'tel-national' },
  documentType: { label: 'Document type', type: 'text', autocomplete: 'off' },
  documentNumber: { label: 'Document number', type: 'text', autocomplete: 'off' },
  address: { label: 'Street address', type: 'text', autocomplete: 'street-address' },
};

/** Labels of method fields the page knows; others show their field name. */
const METHOD_FIELDS: Record<string, { label: string; autocomplete: string; inputmode?: string }> = {
  number: { label: 'Card number', autocomplete: 'cc-number', inputmode: 'numeric' },
  holder: { label: 'Name on card', autocomplete: 'cc-name' },
  expiryMonth: { label: 'Expiry month (MM)', autocomplete: 'cc-exp-month', inputmode: 'numeric' },
  expiryYear: { label: 'Expiry year (YYYY)', autocomplete: 'cc-exp-year', inputmode: 'numeric' },
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function layout(title: string, body: string, withScript = false): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${PAGE_ASSETS_PATH}/checkout.css">
</head>
<body>
<main id="main">
${body}
</main>
${withScript ? `<script src="${PAGE_ASSETS_PATH}/checkout.js"></script>` : ''}
</body>
</html>
`;
}

/** A page that only says something: expired, finished, failed, deactivated, not found. */
export function messagePage(title: string, message: string, link?: { href: string; text: string }): string {
  return layout(title, `<h1 tabindex="-1">${escapeHtml(title)}</h1>
<p>${escapeHtml(message)}</p>
${link ? `<p><a href="${escapeHtml(link.href)}">${escapeHtml(link.text)}</a></p>` : ''}`);
}

export const expiredPage = () => messagePage('This checkout has expired', 'Ask the shop for a new payment link.');
export const deactivatedPage = () => messagePage('This payment link is deactivated', 'The link no longer accepts payments. Ask the shop for a new one.');
export const notFoundPage = () => messagePage('Checkout not found', 'This address does not lead to a checkout.');

export function finishedPage(row: CheckoutSessionView): string {
  const next = row.success_url ?? row.redirect_url;
  return messagePage('Payment complete', `Thank you: ${formatAmount(row.total_amount, row.currency)} ${row.currency} paid.`,
    next ? { href: next, text: 'Return to the shop' } : undefined);
}

export function failedPage(row: CheckoutSessionView): string {
  return messagePage('Payment failed', 'The payment did not go through. No money was taken.',
    row.failed_url ? { href: row.failed_url, text: 'Return to the shop' } : undefined);
}

/** The page of a link that opens sessions: one button, which opens a new session and goes to it. */
export function linkPage(row: PaymentLinkView): string {
  const amount = `${formatAmount(row.total_amount, row.currency)} ${row.currency}`;
  return layout(`Pay ${amount}`, `<h1>Pay ${escapeHtml(amount)}</h1>
<ul class="items">${row.items.map((item) => `<li>${escapeHtml(item.description)}: ${escapeHtml(item.totalAmount)} ${escapeHtml(row.currency)}</li>`).join('')}</ul>
<div id="link" data-token="${escapeHtml(row.checkout_token)}">
<button type="button" id="open-session">Continue to payment</button>
<p id="message" role="alert" tabindex="-1"></p>
</div>`, true);
}

/**
 * The session page: what is bought, taxes and totals, the methods with what each costs in every currency the
 * session offers (its paymentConfigs: the session's own first), the payer's required fields, and pay.
 */
export function sessionPage(row: CheckoutSessionView, catalog: Catalog, now: Date): string {
  const status = effectiveStatus(row.status, row.expires_at, now);
  if (status === 'EXPIRED') return expiredPage();
  if (status === 'FINISHED') return finishedPage(row);
  if (status === 'FAILED') return failedPage(row);
  const currency = row.currency;
  const money = (amount: string) => `${escapeHtml(formatAmount(amount, currency))} ${escapeHtml(currency)}`;
  const items = row.items.map((item) => `<tr><th scope="row">${escapeHtml(item.description)}</th><td>${money(item.preTaxAmount)}</td>
<td>${item.tax ? `${escapeHtml(item.tax.name)} (${item.tax.type === 'PERCENTAGE' ? `${escapeHtml(item.tax.value)}%` : 'fixed'}): ${money(item.tax.amount)}` : 'none'}</td>
<td>${money(item.totalAmount)}</td></tr>`).join('\n');
  // Every enabled method in every currency the session offers (its own first): the payer sees each one's total and picks one.
  const choices = row.payment_configs.flatMap((config) => config.paymentMethods.filter((method) => method.enabled)
    .map((method) => ({ config, method, id: `method-${method.type}-${config.currency}` })));
  const methods = [...new Map(choices.map(({ method }) => [method.type, method])).values()];
  const title = (type: string) => catalog.nodeType(type)?.description.title ?? type;
  const customer = (row.customer ?? {}) as Record<string, unknown>;
  const required = row.customer_requirements.map((field) => {
    const spec = CUSTOMER_FIELDS[field]!;
    const value = typeof customer[field] === 'string' ? customer[field] as string : '';
    return `<div class="field"><label for="customer-${field}">${escapeHtml(spec.label)}</label>
<input id="customer-${field}" name="${field}" type="${spec.type}" autocomplete="${spec.autocomplete}" required aria-required="true" value="${escapeHtml(value)}"></div>`;
  }).join('\n');
  const radios = choices.map(({ config, method, id }, n) => {
    const total = `${method.purchaseAmount} ${config.currency}`;
    const rate = config.currency === currency ? '' : ` (1 ${currency} = ${config.exchangeRate} ${config.currency})`;
    return `<div class="choice"><input type="radio" name="method" id="${id}" value="${method.type}" data-currency="${escapeHtml(config.currency)}" data-total="${escapeHtml(total)}"${n === 0 ? ' checked' : ''}>
<label for="${id}">${escapeHtml(title(method.type))}: ${escapeHtml(total)}${escapeHtml(rate)}</label></div>`;
  }).join('\n');
  const methodFields = methods.map((method, n) => `<fieldset class="method-fields" data-method="${method.type}"${n === 0 ? '' : ' hidden disabled'}>
<legend>${escapeHtml(title(method.type))} details</legend>
${method.requiredFields.map((field) => {
    const spec = METHOD_FIELDS[field] ?? { label: field, autocomplete: 'off' };
    const id = `field-${method.type}-${field}`;
    return `<div class="field"><label for="${id}">${escapeHtml(spec.label)}</label>
<input id="${id}" name="${escapeHtml(field)}" type="text" autocomplete="${spec.autocomplete}"${spec.inputmode ? ` inputmode="${spec.inputmode}"` : ''} required aria-required="true"></div>`;
  }).join('\n')}
${method.type === 'CARD' ? `<div class="field"><label for="field-CARD-cvv">Security code (CVV)</label>
<input id="field-CARD-cvv" name="cvv" type="password" inputmode="numeric" autocomplete="cc-csc" required aria-required="true"></div>` : ''}
</fieldset>`).join('\n');
  const processing = status === 'PROCESSING_PAYMENT';
  return layout(`Checkout: ${formatAmount(row.total_amount, currency)} ${currency}`, `<h1>Checkout</h1>
<div id="checkout" data-token="${escapeHtml(row.checkout_token)}" data-status="${status}">
<table>
<caption>Your order</caption>
<thead><tr><th scope="col">Item</th><th scope="col">Price</th><th scope="col">Tax</th><th scope="col">Total</th></tr></thead>
<tbody>
${items}
</tbody>
<tfoot>
<tr><th scope="row">Before tax</th><td colspan="3">${money(row.pre_tax_amount)}</td></tr>
<tr><th scope="row">Total</th><td colspan="3" id="total">${money(row.total_amount)}</td></tr>
</tfoot>
</table>
<form id="pay-form" novalidate${processing ? ' hidden' : ''}>
${required ? `<fieldset><legend>Your details</legend>\n${required}\n</fieldset>` : ''}
<fieldset><legend>Payment method and currency</legend>
${radios || '<p>No payment method is available for this amount.</p>'}
</fieldset>
${methodFields}
<p id="error" class="error" role="alert" tabindex="-1"></p>
<button type="submit" id="pay"${choices.length ? '' : ' disabled'}>Pay ${escapeHtml(choices[0] ? `${choices[0].method.purchaseAmount} ${choices[0].config.currency}` : `${formatAmount(row.total_amount, currency)} ${currency}`)}</button>
</form>
<p id="progress" role="status" aria-live="polite" tabindex="-1">${processing ? 'Processing your payment…' : ''}</p>
</div>`, true);
}

const STYLESHEET = `
:root { color: #1a1a1a; background: #ffffff; font: 16px/1.5 system-ui, sans-serif; }
main { max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1rem; }
caption { text-align: left; font-weight: 600; }
th, td { text-align: left; padding: .4rem; border-bottom: 1px solid #595959; }
fieldset { border: 1px solid #595959; margin: 0 0 1rem; padding: .75rem; }
.field { margin-bottom: .75rem; }
label { display: block; font-weight: 600; }
.choice label { display: inline; font-weight: 400; }
input[type=text], input[type=email], input[type=password] { font: inherit; padding: .4rem; width: 100%; box-sizing: border-box;
  border: 1px solid #333333; color: #1a1a1a; background: #ffffff; }
button { font: inherit; padding: .6rem 1.2rem; color: #ffffff; background: #0b3d91; border: 2px solid #0b3d91; cursor: pointer; }
button[disabled] { background: #595959; border-color: #595959; }
a { color: #0b3d91; }
:focus-visible, :focus { outline: 3px solid #b34700; outline-offset: 2px; }
.error { color: #8b0000; font-weight: 600; }
[hidden] { display: none !important; }
`;

/** The pages' only script: picks the method, pays, follows the payment, and leaves for the shop when done. */
const SCRIPT = `(function () {
  'use strict';
  /** How often the page asks for the payment's progress, and how long it shows the outcome before leaving. */
  var POLL_MS = 1000;
  var REDIRECT_DELAY_MS = 1500;

  function post(url, body) {
    return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body || {}) })
      .then(function (response) { return response.json().then(function (json) { return { ok: response.ok, body: json }; }); });
  }

  var link = document.getElementById('link');
  if (link) {
    var open = document.getElementById('open-session');
    open.addEventListener('click', function () {
      open.disabled = true;
      post('/pay/' + link.dataset.token + '/sessions').then(function (answer) {
        if (answer.ok) { window.location.assign(answer.body.url); return; }
        var message = document.getElementById('message');
        message.textContent = answer.body.message || 'This link cannot be used now.';
        message.focus();
        open.disabled = false;
      });
    });
    return;
  }

  var checkout = document.getElementById('checkout');
  if (!checkout) return;
  var token = checkout.dataset.token;
  var form = document.getElementById('pay-form');
  var error = document.getElementById('error');
  var progress = document.getElementById('progress');

  function show(message) { progress.textContent = message; }
  function finish(status, redirectTo) {
    form.hidden = true;
    show(status === 'FINISHED' ? 'Payment complete. Thank you!' : status === 'FAILED' ? 'Payment failed. No money was taken.' : 'This checkout has expired.');
    progress.focus();
    if (redirectTo) setTimeout(function () { window.location.assign(redirectTo); }, REDIRECT_DELAY_MS);
  }
  function poll() {
    fetch('/checkout/' + token + '/status').then(function (response) { return response.json(); }).then(function (answer) {
      if (answer.status === 'FINISHED' || answer.status === 'FAILED' || answer.status === 'EXPIRED') finish(answer.status, answer.redirectTo);
      else setTimeout(poll, POLL_MS);
    }, function () { setTimeout(poll, POLL_MS); });
  }

  /** A session opened from a link is ATTEMPT until the payer has a method: the one shown first, or the one picked. */
  function choose(method) {
    if (method) post('/checkout/' + token + '/method', { method: method });
  }
  var first = document.querySelector('input[name=method]:checked');
  if (checkout.dataset.status === 'ATTEMPT' && first) choose(first.value);

  var payButton = document.getElementById('pay');
  Array.prototype.forEach.call(document.querySelectorAll('input[name=method]'), function (radio) {
    radio.addEventListener('change', function () {
      choose(radio.value);
      payButton.textContent = 'Pay ' + radio.dataset.total;
      Array.prototype.forEach.call(document.querySelectorAll('.method-fields'), function (fieldset) {
        var chosen = fieldset.dataset.method === radio.value;
        fieldset.hidden = !chosen;
        fieldset.disabled = !chosen;
      });
    });
  });

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    error.textContent = '';
    var checked = document.querySelector('input[name=method]:checked');
    if (!checked) return;
    var empty = Array.prototype.filter.call(form.querySelectorAll('input[required]'), function (input) {
      return !input.disabled && !input.value.trim();
    });
    if (empty.length) {
      error.textContent = 'Please fill in: ' + empty.map(function (input) { return form.querySelector('label[for="' + input.id + '"]').textContent; }).join(', ');
      error.focus();
      return;
    }
    var customer = {};
    Array.prototype.forEach.call(form.querySelectorAll('input[id^="customer-"]'), function (input) {
      if (input.name === 'address') customer.address = { street: input.value.trim() };
      else customer[input.name] = input.value.trim();
    });
    var fields = {};
    Array.prototype.forEach.call(form.querySelectorAll('.method-fields[data-method="' + checked.value + '"] input'), function (input) {
      fields[input.name] = input.name === 'number' ? input.value.replace(/\\s+/g, '') : input.value.trim();
    });
    var button = document.getElementById('pay');
    button.disabled = true;
    show('Processing your payment…');
    post('/checkout/' + token + '/pay', { method: checked.value, currency: checked.dataset.currency, fields: fields, customer: customer }).then(function (answer) {
      if (!answer.ok) {
        show('');
        error.textContent = answer.body.message || 'The payment could not be started.';
        error.focus();
        button.disabled = false;
        return;
      }
      form.hidden = true;
      progress.focus();
      poll();
    });
  });

  if (checkout.dataset.status === 'PROCESSING_PAYMENT') poll();
}());
`;

export const PAGE_ASSETS: Readonly<Record<string, { contentType: string; text: string }>> = {
  'checkout.css': { contentType: 'text/css; charset=utf-8', text: STYLESHEET },
  'checkout.js': { contentType: 'text/javascript; charset=utf-8', text: SCRIPT },
};
